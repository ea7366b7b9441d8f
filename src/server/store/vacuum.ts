// Autovacuum for the embedded database. PGlite runs PostgreSQL in single-user mode: `SHOW autovacuum`
// says on, but there is no launcher and no worker, so nothing ever vacuums or analyzes. Every update
// of a delivery (pending -> in_flight -> done) left its old row and a new entry in each index; the
// partial indexes the claims read (open deliveries) grew with every delivery ever made instead of
// with the open ones (11,000 deliveries: 426 KB against 147 KB vacuumed), the planners kept the
// statistics of an empty database, and the transaction ids were never frozen (a PostgreSQL that
// nears wraparound stops taking writes). This does what autovacuum would, with its own settings
// and thresholds read from the database: every naptime, VACUUM and/or ANALYZE each table past them,
// one statement at a time (requests run between them; PGlite runs one statement at once anyway).
import { sql } from 'kysely';
import type { Db } from './db.js';
import { executePrepared } from './prepared.js';

/** A table past a threshold and what it was given. */
export interface VacuumRun {
  table: string;
  vacuum: boolean;
  analyze: boolean;
  ms: number;
}

export interface EmbeddedVacuumOptions {
  /** Between passes; default PostgreSQL's autovacuum_naptime (60 s). */
  intervalMs?: number;
  log?: (line: string) => void;
}

/**
 * The tables autovacuum would take now, by its rules (PostgreSQL's documentation, "The Autovacuum
 * Daemon"): dead rows past threshold + scale factor x rows; rows inserted since the last vacuum past
 * the insert threshold (so insert-only tables are frozen and their visibility map set); the oldest
 * unfrozen transaction id past autovacuum_freeze_max_age; rows changed since the last analyze past
 * the analyze threshold. Catalogs included (their age holds back the database's); temporary tables
 * and TOAST (vacuumed with their table) not.
 */
const due = (everyUserTable: boolean) => sql<{ schema: string; name: string; vacuum: boolean; analyze: boolean }>`
  WITH s AS (
    SELECT current_setting('autovacuum_vacuum_threshold')::float8 AS vt, current_setting('autovacuum_vacuum_scale_factor')::float8 AS vs,
      current_setting('autovacuum_vacuum_insert_threshold')::float8 AS it, current_setting('autovacuum_vacuum_insert_scale_factor')::float8 AS "is",
      current_setting('autovacuum_analyze_threshold')::float8 AS at, current_setting('autovacuum_analyze_scale_factor')::float8 AS "as",
      current_setting('autovacuum_freeze_max_age')::float8 AS freeze
  ), t AS (
    -- The three counters alone (pg_stat_all_tables reads some twenty per table: 9-15 ms on PGlite).
    SELECT n.nspname AS schema, c.relname AS name, greatest(c.reltuples, 0) AS rows, age(c.relfrozenxid) AS xid_age,
      ${sql.lit(everyUserTable)} AND n.nspname NOT IN ('pg_catalog', 'information_schema') AS forgotten,
      pg_stat_get_dead_tuples(c.oid) AS n_dead_tup, pg_stat_get_ins_since_vacuum(c.oid) AS n_ins_since_vacuum,
      pg_stat_get_mod_since_analyze(c.oid) AS n_mod_since_analyze
    FROM pg_class c
    JOIN pg_namespace n ON n.oid = c.relnamespace
    WHERE c.relkind IN ('r', 'm') AND c.relpersistence = 'p' AND n.nspname <> 'pg_toast'
  )
  SELECT t.schema, t.name,
    (t.forgotten OR t.n_dead_tup > s.vt + s.vs * t.rows OR t.n_ins_since_vacuum > s.it + s."is" * t.rows OR t.xid_age > s.freeze) AS vacuum,
    t.n_mod_since_analyze > s.at + s."as" * t.rows AS analyze
  FROM t, s
  WHERE t.forgotten OR t.n_dead_tup > s.vt + s.vs * t.rows OR t.n_ins_since_vacuum > s.it + s."is" * t.rows OR t.xid_age > s.freeze
    OR t.n_mod_since_analyze > s.at + s."as" * t.rows
  ORDER BY t.schema, t.name`;

/**
 * One pass: VACUUM and/or ANALYZE each table past autovacuum's thresholds now. `everyUserTable`:
 * VACUUM each of ours too. PGlite forgets the counters on every open, even after a clean close (a
 * table's 1,000 dead rows read 0 once reopened), so a server's first pass cannot tell which tables
 * rows died in before; a VACUUM of a table with none costs about a millisecond (the visibility map).
 */
export async function vacuumDueTables(db: Db, everyUserTable = false): Promise<VacuumRun[]> {
  const runs: VacuumRun[] = [];
  for (const table of (await executePrepared(db, due(everyUserTable))).rows) {
    const name = sql.id(table.schema, table.name);
    const started = performance.now();
    await (table.vacuum ? (table.analyze ? sql`VACUUM (ANALYZE) ${name}` : sql`VACUUM ${name}`) : sql`ANALYZE ${name}`).execute(db);
    runs.push({ table: `${table.schema}.${table.name}`, vacuum: table.vacuum, analyze: table.analyze, ms: performance.now() - started });
  }
  return runs;
}

/** Passes of vacuumDueTables every interval until stopped. */
export class EmbeddedVacuum {
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<void> | undefined;
  private closed = false;
  /** Each pass's runs, for whoever watches (tests, a log). */
  onPass?: (runs: VacuumRun[]) => void;
  /** Since the store opened: passes made, tables vacuumed and analyzed (GET /metrics). */
  readonly tally = { passes: 0, vacuumed: 0, analyzed: 0 };

  constructor(
    private readonly db: Db,
    private readonly options: EmbeddedVacuumOptions = {},
  ) {}

  async start(): Promise<void> {
    // setTimeout takes at most 2^31 - 1 ms (a longer one fires at once).
    const intervalMs = Math.min(this.options.intervalMs ?? (await naptimeMs(this.db)), 2 ** 31 - 1);
    const next = () => {
      if (this.closed) return;
      this.timer = setTimeout(() => {
        this.running = this.pass().finally(() => {
          this.running = undefined;
          next();
        });
      }, intervalMs);
      // A server's timer: the process may end while it waits.
      this.timer.unref();
    };
    next();
  }

  private async pass(): Promise<void> {
    try {
      const runs = await vacuumDueTables(this.db, this.tally.passes === 0);
      this.tally.passes++;
      for (const run of runs) {
        if (run.vacuum) this.tally.vacuumed++;
        if (run.analyze) this.tally.analyzed++;
      }
      this.onPass?.(runs);
    } catch (error) {
      if (!this.closed) this.options.log?.(`embedded vacuum: ${(error as Error).message}`);
    }
  }

  /** Stops the passes; waits for one under way. */
  async close(): Promise<void> {
    this.closed = true;
    clearTimeout(this.timer);
    await this.running;
  }
}

async function naptimeMs(db: Db): Promise<number> {
  // pg_settings gives it in its unit, seconds (current_setting says '1min').
  const { rows } = await sql<{ s: number }>`SELECT setting::int AS s FROM pg_settings WHERE name = 'autovacuum_naptime'`.execute(db);
  return (rows[0]?.s ?? 60) * 1000;
}
