import pg from 'pg';
import { describe, expect, test } from 'vitest';
import { startServer } from '../../src/server/main.js';
import { until } from '../support/e2e.js';
import { freePort } from '../support/ports.js';
import { createTestDatabase } from '../support/service.js';

/** The status of a GET, or the system error code of a request that reached no server. */
const statusOrErrorCode = (url: string) =>
  fetch(url).then(
    (res) => res.status,
    (error: Error & { cause?: { code?: string } }) => error.cause?.code ?? error.message,
  );

// PostgreSQL only: another session's lock holds the dispatcher's first statement, so the start-up
// window lasts as long as the test wants.
describe.skipIf(!process.env.TEST_DATABASE_URL)('server start (postgres)', () => {
  test('the port opens only once delivery runs: no request meets a server without its dispatcher', async () => {
    const database = await createTestDatabase();
    const blocker = new pg.Client({ connectionString: database.url });
    let starting: ReturnType<typeof startServer> | undefined;
    try {
      // The schema first, so that the start below waits on the lock and nothing else.
      await (await startServer({ port: 0, runtime: 'none', databaseUrl: database.url })).close();
      await blocker.connect();
      await blocker.query('BEGIN');
      await blocker.query('LOCK TABLE deliveries IN ACCESS EXCLUSIVE MODE');
      const port = await freePort();
      starting = startServer({ host: '127.0.0.1', port, runtime: 'none', databaseUrl: database.url });
      await until(
        'the dispatcher waiting on the lock',
        async () => {
          // The blocker's transaction sees pg_stat_activity as a snapshot taken once, unless cleared.
          await blocker.query('SELECT pg_stat_clear_snapshot()');
          const { rows } = await blocker.query(
            "SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock' AND query ILIKE '%deliveries%'",
          );
          return rows[0].n as number;
        },
        (n) => n > 0,
      );
      expect(await statusOrErrorCode(`http://127.0.0.1:${port}/healthz`)).toBe('ECONNREFUSED');
      await blocker.query('COMMIT');
      await starting;
      expect(await statusOrErrorCode(`http://127.0.0.1:${port}/healthz`)).toBe(200);
    } finally {
      await blocker.end().catch(() => {});
      await starting?.then((server) => server.close()).catch(() => {});
      await database.drop();
    }
  });
});
