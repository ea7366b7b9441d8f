import { describe, expect, test, vi } from 'vitest';
import { sql } from 'kysely';
import { openStore } from '../../src/server/store/db.js';
import type { VacuumRun } from '../../src/server/store/vacuum.js';
import { executePrepared } from '../../src/server/store/prepared.js';
import { schemaChanges } from '../../src/server/store/schema/index.js';
import { ensureBootstrap } from '../../src/server/bootstrap.js';
import { createTestDatabase } from '../support/service.js';

describe.skipIf(!process.env.TEST_DATABASE_URL)('store on PostgreSQL: replicas starting at once', () => {
  test('two replicas changing the schema of and bootstrapping one empty database at the same moment apply everything once', async () => {
    const database = await createTestDatabase();
    try {
      const [a, b] = await Promise.all([openStore({ databaseUrl: database.url }), openStore({ databaseUrl: database.url })]);
      const [ra, rb] = await Promise.all([ensureBootstrap(a.db), ensureBootstrap(b.db)]);
      const applied = await sql<{ name: string }>`SELECT name FROM schema_changes ORDER BY name`.execute(a.db);
      expect(applied.rows.map((r) => r.name)).toEqual(Object.keys(schemaChanges));
      const orgs = await sql<{ n: number }>`SELECT count(*)::int AS n FROM orgs`.execute(a.db);
      expect(orgs.rows[0].n).toBe(1);
      // Exactly one of the two created the admin key and got its secret.
      expect([ra.secret, rb.secret].filter(Boolean)).toHaveLength(1);
      await Promise.all([a.close(), b.close()]);
    } finally {
      await database.drop();
    }
  });
});

describe.skipIf(!process.env.TEST_DATABASE_URL)('store on PostgreSQL: prepared statements', () => {
  // One connection, so the statements this session prepared are the ones pg_prepared_statements lists.
  const openOneConnection = async (url: string) => {
    const pool = process.env.AGENTCTL_DB_POOL;
    process.env.AGENTCTL_DB_POOL = '1';
    try {
      return await openStore({ databaseUrl: url });
    } finally {
      if (pool === undefined) delete process.env.AGENTCTL_DB_POOL;
      else process.env.AGENTCTL_DB_POOL = pool;
    }
  };
  const preparedOn = async (db: Awaited<ReturnType<typeof openStore>>['db']) =>
    (await sql<{ name: string; statement: string }>`SELECT name, statement FROM pg_prepared_statements ORDER BY name`.execute(db)).rows;

  test("a statement run through executePrepared is parsed once per connection under a name, with each call's parameters; others stay unnamed", async () => {
    const database = await createTestDatabase();
    const store = await openOneConnection(database.url);
    try {
      const plusOne = (n: number) => executePrepared(store.db, sql<{ n: number }>`SELECT ${n}::int + 1 AS n`);
      expect((await plusOne(1)).rows).toEqual([{ n: 2 }]);
      expect((await plusOne(41)).rows).toEqual([{ n: 42 }]);
      await sql`SELECT ${1}::int AS unnamed`.execute(store.db);
      expect(await preparedOn(store.db)).toEqual([{ name: expect.stringMatching(/^agentctl_prepared_\d+$/), statement: 'SELECT $1::int + 1 AS n' }]);
    } finally {
      await store.close();
      await database.drop();
    }
  });

  test('a named statement whose table another session changed under it runs again under a new name', async () => {
    const database = await createTestDatabase();
    const store = await openOneConnection(database.url);
    const other = await openStore({ databaseUrl: database.url });
    try {
      await sql`CREATE TABLE prepared_probe (a int)`.execute(store.db);
      await sql`INSERT INTO prepared_probe VALUES (1)`.execute(store.db);
      const all = () => executePrepared(store.db, sql<Record<string, number>>`SELECT * FROM prepared_probe WHERE a = ${1}`);
      expect((await all()).rows).toEqual([{ a: 1 }]);
      // Another replica's schema change: the prepared plan's columns no longer fit ("cached plan must not change result type").
      await sql`ALTER TABLE prepared_probe ADD COLUMN b int DEFAULT 2`.execute(other.db);
      expect((await all()).rows).toEqual([{ a: 1, b: 2 }]);
      expect((await all()).rows).toEqual([{ a: 1, b: 2 }]);
      const names = (await preparedOn(store.db)).filter((p) => p.statement.includes('prepared_probe')).map((p) => p.name);
      expect(names).toHaveLength(2);
    } finally {
      await Promise.all([store.close(), other.close()]);
      await database.drop();
    }
  });
});

