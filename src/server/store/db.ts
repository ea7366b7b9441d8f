import { Kysely, PostgresDialect, sql, type ColumnType, type Generated } from 'kysely';
import { migrations } from './migrations.js';

type Timestamptz = ColumnType<Date, Date | string | undefined, Date | string>;
type Json = ColumnType<unknown, string, string>;

export interface OrgsTable { id: string; name: string; created_at: Timestamptz }
export interface NamespacesTable { id: string; org_id: string; name: string; slug: string; created_at: Timestamptz; updated_at: Timestamptz }
export interface ApiKeysTable {
  id: string; org_id: string; name: string; description: Generated<string>; key_hash: string; key_prefix: string;
  created_by_key_id: string | null; expires_at: Date | null; revoked_at: Date | null; last_used_at: Date | null;
  created_at: Timestamptz; updated_at: Timestamptz;
}
export interface GroupsTable { id: string; org_id: string; name: string; description: Generated<string>; created_at: Timestamptz; updated_at: Timestamptz }
export interface GroupMembersTable { group_id: string; key_id: string; added_at: Timestamptz }
export interface GrantsTable {
  id: Generated<string>; principal_type: 'key' | 'group'; principal_id: string; resource_type: string; resource_id: string;
  role: string; legacy_role: string | null; source: 'scope' | 'owner'; created_at: Timestamptz;
}
export interface ProjectsTable { id: string; namespace_id: string; name: string; description: Generated<string>; created_by_key_id: string | null; created_at: Timestamptz; updated_at: Timestamptz }
export interface AgentsTable {
  id: string; namespace_id: string; name: string; description: Generated<string>; status: Generated<'ACTIVE' | 'DELETED'>;
  status_reason: string | null; agent_input_type: 'text' | 'json' | null; registered_at: Date | null; registration_metadata: Json | null;
  created_by_key_id: string | null; created_at: Timestamptz; updated_at: Timestamptz;
  /** 006: the number of the agent's newest version (0 before its first deploy). */
  last_version_number: Generated<number>;
}
export interface BranchesTable {
  id: string; agent_id: string; git_branch: string; git_branch_normalized: string; replicas: Generated<number>;
  current_version_id: string | null; event_sequence: Generated<number>; retired_at: Date | null; retired_reason: string | null;
  created_at: Timestamptz; updated_at: Timestamptz;
}
export interface VersionsTable {
  id: string; branch_id: string; agent_id: string; git_hash: string; git_branch: string; git_message: string;
  author_name: string; author_email: string; image_url: string; status: string; deployed_at: Timestamptz;
  sdk_type: string; acp_type: string; is_dirty: boolean; replicas: number; desired_replicas: number; are_tasks_sticky: boolean;
  description: string; rollback_count: Generated<number>; last_rollback_at: Date | null; rolled_back_at: Date | null;
  retired_at: Date | null; image_expires_at: Date | null; failure_reason: string | null; failure_diagnostics: Json | null;
  source_filesystem_id: string | null; created_at: Timestamptz; updated_at: Timestamptz;
  /** 006: 1, 2, 3, ... per agent in deploy order (`v3`). */
  number: number;
}
export interface VersionEventsTable { id: string; branch_id: string; version_id: string | null; sequence: number; type: string; data: Json; created_at: Timestamptz }
export interface EnvironmentsTable { id: string; agent_id: string; name: string; description: string; is_prod: boolean; branch_rules: Json; created_at: Timestamptz; updated_at: Timestamptz }
export interface FilesystemsTable { id: string; namespace_id: string; project_id: string | null; created_at: Timestamptz }
export interface TasksTable {
  id: string; agent_id: string; branch_id: string; namespace_id: string; filesystem_id: string; project_id: string | null;
  name: string | null; status: string; status_reason: string | null; params: Json | null; task_metadata: Json | null;
  created_version_id: string; current_version_id: string; created_by_key_id: string | null; created_at: Timestamptz; updated_at: Timestamptz;
}
export interface StatesTable { id: string; task_id: string; agent_id: string; state: Json; version: Generated<number>; created_at: Timestamptz; updated_at: Timestamptz }

