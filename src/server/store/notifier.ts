/**
 * NOTIFYs of the one-statement writes (an event, a message, a delta), sent after their commit instead
 * of inside it.
 *
 * On PostgreSQL a transaction that NOTIFYs takes one lock for the whole database at commit and holds
 * it through its WAL flush, so notifying commits go one at a time and lose group commit: 8 writers of
 * one-row INSERTs committed 2,000-3,000 rows/s, the same INSERT with a pg_notify 550-790/s (0.26 of
 * it), and a lone writer's commit took 0.4-0.5 ms longer under load. Sent here, after the write's own
 * commit, from one statement per batch (what came while the previous one was on its way), the
 * writers' commits take no such lock.
 *
 * The receivers lose nothing by it: this process's stream hubs and dispatchers have the write already
 * (`committed`, `deliveryCommitted`), and a notification that never comes (this process died between
 * the commit and the NOTIFY, as a LISTEN connection that reconnects misses some) is made up by the
 * hubs' and dispatchers' periodic polls: it delays, never loses.
 *
 * On PGlite nothing is sent: only this process can open its database, and it was told in process.
 *
 * A transaction's NOTIFYs (`notifyOnCommit`) wait for its commit the same way on PostgreSQL
 * (NotifyOnCommitDriver): sent by the notifier once it committed, dropped when it rolled back. On
 * PGlite they stay in the transaction: its stream hub learns of transactional writes only by them.
 */
import { type DatabaseConnection, type Driver, type Kysely, sql } from 'kysely';
import type { Database, Db } from './db.js';

export class PostCommitNotifier {
  /** Waiting to go, deduplicated (a NOTIFY of the same payload twice in one transaction is sent once anyway). */
  #pending = new Map<string, [channel: string, payload: string]>();
  #sending: Promise<void> | undefined;

  constructor(
    private readonly db: Db,
    private readonly log: (line: string) => void = () => {},
  ) {}

  notify(channel: string, payload: string): void {
    this.#pending.set(`${channel}\0${payload}`, [channel, payload]);
    this.#sending ??= this.#send().finally(() => (this.#sending = undefined));
  }

  /** Resolves when everything notified so far went out (or failed). */
  async flushed(): Promise<void> {
    while (this.#sending) await this.#sending;
  }

  async #send(): Promise<void> {
    while (this.#pending.size) {
      const batch = [...this.#pending.values()];
      this.#pending.clear();
      try {
        await sql`SELECT pg_notify(n.channel, n.payload) FROM unnest(${batch.map(([channel]) => channel)}::text[], ${batch.map(([, payload]) => payload)}::text[]) AS n(channel, payload)`.execute(
          this.db,
        );
      } catch (error) {
        // The polls make up for it (above).
        this.log(`notifier: ${batch.length} notification(s) not sent: ${(error as Error).message}`);
      }
    }
  }
}

const notifiers = new WeakMap<Db, PostCommitNotifier>();

/** Sends the NOTIFYs `notifyAfterCommit` is given for `db` through `notifier` (PostgreSQL). */
export function notifyThrough(db: Db, notifier: PostCommitNotifier): void {
  notifiers.set(db, notifier);
}

/** NOTIFYs `channel` with `payload` once the caller's committed write is done; nothing on PGlite. */
export function notifyAfterCommit(db: Db, channel: string, payload: string): void {
  notifiers.get(db)?.notify(channel, payload);
}

/** The NOTIFYs of each open transaction of a NotifyOnCommitDriver, by its connection. */
const pendingOf = new WeakMap<DatabaseConnection, [channel: string, payload: string][]>();

/**
 * NOTIFYs `channel` with `payload` when the caller's transaction commits: on PostgreSQL by the
 * notifier after the commit (nothing if it rolls back), elsewhere (PGlite, or outside a transaction)
 * as a statement in it.
 */
export async function notifyOnCommit(trx: Kysely<Database>, channel: string, payload: string): Promise<void> {
  const deferred = await trx.getExecutor().provideConnection(async (connection) => {
    const pending = pendingOf.get(connection);
    pending?.push([channel, payload]);
    return pending !== undefined;
  });
  if (!deferred) await sql`SELECT pg_notify(${channel}, ${payload})`.execute(trx);
}

/** A driver whose transactions' `notifyOnCommit`s go to `notifier` once they committed (PostgreSQL). */
export class NotifyOnCommitDriver implements Driver {
  savepoint?: Driver['savepoint'];
  rollbackToSavepoint?: Driver['rollbackToSavepoint'];
  releaseSavepoint?: Driver['releaseSavepoint'];

  constructor(
    private readonly driver: Driver,
    private readonly notifier: () => PostCommitNotifier,
  ) {
    // Only what the engine's driver supports (Kysely asks for savepoints by their presence). A
    // savepoint rolled back keeps its NOTIFYs: a notification too many only makes a reader look.
    if (driver.savepoint) this.savepoint = driver.savepoint.bind(driver);
    if (driver.rollbackToSavepoint) this.rollbackToSavepoint = driver.rollbackToSavepoint.bind(driver);
    if (driver.releaseSavepoint) this.releaseSavepoint = driver.releaseSavepoint.bind(driver);
  }

  init(...args: Parameters<Driver['init']>) {
    return this.driver.init(...args);
  }

  acquireConnection(...args: Parameters<Driver['acquireConnection']>) {
    return this.driver.acquireConnection(...args);
  }

  async beginTransaction(...args: Parameters<Driver['beginTransaction']>) {
    await this.driver.beginTransaction(...args);
    pendingOf.set(args[0], []);
  }

  async commitTransaction(connection: DatabaseConnection) {
    const pending = pendingOf.get(connection) ?? [];
    pendingOf.delete(connection);
    await this.driver.commitTransaction(connection);
    for (const [channel, payload] of pending) this.notifier().notify(channel, payload);
  }

  async rollbackTransaction(connection: DatabaseConnection) {
    pendingOf.delete(connection);
    await this.driver.rollbackTransaction(connection);
  }

  async releaseConnection(connection: DatabaseConnection) {
    pendingOf.delete(connection);
    await this.driver.releaseConnection(connection);
  }

  destroy() {
    return this.driver.destroy();
  }
}
