import { Kysely, PostgresDialect } from 'kysely';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, test, vi } from 'vitest';
import { type Database, openStore } from '../../src/server/store/db.js';
import { notifyAfterCommit, notifyOnCommit, PostCommitNotifier } from '../../src/server/store/notifier.js';
import { createTestDatabase } from '../support/service.js';

const CHANNEL = 'agentctl_notifier_test';

describe.skipIf(!process.env.TEST_DATABASE_URL)('the NOTIFYs sent after a write commits (PostgreSQL)', () => {
  let database: { url: string; drop: () => Promise<void> };
  let pool: pg.Pool;
  let listener: pg.Client;
  let statements: string[];
  let db: Kysely<Database>;
  const received: string[] = [];
  const until = async (what: string, check: () => boolean) => {
    const deadline = Date.now() + 10_000;
    while (!check()) {
      if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}; received ${JSON.stringify(received)}`);
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
  };

  beforeAll(async () => {
    database = await createTestDatabase(process.env.TEST_DATABASE_URL, 'agentctl_notifier');
    pool = new pg.Pool({ connectionString: database.url, max: 2 });
    // As the store's pool (db.ts): a client still ending when the database is dropped must not crash the run.
    pool.on('error', () => {});
    statements = [];
    db = new Kysely<Database>({ dialect: new PostgresDialect({ pool }), log: (event) => void statements.push(event.query.sql) });
    listener = new pg.Client({ connectionString: database.url });
    await listener.connect();
    listener.on('notification', (n) => n.channel === CHANNEL && received.push(n.payload ?? ''));
    await listener.query(`LISTEN ${CHANNEL}`);
  });

  afterAll(async () => {
    await listener?.end();
    await db?.destroy();
    await database?.drop();
  });

  test('the first goes at once; those made while it is on its way go together in one statement, each delivered once', async () => {
    received.length = 0;
    statements.length = 0;
    const notifier = new PostCommitNotifier(db);
    notifier.notify(CHANNEL, 'task_a 1');
    for (let i = 2; i <= 50; i++) notifier.notify(CHANNEL, `task_a ${i}`);
    notifier.notify(CHANNEL, 'task_a 50'); // the same payload again: sent once
    await notifier.flushed();
    await until('the 50 notifications', () => received.length >= 50);
    expect(received).toEqual(Array.from({ length: 50 }, (_, i) => `task_a ${i + 1}`));
    expect(statements).toHaveLength(2);
  });

  test('a batch that fails is logged and dropped; the next notifications go', async () => {
    received.length = 0;
    const logged: string[] = [];
    const notifier = new PostCommitNotifier(db, (line) => logged.push(line));
    notifier.notify(CHANNEL, 'x'.repeat(9000)); // past PostgreSQL's 8000-byte payload limit
    await notifier.flushed();
    expect(logged).toEqual([expect.stringMatching(/^notifier: 1 notification\(s\) not sent: payload string too long/)]);
    notifier.notify(CHANNEL, 'task_b 1');
    await notifier.flushed();
    await until('the next notification', () => received.length >= 1);
    expect(received).toEqual(['task_b 1']);
  });

  test("a transaction's NOTIFY goes once it committed, none when it rolled back, and the store's close waits for it", async () => {
    received.length = 0;
    const store = await openStore({ databaseUrl: database.url });
    const sent = vi.spyOn(PostCommitNotifier.prototype, 'notify');
    let handedInside = -1;
    await store.db.transaction().execute(async (trx) => {
      await notifyOnCommit(trx, CHANNEL, 'committed 1');
      handedInside = sent.mock.calls.length;
    });
    expect(handedInside).toBe(0);
    expect(sent.mock.calls).toEqual([[CHANNEL, 'committed 1']]);
    await expect(
      store.db.transaction().execute(async (trx) => {
        await notifyOnCommit(trx, CHANNEL, 'rolled back 1');
        throw new Error('undone');
      }),
    ).rejects.toThrow('undone');
    await notifyOnCommit(store.db, CHANNEL, 'alone 1'); // outside a transaction: a statement of its own
    await store.close();
    expect(sent.mock.calls).toEqual([[CHANNEL, 'committed 1']]);
    sent.mockRestore();
    await until('the notifications', () => received.length >= 2);
    // The notifier's and the statement's, in either order.
    expect([...received].sort()).toEqual(['alone 1', 'committed 1']);
  });

  test("the store's notifier tells the store's log of a batch it could not send", async () => {
    const logged: string[] = [];
    const store = await openStore({ databaseUrl: database.url, log: (line) => logged.push(line) });
    notifyAfterCommit(store.db, CHANNEL, 'x'.repeat(9000));
    await store.close();
    expect(logged).toEqual([expect.stringMatching(/^notifier: 1 notification\(s\) not sent: payload string too long/)]);
  });
});