export interface Database {
  orgs: OrgsTable; namespaces: NamespacesTable; api_keys: ApiKeysTable; groups: GroupsTable; group_members: GroupMembersTable;
  grants: GrantsTable; projects: ProjectsTable; agents: AgentsTable; branches: BranchesTable; versions: VersionsTable;
  version_events: VersionEventsTable; environments: EnvironmentsTable; filesystems: FilesystemsTable; tasks: TasksTable; states: StatesTable;
}

export type Db = Kysely<Database>;
export type Engine = 'pglite' | 'postgres';

export interface Store {
  db: Db;
  engine: Engine;
  /** The PostgreSQL URL (postgres engine only): used for LISTEN connections. */
  databaseUrl?: string;
  /** The connection pool (postgres engine only), for the pool-use metric. */
  pool?: { totalCount: number; idleCount: number; waitingCount: number };
  close(): Promise<void>;
}

export interface StoreOptions {
  /** PostgreSQL URL; when absent the embedded PGlite engine is used. */
  databaseUrl?: string;
  /** PGlite data directory; `memory://` (or undefined) keeps everything in memory. */
  dataDir?: string;
}

/** Opens the database named by the options and brings its schema up to date. */
export async function openStore(options: StoreOptions): Promise<Store> {
  const store = options.databaseUrl ? await openPostgres(options.databaseUrl) : await openPglite(options.dataDir);
  try {
    await migrate(store.db);
  } catch (error) {
    await store.close();
    throw error;
  }
  return store;
}

async function openPostgres(databaseUrl: string): Promise<Store> {
  const pg = await import('pg');
  const Pool = pg.default.Pool;
  const pool = new Pool({ connectionString: databaseUrl, max: Number(process.env.AGENTCTL_DB_POOL ?? 10) });
  // Without a listener an idle client's network error would crash the process.
  pool.on('error', () => {});
  const db = new Kysely<Database>({ dialect: new PostgresDialect({ pool }) });
  return { db, engine: 'postgres', databaseUrl, pool, close: () => db.destroy() };
}

async function openPglite(dataDir: string | undefined): Promise<Store> {
  const [{ PGlite }, { PGliteDialect }] = await Promise.all([import('@electric-sql/pglite'), import('kysely-pglite-dialect')]);
  const pglite = dataDir && dataDir !== 'memory://' ? new PGlite(dataDir) : new PGlite();
  await pglite.waitReady;
  const db = new Kysely<Database>({ dialect: new PGliteDialect(pglite) });
  return { db, engine: 'pglite', close: () => db.destroy() };
}

/** An arbitrary constant: the advisory-lock key every replica takes while migrating. */
const MIGRATION_LOCK_KEY = 7420_0001;

/**
 * Applies pending migrations in one transaction under an advisory lock, so replicas that start at
 * the same moment apply each migration exactly once.
 */
export async function migrate(db: Db): Promise<void> {
  await db.transaction().execute(async (trx) => {
    await sql`SELECT pg_advisory_xact_lock(${MIGRATION_LOCK_KEY})`.execute(trx);
    await sql`CREATE TABLE IF NOT EXISTS schema_migrations (name text PRIMARY KEY, applied_at timestamptz NOT NULL DEFAULT now())`.execute(trx);
    const applied = await sql<{ name: string }>`SELECT name FROM schema_migrations`.execute(trx);
    const done = new Set(applied.rows.map((r) => r.name));
    for (const migration of migrations) {
      if (done.has(migration.name)) continue;
      // One statement at a time: PGlite's extended protocol takes a single command per query.
      for (const statement of migration.sql.split(/;\s*\n/).map((s) => s.trim()).filter(Boolean)) {
        await sql.raw(statement).execute(trx);
      }
      await sql`INSERT INTO schema_migrations (name) VALUES (${migration.name})`.execute(trx);
    }
  });
}

/** Empties every table (tests share one database per file and reset between tests). */
export async function truncateAll(db: Db): Promise<void> {
  await sql`TRUNCATE states, tasks, filesystems, environments, version_events, branches, versions, agents, projects, grants, group_members, groups, api_keys, namespaces, orgs RESTART IDENTITY CASCADE`.execute(db);
}
