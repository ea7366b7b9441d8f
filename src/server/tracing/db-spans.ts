/**
 * The database's part of a trace (README "Traces"): one `db transaction` span per transaction that a
 * traced request or delivery runs (its statements counted in `agentctl.db.statements`, their
 * operations in order in `db.query.summary`), and one `db <OPERATION>` span per statement run
 * outside a transaction. A span per statement cost a quarter of the server's event throughput (a
 * turn ran dozens); a span per transaction keeps where the time went at a few spans a turn.
 *
 * A Kysely driver wrapped around the engine's: it sees BEGIN, each statement and COMMIT/ROLLBACK of
 * a connection, which Kysely's `log` hook cannot tie together. Outside a traced span (the
 * dispatcher's polling, the span store's own writes) it only passes calls through.
 */
import { context, SpanKind, SpanStatusCode, trace, type Context } from '@opentelemetry/api';
import type { CompiledQuery, DatabaseConnection, Driver, QueryResult, TransactionSettings } from 'kysely';
import { activeTracing } from './context.js';

interface OpenTransaction {
  parent: Context;
  start: number;
  statements: number;
  operations: string[];
  error?: string;
}

/** Operations named in a transaction's summary at most (a long one ends with `...`). */
const SUMMARY_OPERATIONS = 24;

const nowMs = () => performance.timeOrigin + performance.now();

