/**
 * The hot statements (the one-statement writes of domain/conversation.ts, key and grant lookups, the
 * dispatcher's claims) are parsed and planned once per session instead of on every call.
 *
 * PGlite parses and plans every statement anew (its query() sends an unnamed statement each time),
 * and for those writes planning costs more than running: the event statement took 2.4 ms of CPU as
 * a plain query, 0.8 ms as a prepared one. On PGlite they are PREPAREd once per database (PostgreSQL
 * keeps the plan) and EXECUTEd with their parameters written as literals (EXECUTE takes no bind
 * parameters).
 *
 * PostgreSQL does the same per connection: as unnamed statements the delta statement took 1.0 ms
 * of the server's time (parse and analysis 0.2, planning 0.2-0.5, execution 0.3), as a named one
 * 0.25 ms once the server settled on its generic plan. There the text is recorded here and the
 * pool's clients (db.ts) send it as a named statement, which pg parses once per connection.
 */
import { type Compilable, type CompiledQuery, type QueryResult, type RawBuilder, sql } from 'kysely';
import type { Db } from './db.js';

/** The names statements are prepared under: `${PREPARED_PREFIX}<n>`. */
const PREPARED_PREFIX = 'agentctl_prepared_';

/** An EXECUTE that `executePrepared` wrote: one statement, its parameters literals (see db.ts, which runs it as a simple query). */
export const isPreparedExecute = (text: string) => text.startsWith(`EXECUTE ${PREPARED_PREFIX}`);

/**
 * PostgreSQL: the statement texts `executePrepared` ran, each with the name the pool's clients send
 * it under (db.ts). Bounded: a text made per caller (a key's grant ids spelled out) must not grow
 * every connection's plan cache without end; past the bound a new text runs unnamed, as before.
 */
export class StatementNames {
  static readonly MAX = 500;
  readonly #names = new Map<string, string>();
  #made = 0;

  add(text: string): void {
    if (this.#names.size < StatementNames.MAX && !this.#names.has(text)) this.#names.set(text, this.#next());
  }

  nameOf(text: string): string | undefined {
    return this.#names.get(text);
  }

  /**
   * A new name for `text`: a connection whose statement under the old name no longer fits the
   * schema (another replica changed a table, "cached plan must not change result type") parses it again.
   */
  renew(text: string): void {
    if (this.#names.has(text)) this.#names.set(text, this.#next());
  }

  #next(): string {
    return `${PREPARED_PREFIX}${++this.#made}`;
  }
}

/** PostgreSQL handles: the names their pool's clients send recorded statements under. */
const named = new WeakMap<Db, StatementNames>();

/** Records the statements `db` runs through `executePrepared` in `names` (PostgreSQL: a pool of sessions). */
export function nameStatementsOf(db: Db, names: StatementNames): void {
  named.set(db, names);
}

/** Per database handle that prepares: statement text -> the name it was prepared under. */
const prepared = new WeakMap<Db, Map<string, Promise<string>>>();

/** Marks the handle's statements run through `executePrepared` as prepared ones (PGlite: one session). */
export function prepareStatementsOf(db: Db): void {
  prepared.set(db, new Map());
}

/**
 * Runs `query` (raw SQL or a query builder's) on `db`: prepared once and then EXECUTEd where the
 * handle prepares (PGlite), as a named statement where it names them (PostgreSQL), else as it is.
 */
export async function executePrepared<R>(db: Db, query: RawBuilder<R> | Compilable<R>): Promise<QueryResult<R>> {
  return runCompiled(db, compile(db, query));
}

const compile = <R>(db: Db, query: RawBuilder<R> | Compilable<R>): CompiledQuery<R> => ('isRawBuilder' in query ? query.compile(db) : query.compile());

async function runCompiled<R>(db: Db, compiled: CompiledQuery<R>): Promise<QueryResult<R>> {
  const names = named.get(db);
  if (names) {
    names.add(compiled.sql);
    return db.executeQuery(compiled);
  }
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

/**
 * The hot statements' texts by shape, so a call builds and compiles nothing: building the Kysely
 * template and compiling it to text cost as much CPU as the rest of an event's write in the server.
 *
 * A shape names a statement's form: the statement, and each choice that changes its text (a claim
 * at insert or none, a caller who may run every agent or some). Its values are the statement's
 * parameters in the order the text numbers them. The first call of a shape builds and compiles it,
 * and its parameters must be `values`; later calls send the recorded text with theirs. Checked
 * (under vitest, or AGENTCTL_CHECK_SHAPES=1), every call builds and compiles too, and a text or
 * parameters other than the recorded text and `values` throw: a text that depends on a value not in
 * the shape's key is caught there.
 */
export class StatementShapes {
  /** Shapes are made by code, a few per statement; the bound only keeps a wrong key from growing without end. */
  static readonly MAX = 64;
  readonly #texts = new Map<string, CompiledQuery<unknown>>();
  readonly #check: boolean;

  constructor(check = process.env.VITEST !== undefined || process.env.AGENTCTL_CHECK_SHAPES === '1') {
    this.#check = check;
  }

  get size(): number {
    return this.#texts.size;
  }

  /** Runs the statement of `shape` with `values` on `db` as `executePrepared` does; `build` makes it from them when it must be compiled. */
  async execute<R>(
    db: Db,
    shape: string,
    values: readonly unknown[],
    build: (values: readonly unknown[]) => RawBuilder<R> | Compilable<R>,
  ): Promise<QueryResult<R>> {
    const recorded = this.#texts.get(shape) as CompiledQuery<R> | undefined;
    if (recorded && !this.#check) return runCompiled(db, { ...recorded, parameters: values });
    const compiled = compile(db, build(values));
    if (recorded && compiled.sql !== recorded.sql)
      throw new Error(`Statement shape ${shape}: its text changed with its values (a choice missing from its key)`);
    if (!sameValues(compiled.parameters, values))
      throw new Error(`Statement shape ${shape}: its ${compiled.parameters.length} parameters are not the ${values.length} values given, in order`);
    if (!recorded) {
      // Oldest first: the hot shapes are made again at once.
      if (this.#texts.size >= StatementShapes.MAX) this.#texts.delete(this.#texts.keys().next().value!);
      this.#texts.set(shape, compiled);
    }
    return runCompiled(db, compiled);
  }
}

/** The process's statement shapes (one text per shape serves every database handle). */
export const statementShapes = new StatementShapes();

function sameValues(a: readonly unknown[], b: readonly unknown[]): boolean {
  return a.length === b.length && a.every((value, i) => sameValue(value, b[i]));
}

function sameValue(a: unknown, b: unknown): boolean {
  if (Object.is(a, b)) return true;
  if (a instanceof Date && b instanceof Date) return a.getTime() === b.getTime();
  if (Array.isArray(a) && Array.isArray(b)) return sameValues(a, b);
  return false;
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