describe('store on PGlite', () => {
  test('a data directory keeps its rows across a restart, and schema changes are not applied twice', async () => {
    const { mkdtempSync, rmSync } = await import('node:fs');
    const { tmpdir } = await import('node:os');
    const dir = mkdtempSync(`${tmpdir()}/agentctl-store-`);
    try {
      const first = await openStore({ dataDir: dir });
      // A new directory is created with every schema change in a child process (db.ts: initPgliteDir), then opened.
      const applied = await sql<{ name: string }>`SELECT name FROM schema_changes ORDER BY name`.execute(first.db);
      expect(applied.rows.map((r) => r.name)).toEqual(Object.keys(schemaChanges));
      const created = await ensureBootstrap(first.db);
      expect(created.secret).toMatch(/^agk_/);
      await first.close();
      const second = await openStore({ dataDir: dir });
      const again = await ensureBootstrap(second.db);
      expect(again.secret).toBeUndefined();
      expect(again.orgId).toBe(created.orgId);
      await second.close();
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  test('rows written across several WAL segments, each made without zero-filling it, are all there after a restart', async () => {
    const { mkdtempSync, rmSync } = await import('node:fs');
    const { tmpdir } = await import('node:os');
    const dir = mkdtempSync(`${tmpdir()}/agentctl-store-`);
    try {
      const first = await openStore({ dataDir: dir });
      const setting = await sql<{ wal_init_zero: string }>`SHOW wal_init_zero`.execute(first.db);
      expect(setting.rows[0].wal_init_zero).toBe('off');
      const start = await sql<{ lsn: string }>`SELECT pg_current_wal_lsn()::text AS lsn`.execute(first.db);
      // 8 KB rows stored as they are (no compression): about 2.5 segments of 16 MiB of WAL.
      await sql`CREATE TABLE wal_probe (n int PRIMARY KEY, pad text NOT NULL)`.execute(first.db);
      await sql`ALTER TABLE wal_probe ALTER pad SET STORAGE EXTERNAL`.execute(first.db);
      for (let batch = 0; batch < 5; batch++)
        await sql`INSERT INTO wal_probe SELECT g, repeat(md5(g::text), 256) FROM generate_series(${batch * 1000 + 1}::int, ${(batch + 1) * 1000}::int) g`.execute(
          first.db,
        );
      const written = await sql<{ bytes: string }>`SELECT pg_wal_lsn_diff(pg_current_wal_lsn(), ${start.rows[0].lsn}::pg_lsn)::bigint::text AS bytes`.execute(
        first.db,
      );
      expect(Number(written.rows[0].bytes)).toBeGreaterThan(2 * 16 * 1024 * 1024);
      await first.close();
      const second = await openStore({ dataDir: dir });
      const rows = await sql<{ n: number; bytes: string }>`SELECT count(*)::int AS n, sum(length(pad))::text AS bytes FROM wal_probe`.execute(second.db);
      expect(rows.rows[0]).toEqual({ n: 5000, bytes: String(5000 * 32 * 256) });
      await second.close();
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  test("the embedded autovacuum's first pass vacuums every table of ours; after it, a table past autovacuum's thresholds is vacuumed and analyzed, one under them is left alone", async () => {
    const store = await openStore({ vacuumIntervalMs: 50 });
    try {
      const passes: VacuumRun[][] = [];
      store.vacuum!.onPass = (runs) => passes.push(runs);
      // PGlite forgets its counters on every open: the first pass cannot tell where rows died before.
      await vi.waitFor(() => expect(passes.length).toBeGreaterThan(0), { timeout: 30_000, interval: 20 });
      const first = new Map(passes[0].map((run) => [run.table, run.vacuum]));
      for (const table of ['public.tasks', 'public.deliveries', 'public.events', 'public.schema_changes']) expect(first.get(table)).toBe(true);
      // PGlite says autovacuum is on, and runs none: this is what does.
      expect((await sql<{ autovacuum: string }>`SHOW autovacuum`.execute(store.db)).rows[0].autovacuum).toBe('on');
      await sql`CREATE TABLE churned (id int PRIMARY KEY, n int NOT NULL)`.execute(store.db);
      await sql`CREATE TABLE quiet (id int PRIMARY KEY, n int NOT NULL)`.execute(store.db);
      // In one transaction, so no pass comes between the writes (each pass takes the one connection).
      await store.db.transaction().execute(async (trx) => {
        // 1,000 rows updated twice: 2,000 dead rows (threshold 50 + 0.2 x rows), 3,000 changes since an analyze (50 + 0.1 x rows).
        await sql`INSERT INTO churned SELECT g, 0 FROM generate_series(1, 1000) g`.execute(trx);
        await sql`UPDATE churned SET n = n + 1`.execute(trx);
        await sql`UPDATE churned SET n = n + 1`.execute(trx);
        // 10 rows updated once: 10 dead, 20 changes; under both thresholds.
        await sql`INSERT INTO quiet SELECT g, 0 FROM generate_series(1, 10) g`.execute(trx);
        await sql`UPDATE quiet SET n = n + 1`.execute(trx);
      });
      const stats = async (table: string) =>
        (
          await sql<{ dead: number; vacuumed: boolean; analyzed: boolean }>`
            SELECT n_dead_tup::int AS dead, last_vacuum IS NOT NULL AS vacuumed, last_analyze IS NOT NULL AS analyzed
            FROM pg_stat_user_tables WHERE relname = ${table}`.execute(store.db)
        ).rows[0];
      await vi.waitFor(async () => expect(await stats('churned')).toEqual({ dead: 0, vacuumed: true, analyzed: true }), { timeout: 30_000, interval: 50 });
      expect(passes.flat().filter((run) => run.table === 'public.churned')).toEqual([
        { table: 'public.churned', vacuum: true, analyze: true, ms: expect.any(Number) },
      ]);
      // The planner now knows the table's size.
      const counted = await sql<{ reltuples: number }>`SELECT reltuples::int AS reltuples FROM pg_class WHERE relname = 'churned'`.execute(store.db);
      expect(counted.rows[0].reltuples).toBe(1000);
      expect(await stats('quiet')).toEqual({ dead: 10, vacuumed: false, analyzed: false });
      expect(passes.flat().some((run) => run.table === 'public.quiet')).toBe(false);
      // What GET /metrics reports: every pass, every table vacuumed or analyzed.
      expect(store.vacuum!.tally).toEqual({
        passes: passes.length,
        vacuumed: passes.flat().filter((run) => run.vacuum).length,
        analyzed: passes.flat().filter((run) => run.analyze).length,
      });
      expect(store.vacuum!.tally.vacuumed).toBeGreaterThanOrEqual(1);
    } finally {
      await store.close();
    }
  });

  test('the first new database made with an empty cache is kept as the template; the next ones, in a directory or in memory, are copies of it with every schema change and no rows', async () => {
    const { existsSync, mkdtempSync, readdirSync, rmSync } = await import('node:fs');
    const { tmpdir } = await import('node:os');
    const dir = mkdtempSync(`${tmpdir()}/agentctl-store-template-`);
    vi.stubEnv('AGENTCTL_CACHE_DIR', `${dir}/cache`);
    try {
      const made = await openStore({ dataDir: `${dir}/made` });
      await ensureBootstrap(made.db);
      await made.close();
      expect(readdirSync(`${dir}/cache/pglite`)).toEqual([expect.stringMatching(/^[0-9a-f]{32}\.tar\.gz$/)]);
      for (const dataDir of [`${dir}/copied`, undefined]) {
        const copy = await openStore({ dataDir });
        const applied = await sql<{ name: string }>`SELECT name FROM schema_changes ORDER BY name`.execute(copy.db);
        expect(applied.rows.map((r) => r.name)).toEqual(Object.keys(schemaChanges));
        const orgs = await sql<{ n: number }>`SELECT count(*)::int AS n FROM orgs`.execute(copy.db);
        expect(orgs.rows[0].n).toBe(0);
        expect((await ensureBootstrap(copy.db)).secret).toMatch(/^agk_/);
        await copy.close();
      }
      expect(existsSync(`${dir}/copied/PG_VERSION`)).toBe(true);
    } finally {
      vi.unstubAllEnvs();
      rmSync(dir, { recursive: true, force: true });
    }
  });

  test('a cache directory that cannot be written costs only time: the database is made from scratch and opens', async () => {
    const { mkdtempSync, rmSync, writeFileSync } = await import('node:fs');
    const { tmpdir } = await import('node:os');
    const dir = mkdtempSync(`${tmpdir()}/agentctl-store-cache-`);
    writeFileSync(`${dir}/a-file`, '');
    vi.stubEnv('AGENTCTL_CACHE_DIR', `${dir}/a-file/cache`);
    try {
      const store = await openStore({});
      const applied = await sql<{ name: string }>`SELECT name FROM schema_changes ORDER BY name`.execute(store.db);
      expect(applied.rows.map((r) => r.name)).toEqual(Object.keys(schemaChanges));
      await store.close();
    } finally {
      vi.unstubAllEnvs();
      rmSync(dir, { recursive: true, force: true });
    }
  });

  test('a data directory that cannot be created fails naming it, with the cause', async () => {
    const { mkdtempSync, rmSync, writeFileSync } = await import('node:fs');
    const { tmpdir } = await import('node:os');
    const dir = mkdtempSync(`${tmpdir()}/agentctl-store-`);
    try {
      writeFileSync(`${dir}/a-file`, '');
      await expect(openStore({ dataDir: `${dir}/a-file/pglite` })).rejects.toThrow(
        new RegExp(
          `^Creating the PGlite database in ${dir}/a-file/pglite from the template ${process.env.AGENTCTL_CACHE_DIR}/pglite/[0-9a-f]{32}\\.tar\\.gz failed \\(exit 1\\): .*ENOTDIR`,
          's',
        ),
      );
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
