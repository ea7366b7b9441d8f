/**
 * PGlite parses and plans every statement anew (its query() sends an unnamed statement each time),
 * and for the one-statement writes of domain/conversation.ts planning costs more than running: the
 * event statement took 2.4 ms of CPU as a plain query, 0.8 ms as a prepared one. On PGlite those
 * statements are PREPAREd once per database (PostgreSQL keeps the plan) and EXECUTEd with their
 * parameters written as literals (EXECUTE takes no bind parameters). On PostgreSQL they run as they
 * are (a pool of connections, each its own session; the network round trip dominates there).
 */
import { type Compilable, type QueryResult, type RawBuilder, sql } from 'kysely';
import type { Db } from './db.js';

/** The names statements are prepared under: `${PREPARED_PREFIX}<n>`. */
const PREPARED_PREFIX = 'agentctl_prepared_';

/** An EXECUTE that `executePrepared` wrote: one statement, its parameters literals (see db.ts, which runs it as a simple query). */
export const isPreparedExecute = (text: string) => text.startsWith(`EXECUTE ${PREPARED_PREFIX}`);

/** Per database handle that prepares: statement text -> the name it was prepared under. */
const prepared = new WeakMap<Db, Map<string, Promise<string>>>();

/** Marks the handle's statements run through `executePrepared` as prepared ones (PGlite: one session). */
export function prepareStatementsOf(db: Db): void {
  prepared.set(db, new Map());
}

/** Runs `query` (raw SQL or a query builder's) on `db`: prepared once and then EXECUTEd where the handle prepares, else as it is. */
export async function executePrepared<R>(db: Db, query: RawBuilder<R> | Compilable<R>): Promise<QueryResult<R>> {
  const compiled = 'isRawBuilder' in query ? query.compile(db) : query.compile();
  const statements = prepared.get(db);
  if (!statements) return db.executeQuery(compiled);
  const { sql: text, parameters } = compiled;
  let name = statements.get(text);
  if (!name) {
    const chosen = `${PREPARED_PREFIX}${statements.size + 1}`;
    name = sql
      .raw(`PREPARE ${chosen} AS ${text}`)
      .execute(db)
      .then(() => chosen);
    statements.set(text, name);
    // A PREPARE that failed is tried again by the next call.
    name.catch(() => statements.delete(text));
  }
  const args = parameters.map(literal).join(', ');
  return sql.raw<R>(`EXECUTE ${await name}${args ? `(${args})` : ''}`).execute(db);
}

/** A parameter as a SQL literal (standard_conforming_strings, PostgreSQL's default: only ' is escaped). */
function literal(value: unknown): string {
  if (value === null || value === undefined) return 'NULL';
  if (value instanceof Date) return quote(value.toISOString());
  if (Array.isArray(value)) return quote(`{${value.map((v) => (v === null ? 'NULL' : `"${String(v).replace(/[\\"]/g, '\\$&')}"`)).join(',')}}`);
  if (typeof value === 'object') return quote(JSON.stringify(value));
  return quote(String(value));
}

const quote = (text: string) => `'${text.replace(/'/g, "''")}'`;