/** The statement's operation: SELECT, INSERT, ...; a data-modifying WITH is named by its first CTE's statement. */
export function operationOf(text: string): string {
  const word = /^\s*(\w+)/.exec(text)?.[1]?.toUpperCase();
  if (word !== 'WITH') return word ?? 'QUERY';
  return /\bAS\s*(?:NOT\s+)?(?:MATERIALIZED\s*)?\(\s*(\w+)/i.exec(text)?.[1]?.toUpperCase() ?? 'WITH';
}

/** The statement's text for `db.query.text`: an EXECUTE of a prepared statement (PGlite, store/prepared.ts)
 * carries its parameters as literals, the caller's data, which a span does not keep: its name only. */
export function queryTextOf(text: string): string {
  const execute = /^\s*EXECUTE\s+(\w+)/i.exec(text);
  return execute ? `EXECUTE ${execute[1]}` : text.slice(0, 300);
}

/** The active context when it is under a span of a traced server that is still open, else undefined. */
function tracedContext(): Context | undefined {
  const ctx = context.active();
  if (!activeTracing(ctx) || !trace.getSpan(ctx)?.isRecording()) return undefined;
  return ctx;
}

/**
 * Records the span of what ended now, after the caller has its result: a statement's span is made
 * in the event loop's next check phase, so the code waiting on the statement (a streamed delta on
 * its way to the task's readers) runs first. Same span: its times are taken here.
 */
function endSpan(parent: Context, name: string, start: number, attributes: Record<string, string | number>, error: string | undefined): void {
  const tracing = activeTracing(parent);
  if (!tracing) return;
  const end = nowMs();
  setImmediate(() => {
    const span = tracing.tracer.startSpan(name, { kind: SpanKind.CLIENT, startTime: start, attributes }, parent);
    if (error !== undefined) span.setStatus({ code: SpanStatusCode.ERROR, message: error.slice(0, 500) });
    span.end(end);
  });
}

const messageOf = (error: unknown) => (error as Error)?.message ?? String(error);

export class TracedDriver implements Driver {
  readonly #wrapped = new WeakMap<DatabaseConnection, DatabaseConnection>();
  readonly #inner = new WeakMap<DatabaseConnection, DatabaseConnection>();
  /** The traced transaction open on a connection (keyed by the engine's connection). */
  readonly #open = new WeakMap<DatabaseConnection, OpenTransaction>();
  savepoint?: Driver['savepoint'];
  rollbackToSavepoint?: Driver['rollbackToSavepoint'];
  releaseSavepoint?: Driver['releaseSavepoint'];

  constructor(private readonly driver: Driver) {
    // Only what the engine's driver supports (Kysely asks for savepoints by their presence).
    if (driver.savepoint) this.savepoint = (c, name, compile) => driver.savepoint!(this.#unwrap(c), name, compile);
    if (driver.rollbackToSavepoint) this.rollbackToSavepoint = (c, name, compile) => driver.rollbackToSavepoint!(this.#unwrap(c), name, compile);
    if (driver.releaseSavepoint) this.releaseSavepoint = (c, name, compile) => driver.releaseSavepoint!(this.#unwrap(c), name, compile);
  }

  init(...args: Parameters<Driver['init']>) {
    return this.driver.init(...args);
  }

  async acquireConnection(...args: Parameters<Driver['acquireConnection']>): Promise<DatabaseConnection> {
    const connection = await this.driver.acquireConnection(...args);
    let wrapped = this.#wrapped.get(connection);
    if (!wrapped) {
      const open = this.#open;
      wrapped = {
        async executeQuery<R>(query: CompiledQuery): Promise<QueryResult<R>> {
          const transaction = open.get(connection);
          if (transaction) {
            transaction.statements++;
            if (transaction.operations.length <= SUMMARY_OPERATIONS) transaction.operations.push(operationOf(query.sql));
            try {
              return await connection.executeQuery<R>(query);
            } catch (error) {
              transaction.error ??= messageOf(error);
              throw error;
            }
          }
          const parent = tracedContext();
          if (!parent) return connection.executeQuery<R>(query);
          const start = nowMs();
          const operation = operationOf(query.sql);
          const attributes = { 'db.system.name': 'postgresql', 'db.operation.name': operation, 'db.query.text': queryTextOf(query.sql) };
          try {
            const result = await connection.executeQuery<R>(query);
            endSpan(parent, `db ${operation}`, start, attributes, undefined);
            return result;
          } catch (error) {
            endSpan(parent, `db ${operation}`, start, attributes, messageOf(error));
            throw error;
          }
        },
        streamQuery: (query, chunkSize) => connection.streamQuery(query, chunkSize),
      };
      this.#wrapped.set(connection, wrapped);
      this.#inner.set(wrapped, connection);
    }
    return wrapped;
  }

  #unwrap(connection: DatabaseConnection): DatabaseConnection {
    return this.#inner.get(connection) ?? connection;
  }

  async beginTransaction(connection: DatabaseConnection, settings: TransactionSettings): Promise<void> {
    const inner = this.#unwrap(connection);
    const parent = tracedContext();
    const start = nowMs();
    await this.driver.beginTransaction(inner, settings);
    if (parent) this.#open.set(inner, { parent, start, statements: 0, operations: [] });
  }

  async commitTransaction(connection: DatabaseConnection): Promise<void> {
    const inner = this.#unwrap(connection);
    try {
      await this.driver.commitTransaction(inner);
      this.#finish(inner, undefined);
    } catch (error) {
      this.#finish(inner, `commit failed: ${messageOf(error)}`);
      throw error;
    }
  }

  async rollbackTransaction(connection: DatabaseConnection): Promise<void> {
    const inner = this.#unwrap(connection);
    try {
      await this.driver.rollbackTransaction(inner);
    } finally {
      const error = this.#open.get(inner)?.error;
      this.#finish(inner, error ? `rolled back: ${error}` : 'rolled back');
    }
  }

  #finish(inner: DatabaseConnection, error: string | undefined): void {
    const transaction = this.#open.get(inner);
    if (!transaction) return;
    this.#open.delete(inner);
    const { operations, statements } = transaction;
    const summary = operations.slice(0, SUMMARY_OPERATIONS).join(' ') + (statements > SUMMARY_OPERATIONS ? ' ...' : '');
    endSpan(
      transaction.parent,
      'db transaction',
      transaction.start,
      { 'db.system.name': 'postgresql', 'db.query.summary': summary, 'agentctl.db.statements': statements },
      error,
    );
  }

  releaseConnection(connection: DatabaseConnection, ...rest: Parameters<Driver['releaseConnection']> extends [unknown, ...infer R] ? R : never) {
    return this.driver.releaseConnection(this.#unwrap(connection), ...rest);
  }

  destroy(...args: Parameters<Driver['destroy']>) {
    return this.driver.destroy(...args);
  }
}
