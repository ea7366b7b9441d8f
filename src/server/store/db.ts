import { existsSync } from 'node:fs';
import path from 'node:path';
import {
  Kysely,
  PostgresAdapter,
  PostgresDialect,
  sql,
  type ColumnType,
  type CompiledQuery,
  type DatabaseConnection,
  type Dialect,
  type Driver,
  type Generated,
  type TransactionSettings,
  type QueryResult,
} from 'kysely';
import { Migrator, type Migration } from 'kysely/migration';
import { TracedDriver } from '../tracing/db-spans.js';
import type { PGlite } from '@electric-sql/pglite';
import type { AgentStatus, TaskStatus, VersionStatus } from '../../contract/lifecycle.js';
import { schemaChanges } from './schema/index.js';
import { SCRIPT_MARK } from './schema/script.js';
import type { DeliveryStatus } from '../../contract/conversation.js';
import type { DeliveryKind, DoubleTextingPolicy } from '../../contract/enums.js';
import { discardTemplate, readTemplate, saveTemplate, templateFile } from './pglite-template.js';
import { EmbeddedVacuum } from './vacuum.js';
import type { Client as PgClient } from 'pg';
import { NotifyOnCommitDriver, notifyThrough, PostCommitNotifier } from './notifier.js';
import { isPreparedExecute, nameStatementsOf, prepareStatementsOf, StatementNames } from './prepared.js';

type Timestamptz = ColumnType<Date, Date | string | undefined, Date | string>;
type Json = ColumnType<unknown, string, string>;

export interface OrgsTable {
  id: string;
  name: string;
  created_at: Timestamptz;
}
export interface NamespacesTable {
  id: string;
  org_id: string;
  name: string;
  slug: string;
  created_at: Timestamptz;
  updated_at: Timestamptz;
  /** 008: the key that created it (null for the bootstrap namespace). */
  created_by_key_id: Generated<string | null>;
}
export interface ApiKeysTable {
  id: string;
  org_id: string;
  name: string;
  description: Generated<string>;
  key_hash: string;
  key_prefix: string;
  created_by_key_id: string | null;
  expires_at: Date | null;
  revoked_at: Date | null;
  last_used_at: Date | null;
  created_at: Timestamptz;
  updated_at: Timestamptz;
  /** Set on a runtime key: the one agent it may act for (README "Delivery to agents, in short"). */
  runtime_agent_id: Generated<string | null>;
}
/** 015: a web console session, tied to the key that opened it. */
export interface ConsoleSessionsTable {
  id: string;
  key_id: string;
  token_hash: string;
  user_agent: Generated<string>;
  created_at: Timestamptz;
  expires_at: Date;
  ended_at: Date | null;
}
/** 015: a one-time sign-in link's token (`agentctl open`). */
export interface ConsoleSignInTokensTable {
  token_hash: string;
  key_id: string;
  created_at: Timestamptz;
  expires_at: Date;
  used_at: Date | null;
}
export interface GroupsTable {
  id: string;
  org_id: string;
  name: string;
  description: Generated<string>;
  created_at: Timestamptz;
  updated_at: Timestamptz;
  /** 008: the key that created it. */
  created_by_key_id: Generated<string | null>;
}
export interface GroupMembersTable {
  group_id: string;
  key_id: string;
  added_at: Timestamptz;
}
export interface GrantsTable {
  id: Generated<string>;
  principal_type: 'key' | 'group';
  principal_id: string;
  resource_type: string;
  resource_id: string;
  role: string;
  legacy_role: string | null;
  source: 'scope' | 'owner';
  created_at: Timestamptz;
}
export interface ProjectsTable {
  id: string;
  namespace_id: string;
  name: string;
  description: Generated<string>;
  created_by_key_id: string | null;
  created_at: Timestamptz;
  updated_at: Timestamptz;
}
export interface AgentsTable {
  id: string;
  namespace_id: string;
  name: string;
  description: Generated<string>;
  status: Generated<AgentStatus>;
  status_reason: string | null;
  agent_input_type: 'text' | 'json' | null;
  registered_at: Date | null;
  registration_metadata: Json | null;
  created_by_key_id: string | null;
  created_at: Timestamptz;
  updated_at: Timestamptz;
  /** 006: the number of the agent's newest version (0 before its first deploy). */
  last_version_number: Generated<number>;
}
export interface BranchesTable {
  id: string;
  agent_id: string;
  git_branch: string;
  git_branch_normalized: string;
  replicas: Generated<number>;
  current_version_id: string | null;
  event_sequence: Generated<number>;
  retired_at: Date | null;
  retired_reason: string | null;
  created_at: Timestamptz;
  updated_at: Timestamptz;
}
export interface VersionsTable {
  id: string;
  branch_id: string;
  agent_id: string;
  git_hash: string;
  git_branch: string;
  git_message: string;
  author_name: string;
  author_email: string;
  image_url: string;
  status: VersionStatus;
  deployed_at: Timestamptz;
  sdk_type: string;
  acp_type: string;
  is_dirty: boolean;
  replicas: number;
  desired_replicas: number;
  are_tasks_sticky: boolean;
  description: string;
  rollback_count: Generated<number>;
  last_rollback_at: Date | null;
  rolled_back_at: Date | null;
  retired_at: Date | null;
  image_expires_at: Date | null;
  failure_reason: string | null;
  failure_diagnostics: Json | null;
  source_filesystem_id: string | null;
  created_at: Timestamptz;
  updated_at: Timestamptz;
  /** Signs deliveries to the version's agents; created on first use, never in a Version response. */
  signing_secret: Generated<string | null>;
  /** 006: 1, 2, 3, ... per agent in deploy order (`v3`). */
  number: number;
  /** 008: `{requests, limits}` of cpu and memory, or null. */
  resources: ColumnType<unknown, string | null | undefined, string | null> | null;
  /** 010: the agent's double-texting policy (agentctl.json `double_texting`). */
  double_texting: Generated<DoubleTextingPolicy>;
  /** 017: the handlers the agent declared when it registered (`["onCreate","onEvent"]`); null: not declared. */
  handlers: Json | null;
}
export interface VersionEventsTable {
  id: string;
  branch_id: string;
  version_id: string | null;
  sequence: number;
  type: string;
  data: Json;
  created_at: Timestamptz;
}
export interface EnvironmentsTable {
  id: string;
  agent_id: string;
  name: string;
  description: string;
  is_prod: boolean;
  branch_rules: Json;
  created_at: Timestamptz;
  updated_at: Timestamptz;
}
export interface FilesystemsTable {
  id: string;
  namespace_id: string;
  project_id: string | null;
  created_at: Timestamptz;
  archive_checksum: Generated<string | null>;
  size_bytes: ColumnType<string | number, number | undefined, number>;
  files_count: Generated<number>;
  archive_bytes: ColumnType<string | number, number | undefined, number>;
  blob_key: Generated<string | null>;
  manifest_key: Generated<string | null>;
  created_by_key_id: Generated<string | null>;
  updated_at: Generated<Date>;
}
export interface TasksTable {
  id: string;
  agent_id: string;
  branch_id: string;
  namespace_id: string;
  filesystem_id: string;
  project_id: string | null;
  name: string | null;
  status: TaskStatus;
  status_reason: string | null;
  params: Json | null;
  task_metadata: Json | null;
  created_version_id: string;
  current_version_id: string;
  created_by_key_id: string | null;
  created_at: Timestamptz;
  updated_at: Timestamptz;
  last_sequence_id: Generated<number>;
  /** The namespace's org (schema change 005), filled in by a trigger: task names are unique per org. */
  org_id: Generated<string>;
  /** GenAI token counts its agent's spans reported, summed (schema change 014). */
  input_tokens: Generated<string | number>;
  output_tokens: Generated<string | number>;
  /** Schema change 017: the task a shadow task rehearses, and its rehearsal (null on ordinary tasks). */
  shadow_of: string | null;
  rehearsal_id: string | null;
  /** Why the task's last onMigrate failed (`{ message, from_version_id, to_version_id, at }`); null when it did not. */
  migration_error: Json | null;
  /** Schema change 033: the first sequence a rehearsal may start from (history below it is pruned). */
  history_from_sequence: Generated<number>;
  /** Schema change 027: when the task last moved to another version (a trigger notes it); null: never. */
  moved_at: Generated<Date | null>;
  /** Schema change 046: the task's onMigrate hook not written as a delivery yet (pending while its batch is listed). */
  migrate_hook_id: Generated<string | null>;
  migrate_hook_from: Generated<string | null>;
  migrate_hook_batch: Generated<string | null>;
}
export interface TaskSystemFoldersTable {
  task_id: string;
  type: string;
  filesystem_id: string;
}
export interface StatesTable {
  id: string;
  task_id: string;
  agent_id: string;
  state: Json;
  version: Generated<number>;
  created_at: Timestamptz;
  updated_at: Timestamptz;
  /** Schema change 017: the task's version when the state was last written (a trigger fills it in). */
  written_by_version_id: string | null;
  /** Schema change 025: the task's last sequence number when the state was last written (the same trigger fills it in). */
  written_at_sequence: Generated<number | null>;
}

/** Schema change 025: a state as it stood before the first write at a later sequence of its task. */
export interface StateHistoryTable {
  task_id: string;
  agent_id: string;
  sequence_id: number;
  state: Json;
  /** Schema change 027: when the value was written and by which version (null: kept before 027). */
  written_at: Timestamptz | null;
  written_by_version_id: string | null;
  /** Schema change 041: the value a write after a move replaced at the same sequence (false: the last value written at it). */
  before_move: Generated<boolean>;
}

/** Schema change 026: a task's filesystem archive as it stood before it was replaced (no blob_key: no files then). */
export interface FilesystemHistoryTable {
  filesystem_id: string;
  task_id: string;
  /** The task's last sequence number when this archive stopped being current. */
  replaced_at_sequence: number;
  archive_checksum: string | null;
  size_bytes: ColumnType<string | number, number, number>;
  files_count: number;
  archive_bytes: ColumnType<string | number, number, number>;
  blob_key: string | null;
  manifest_key: string | null;
}

export interface EventsTable {
  id: string;
  task_id: string;
  agent_id: string;
  sequence_id: number;
  content: Json;
  created_at: Timestamptz;
}
export interface MessagesTable {
  id: string;
  task_id: string;
  author: string;
  content: Json;
  streaming_status: string | null;
  streaming_error: string | null;
  sequence_id: number;
  updated_sequence_id: number;
  created_at: Timestamptz;
  updated_at: Timestamptz;
}
export interface TrackersTable {
  id: string;
  task_id: string;
  agent_id: string;
  status: Generated<string>;
  status_message: string | null;
  progress: number | null;
  last_processed_event_id: string | null;
  created_at: Timestamptz;
  updated_at: Timestamptz;
}
export interface TaskStreamTable {
  task_id: string;
  sequence_id: number;
  kind: string;
  record: Json;
  created_at: Timestamptz;
}
export interface IdempotencyRecordsTable {
  key_id: string;
  route: string;
  idempotency_key: string;
  request_hash: string;
  status: number | null;
  response: string | null;
  created_at: Timestamptz;
}
export interface RegistrationTokensTable {
  token_hash: string;
  version_id: string;
  reusable: boolean;
  expires_at: Timestamptz;
  used_at: Date | null;
  created_by_key_id: string | null;
  created_at: Timestamptz;
}
export interface VersionReplicasTable {
  version_id: string;
  replica_key: string;
  acp_url: string;
  runtime_key_id: string | null;
  registered_at: Timestamptz;
  last_seen_at: Timestamptz;
  live: boolean;
}
export interface DeliveriesTable {
  id: Generated<string>;
  task_id: string;
  version_id: string | null;
  method: string;
  event_id: string | null;
  payload: Json;
  status: Generated<DeliveryStatus>;
  attempts: Generated<number>;
  next_attempt_at: Timestamptz;
  failing_since: Date | null;
  claimed_by: string | null;
  claimed_until: Date | null;
  last_error: string | null;
  created_at: Timestamptz;
  updated_at: Timestamptz;
  /** While leased: the replica (acp_url) that acknowledged it, and the lease length each renewal grants. */
  leased_to: Generated<string | null>;
  lease_ms: Generated<number | null>;
  /** Schema change 017: claimed highest first; rehearsal deliveries are -1, live work 0. */
  priority: Generated<number>;
  /** 010: `turn`, or a control delivery (DELIVERY_KINDS). */
  kind: Generated<DeliveryKind>;
  /** The W3C trace context of the request that enqueued it (schema change 014). */
  traceparent: Generated<string | null>;
  tracestate: Generated<string | null>;
}

/** The in-server span store (schema change 014): bounded by count and age, oldest out first. */
export interface TraceSpansTable {
  id: Generated<string>;
  org_id: string;
  trace_id: string;
  span_id: string;
  parent_span_id: string | null;
  task_id: string | null;
  name: string;
  kind: string;
  service: string;
  start_us: string | number;
  end_us: string | number;
  status: string;
  status_message: string | null;
  attributes: Json;
  recorded_at: Timestamptz;
}

export interface SchedulesTable {
  id: string;
  org_id: string;
  namespace_id: string;
  agent_id: string;
  name: string | null;
  cron: string;
  timezone: string;
  branch: string | null;
  params: Json | null;
  task_name: string | null;
  event: Json | null;
  missed: string;
  status: string;
  next_run_at: Date | null;
  last_run_at: Date | null;
  last_error: string | null;
  created_by_key_id: string | null;
  created_at: Timestamptz;
  updated_at: Timestamptz;
}
export interface ScheduleTicksTable {
  schedule_id: string;
  tick_at: Date;
  kind: string;
  task_id: string | null;
  event_id: string | null;
  error: string | null;
  created_at: Timestamptz;
}
export interface AgentSecretsTable {
  id: string;
  agent_id: string;
  environment_id: string | null;
  name: string;
  /** base64 of IV, GCM tag and the value encrypted with the data key. */
  ciphertext: string;
  /** base64 of IV, GCM tag and the data key encrypted with the master key. */
  wrapped_key: string;
  key_id: string;
  revision: Generated<number>;
  created_at: Timestamptz;
  updated_at: Timestamptz;
}
/** 016: a migration in steps, driven by the runtime reconciler (domain/rollouts.ts). */
export interface RolloutsTable {
  id: string;
  branch_id: string;
  agent_id: string;
  namespace_id: string;
  from_version_id: string;
  to_version_id: string;
  steps: Json;
  watch_ms: number;
  max_error_rate: number;
  status: string;
  step_index: Generated<number>;
  step_started_at: Date | null;
  new_tasks: Generated<number>;
  new_tasks_to_target: Generated<number>;
  reason: string | null;
  report: ColumnType<unknown, string | undefined, string>;
  created_by_key_id: string | null;
  created_at: Generated<Date>;
  updated_at: Generated<Date>;
  finished_at: Date | null;
}
/** 016: one row per move of tasks (migrate, rollout step, revert, undo); `moves` is `[[task_id, from_version_id], ...]`. */
export interface MigrationsTable {
  id: string;
  branch_id: string;
  agent_id: string;
  namespace_id: string;
  kind: string;
  rollout_id: string | null;
  step: number | null;
  to_version_id: string;
  from_version_ids: Json;
  moves: Json;
  count: number;
  reason: string | null;
  undoes_id: string | null;
  undone_by_id: string | null;
  created_by_key_id: string | null;
  created_at: Generated<Date>;
}

/** 046: a move's onMigrate hooks noted on its tasks' rows, until the dispatcher writes their deliveries. */
export interface MigrateHookBatchesTable {
  /** The move's migration record. */
  id: string;
  to_version_id: string;
  /** The versions its tasks left, a JSON array of ids. */
  from_version_ids: Json;
  created_at: Generated<Date>;
}

export interface RehearsalsTable {
  id: string;
  org_id: string;
  agent_id: string;
  from_version_id: string | null;
  to_version_id: string;
  status: Generated<'running' | 'completed'>;
  from_sequence: number | null;
  max_events: number;
  event_timeout_ms: number;
  report: Json | null;
  created_by_key_id: string | null;
  created_at: Timestamptz;
  completed_at: Timestamptz | null;
  expires_at: Timestamptz;
}

export interface RehearsalTasksTable {
  rehearsal_id: string;
  task_id: string;
  shadow_task_id: string | null;
  status: Generated<'running' | 'done'>;
  /** The original's events to replay, in order (at most max_events). */
  event_ids: Json;
  /** The shadow's copies, as they were delivered (same positions as event_ids). */
  shadow_event_ids: Json;
  /** Positions whose delivery ran past the rehearsal's event timeout. */
  timed_out: Json;
  /** Events the original has from the starting sequence on (event_ids may be fewer: --max-events). */
  events_total: Generated<number>;
  /** Why nothing was replayed (the target has no onEvent handler), else null. */
  skipped_reason: string | null;
  /** The task's part of the report, kept when it is done. */
  report: Json | null;
  /** Schema change 026: how many files the shadow started from (0: none), and their archive; null on older rows. */
  start_files_count: Generated<number | null>;
  start_archive_checksum: Generated<string | null>;
}

export interface Database {
  orgs: OrgsTable;
  namespaces: NamespacesTable;
  api_keys: ApiKeysTable;
  groups: GroupsTable;
  group_members: GroupMembersTable;
  grants: GrantsTable;
  projects: ProjectsTable;
  agents: AgentsTable;
  branches: BranchesTable;
  versions: VersionsTable;
  version_events: VersionEventsTable;
  environments: EnvironmentsTable;
  filesystems: FilesystemsTable;
  tasks: TasksTable;
  states: StatesTable;
  state_history: StateHistoryTable;
  filesystem_history: FilesystemHistoryTable;
  events: EventsTable;
  messages: MessagesTable;
  trackers: TrackersTable;
  task_stream: TaskStreamTable;
  idempotency_records: IdempotencyRecordsTable;
  registration_tokens: RegistrationTokensTable;
  version_replicas: VersionReplicasTable;
  deliveries: DeliveriesTable;
  task_system_folders: TaskSystemFoldersTable;
  schedules: SchedulesTable;
  schedule_ticks: ScheduleTicksTable;
  console_sessions: ConsoleSessionsTable;
  console_sign_in_tokens: ConsoleSignInTokensTable;
  agent_secrets: AgentSecretsTable;
  rollouts: RolloutsTable;
  migrations: MigrationsTable;
  migrate_hook_batches: MigrateHookBatchesTable;
  trace_spans: TraceSpansTable;
  rehearsals: RehearsalsTable;
  rehearsal_tasks: RehearsalTasksTable;
}

export type Db = Kysely<Database>;
export type Engine = 'pglite' | 'postgres';

export interface Store {
  db: Db;
  engine: Engine;
  /** The PostgreSQL URL (postgres engine only): used for LISTEN connections. */
  databaseUrl?: string;
  /**
   * Calls `onPayload` for every NOTIFY on `channel` (delivered when the notifying transaction
   * commits); resolves to a function that stops listening. PostgreSQL: a dedicated connection that
   * reconnects after an error (notifications sent meanwhile are lost, so listeners must not rely
   * on every one arriving).
   */
  listen(channel: string, onPayload: (payload: string) => void): Promise<() => Promise<void>>;
  /** The embedded database (pglite engine only). */
  pglite?: PGlite;
  /** Its autovacuum (pglite engine, opened by openStore). */
  vacuum?: EmbeddedVacuum;
  /** The connection pool (postgres engine only), for the pool-use metric. */
  pool?: { totalCount: number; idleCount: number; waitingCount: number };
  close(): Promise<void>;
}

export interface StoreOptions {
  /** PostgreSQL URL; when absent the embedded PGlite engine is used. */
  databaseUrl?: string;
  /** PGlite data directory; `memory://` (or undefined) keeps everything in memory. */
  dataDir?: string;
  /** Where the store says what went wrong out of any caller's sight (a NOTIFY batch not sent after its commit). */
  log?: (line: string) => void;
  /** PGlite: the embedded autovacuum (vacuum.ts); default on. */
  vacuum?: boolean;
  /** Between its passes; default PostgreSQL's autovacuum_naptime. */
  vacuumIntervalMs?: number;
}

/** Opens the database named by the options and brings its schema up to date. */
export async function openStore(options: StoreOptions): Promise<Store> {
  if (!options.databaseUrl && isNewPgliteDir(options.dataDir)) await initPgliteDir(options.dataDir);
  // An in-memory database starts as a copy of the template (pglite-template.ts) when there is one.
  const template = !options.databaseUrl && isMemory(options.dataDir) ? schemaTemplateFile() : undefined;
  const loadDataDir = template ? readTemplate(template) : undefined;
  const store = options.databaseUrl
    ? await openPostgres(options.databaseUrl, options.log)
    : await openPglite(options.dataDir, loadDataDir).catch((error: unknown) => {
        // A template that cannot be loaded is made again by the next new database.
        if (loadDataDir) discardTemplate(template!);
        throw error;
      });
  try {
    await applySchemaChanges(store.db);
    // Made here from scratch: kept as the template for the next one.
    if (template && !loadDataDir && store.pglite) saveTemplate(template, new Uint8Array(await (await store.pglite.dumpDataDir('gzip')).arrayBuffer()));
  } catch (error) {
    await store.close();
    throw error;
  }
  if (store.engine === 'pglite' && options.vacuum !== false) {
    // PostgreSQL runs its own autovacuum; PGlite has none (vacuum.ts).
    const vacuum = new EmbeddedVacuum(store.db, { intervalMs: options.vacuumIntervalMs, log: options.log });
    await vacuum.start();
    const close = store.close;
    return { ...store, vacuum, close: () => vacuum.close().then(close) };
  }
  return store;
}

/** Opens the database named by the options as it is, schema untouched (openStore applies the changes). */
export async function openDatabase(options: StoreOptions): Promise<Store> {
  return options.databaseUrl ? openPostgres(options.databaseUrl, options.log) : openPglite(options.dataDir);
}

async function openPostgres(databaseUrl: string, log?: (line: string) => void): Promise<Store> {
  const pg = await import('pg');
  const Pool = pg.default.Pool;
  // The hot statements go out named: parsed and planned once per connection (prepared.ts).
  const names = new StatementNames();
  const pool = new Pool({ connectionString: databaseUrl, max: Number(process.env.AGENTCTL_DB_POOL ?? 10), Client: namingClient(pg.default.Client, names) });
  // Without a listener an idle client's network error would crash the process.
  pool.on('error', () => {});
  // Made once the handle is: its transactions' NOTIFYs go out through it after their commit.
  let notifier: PostCommitNotifier | undefined;
  const db = new Kysely<Database>({ dialect: withNotifyOnCommit(withTracing(withSchemaLock(new PostgresDialect({ pool }))), () => notifier!) });
  nameStatementsOf(db, names);
  notifier = new PostCommitNotifier(db, log);
  notifyThrough(db, notifier);
  const listen = async (channel: string, onPayload: (payload: string) => void) => {
    let client: InstanceType<typeof pg.default.Client> | undefined;
    let stopped = false;
    let retry: NodeJS.Timeout | undefined;
    const connect = async (): Promise<void> => {
      const c = new pg.default.Client({ connectionString: databaseUrl, connectionTimeoutMillis: 10_000 });
      client = c;
      c.on('notification', (n) => {
        if (n.channel === channel) onPayload(n.payload ?? '');
      });
      let failed = false;
      c.on('error', () => {
        if (failed) return;
        failed = true;
        c.end().catch(() => {});
        scheduleReconnect();
      });
      await c.connect();
      await c.query(`LISTEN ${pgIdentifier(channel)}`);
    };
    const scheduleReconnect = () => {
      if (stopped || retry) return;
      retry = setTimeout(() => {
        retry = undefined;
        connect().catch(scheduleReconnect);
      }, 1000);
    };
    await connect();
    return async () => {
      stopped = true;
      clearTimeout(retry);
      await client?.end().catch(() => {});
    };
  };
  const close = async () => {
    await notifier.flushed();
    await db.destroy();
  };
  return { db, engine: 'postgres', databaseUrl, pool, listen, close };
}

/**
 * Creates the PGlite database of a new directory in a child process: a copy of the template
 * (pglite-template.ts) when there is one, else initdb and every schema change, whose result the
 * child hands back (stdout) to be kept as the template.
 * PGlite's WebAssembly memory grows to what initdb and the schema needed and never shrinks, and what
 * initdb loads stays referenced: a server that did this itself held about twice the memory of one
 * started on the finished directory (a worker thread was not enough: the process kept its memory).
 * The server then opens the directory as on any later start, and finds no schema change left to apply.
 */
async function initPgliteDir(dataDir: string): Promise<void> {
  const { spawn } = process.getBuiltinModule('node:child_process') as typeof import('node:child_process');
  const { createRequire } = process.getBuiltinModule('node:module') as typeof import('node:module');
  const { pathToFileURL } = process.getBuiltinModule('node:url') as typeof import('node:url');
  // Resolved here: the child's code is a string, with nothing to resolve a package name from.
  const pglite = pathToFileURL(createRequire(import.meta.url).resolve('@electric-sql/pglite')).href;
  const template = schemaTemplateFile();
  const load = existsSync(template) ? template : undefined;
  // The Migrator's record, written as it writes it: opening the directory then finds nothing to apply.
  const plan = { pglite, dataDir, load, recordDdl: SCHEMA_CHANGES_DDL, recordTable: SCHEMA_CHANGES_TABLE, changes: schemaChangeScripts() };
  const code = `const chunks = [];
process.stdin.on('data', (c) => chunks.push(c)).on('end', async () => {
  const plan = JSON.parse(Buffer.concat(chunks).toString('utf8'));
  const { PGlite } = await import(plan.pglite);
  const { readFileSync } = await import('node:fs');
  const db = new PGlite(plan.dataDir, plan.load ? { loadDataDir: new Blob([readFileSync(plan.load)]) } : {});
  await db.waitReady;
  if (!plan.load) {
    await db.transaction(async (tx) => {
      await tx.exec(plan.recordDdl);
      for (const change of plan.changes) {
        await tx.exec(change.script);
        await tx.query('INSERT INTO ' + plan.recordTable + ' (name, "timestamp") VALUES ($1, $2)', [change.name, new Date().toISOString()]);
      }
    });
    process.stdout.write(new Uint8Array(await (await db.dumpDataDir('gzip')).arrayBuffer()));
  }
  await db.close();
});`;
  const child = spawn(process.execPath, ['-e', code], { stdio: ['pipe', 'pipe', 'pipe'], env: process.env });
  let stderr = '';
  const dump: Buffer[] = [];
  child.stdout!.on('data', (d: Buffer) => dump.push(d));
  child.stderr!.setEncoding('utf8').on('data', (d: string) => (stderr += d));
  child.stdin!.end(JSON.stringify(plan));
  const exitCode = await new Promise<number | null>((resolve, reject) => {
    child.once('error', reject);
    child.once('close', resolve);
  });
  if (exitCode !== 0) {
    // Named, not removed: the directory rather than the template may be what failed.
    const from = load ? ` from the template ${load}` : '';
    throw new Error(`Creating the PGlite database in ${dataDir}${from} failed (exit ${exitCode}): ${stderr.trim().slice(-2000)}`);
  }
  if (!load && dump.length > 0) saveTemplate(template, Buffer.concat(dump));
}

/** The template file for the current schema changes (pglite-template.ts), whether or not it exists yet. */
export function schemaTemplateFile(): string {
  return templateFile({ recordDdl: SCHEMA_CHANGES_DDL, changes: schemaChangeScripts() });
}

function schemaChangeScripts(): Array<{ name: string; script: string }> {
  return Object.entries(schemaChanges).map(([name, change]) => ({ name, script: change.script }));
}

/** A PGlite directory that holds no database yet (initdb has not run there). */
function isNewPgliteDir(dataDir: string | undefined): dataDir is string {
  return !isMemory(dataDir) && !existsSync(path.join(dataDir!, 'PG_VERSION'));
}

const isMemory = (dataDir: string | undefined) => dataDir === undefined || dataDir === 'memory://';

/**
 * PGlite (0.4.6) copies its instance's type-parser table into a new object for every result it
 * parses (`parseResults`: `{...this.parsers, ...options.parsers}`): 316 entries, one per built-in
 * type and one per array type, about half the CPU of a small query. A value whose type is not in
 * that copy is parsed by the module's default table (`types.parsers`), so the array types' parsers go
 * there (built-in types have the same OIDs in every database; the schema defines none of its own)
 * and the instance's table is left empty: the copy is then of nothing. Parsing is unchanged.
 */
async function shareTypeParsers(pglite: PGlite, types: typeof import('@electric-sql/pglite').types): Promise<void> {
  const arrayParser = types.arrayParser as unknown as ((value: string, parse: unknown, typarray: number) => unknown) | undefined;
  if (typeof arrayParser !== 'function') return;
  const shared = types.parsers as Record<string, (value: string, typeId: number) => unknown>;
  const { rows } = await pglite.query<{ oid: number | null; typarray: number | null }>(
    `SELECT b.oid, b.typarray FROM pg_catalog.pg_type a LEFT JOIN pg_catalog.pg_type b ON b.oid = a.typelem WHERE a.typcategory = 'A' GROUP BY b.oid, b.typarray`,
  );
  for (const { oid, typarray } of rows) {
    if (oid == null || typarray == null || typarray in shared) continue;
    shared[typarray] = (value: string) => arrayParser(value, shared[oid], typarray);
  }
  pglite.parsers = {};
}

async function openPglite(dataDir: string | undefined, loadDataDir?: Blob): Promise<Store> {
  const [{ PGlite, types }, { PGliteDialect }] = await Promise.all([import('@electric-sql/pglite'), import('kysely-pglite-dialect')]);
  // A new WAL segment is not zero-filled, only its last byte written (PostgreSQL's wal_init_zero,
  // safe on any file system). PGlite's in-memory files grow by an eighth at a time past 1 MiB, each
  // growth a copy: zero-filling a 16 MiB segment in 8 KiB writes copied 134 MB (48-265 ms, once per
  // 16 MiB of WAL) in the middle of someone's request; on disk it wrote 16 MiB of zeros.
  const startParams = [...PGlite.defaultStartParams, '-c', 'wal_init_zero=off'];
  const pglite = isMemory(dataDir) ? new PGlite({ loadDataDir, startParams }) : new PGlite(dataDir, { loadDataDir, startParams });
  await pglite.waitReady;
  await shareTypeParsers(pglite, types);
  const dialect = new PGliteDialect(pglite);
  const createDriver = dialect.createDriver.bind(dialect);
  dialect.createDriver = () => new ScriptAwareDriver(createDriver(), pglite);
  const db = new Kysely<Database>({ dialect: withTracing(withSchemaLock(dialect)) });
  // Its one session keeps prepared statements: the hot writes are planned once (prepared.ts).
  prepareStatementsOf(db);
  const listen = async (channel: string, onPayload: (payload: string) => void) => {
    const unlisten = await pglite.listen(channel, onPayload);
    return () => unlisten();
  };
  return { db, engine: 'pglite', pglite, listen, close: () => db.destroy() };
}

/** One parameterless statement through PGlite's simple query protocol, as Kysely's result (its last statement's). */
async function simpleQuery<R>(pglite: PGlite, text: string): Promise<QueryResult<R>> {
  const results = await pglite.exec(text);
  const last = results[results.length - 1];
  if (!last) return { rows: [] };
  return last.affectedRows ? { rows: last.rows as R[], numAffectedRows: BigInt(last.affectedRows) } : { rows: last.rows as R[] };
}

/**
 * pg's Client, except that a statement text `names` holds (what executePrepared ran) goes out as a
 * named statement: pg parses it once per connection and then only binds and executes it, and the
 * server keeps its plan. Kysely's PostgreSQL driver calls `query(text, parameters)`; anything else
 * passes through. A statement the schema outgrew (another replica's change to a table it reads
 * with `*`) fails once per connection: it gets a new name, and outside a transaction runs again.
 */
function namingClient(Client: typeof PgClient, names: StatementNames): typeof PgClient {
  return class NamingClient extends Client {
    // biome-ignore lint/suspicious/noExplicitAny: pg's query() has many overloads; only one form is changed
    override query(config: any, values?: any, callback?: any): any {
      const name = typeof config === 'string' && Array.isArray(values) && callback === undefined ? names.nameOf(config) : undefined;
      if (!name) return super.query(config, values, callback);
      return super.query({ name, text: config, values }).catch((error: { code?: string; message?: string }) => {
        if (error?.code !== '0A000' || !error.message?.includes('cached plan must not change result type')) throw error;
        names.renew(config);
        if (this.getTransactionStatus() !== 'I') throw error;
        return super.query(config, values);
      });
    }
  };
}

const pgIdentifier = (name: string) => `"${name.replace(/"/g, '""')}"`;

/**
 * PGlite's driver, except that a script (schema/script.ts: text starting with SCRIPT_MARK, no
 * parameters) goes through exec(), which takes several statements; query() takes one. Same session,
 * so a script runs inside the open transaction.
 *
 * The statements that carry no parameters by construction, an EXECUTE of a prepared statement
 * (prepared.ts) and BEGIN/COMMIT/ROLLBACK, go through exec() too: PGlite's query() calls into its
 * wasm module six times per statement (Parse, Describe, Bind, Describe, Execute, Sync), exec() twice
 * (Query, Sync). Same rows; CPU (0.4.6): the event statement 0.60 -> 0.43 ms, BEGIN + COMMIT 89 -> 48 µs.
 */
class ScriptAwareDriver implements Driver {
  constructor(
    private readonly driver: Driver,
    private readonly pglite: PGlite,
  ) {}

  init() {
    return this.driver.init();
  }

  // kysely-pglite-dialect hands out a new connection object on every acquire: a cache keyed by it
  // never hits, so the wrapper is a small object of its own made each time, holding what it wraps.
  async acquireConnection(): Promise<DatabaseConnection> {
    return new ScriptAwareConnection(await this.driver.acquireConnection(), this.pglite);
  }

  #unwrap(connection: DatabaseConnection): DatabaseConnection {
    return connection instanceof ScriptAwareConnection ? connection.inner : connection;
  }

  // As kysely-pglite-dialect's own, through exec(). Called on the connection the driver handed out, so in turn.
  async beginTransaction(_connection: DatabaseConnection, settings: TransactionSettings) {
    await simpleQuery(this.pglite, settings.isolationLevel ? `start transaction isolation level ${settings.isolationLevel}` : 'begin');
  }

  async commitTransaction() {
    await simpleQuery(this.pglite, 'commit');
  }

  async rollbackTransaction() {
    await simpleQuery(this.pglite, 'rollback');
  }

  releaseConnection(connection: DatabaseConnection) {
    return this.driver.releaseConnection(this.#unwrap(connection));
  }

  destroy() {
    return this.driver.destroy();
  }
}

/** A connection of ScriptAwareDriver: scripts and EXECUTEs through exec(), the rest as the dialect runs them. */
class ScriptAwareConnection implements DatabaseConnection {
  constructor(
    readonly inner: DatabaseConnection,
    private readonly pglite: PGlite,
  ) {}

  async executeQuery<R>(query: CompiledQuery): Promise<QueryResult<R>> {
    if (query.parameters.length === 0) {
      if (query.sql.startsWith(SCRIPT_MARK)) {
        await this.pglite.exec(query.sql);
        return { rows: [] };
      }
      if (isPreparedExecute(query.sql)) return simpleQuery(this.pglite, query.sql);
    }
    return this.inner.executeQuery(query);
  }

  streamQuery<R>(query: CompiledQuery, chunkSize: number): AsyncIterableIterator<QueryResult<R>> {
    return this.inner.streamQuery(query, chunkSize);
  }
}

/** An arbitrary constant: the advisory-lock key every replica takes while changing the schema. */
const SCHEMA_LOCK_KEY = 7420_0001;

/**
 * Kysely's PostgreSQL adapter, except for the Migrator's lock: Kysely's own is a session-level
 * advisory lock, which a failed change (an aborted transaction) could neither release nor report
 * past; ours is SCHEMA_LOCK_KEY for the transaction, released by its commit or rollback.
 */
class SchemaLockAdapter extends PostgresAdapter {
  override async acquireMigrationLock(db: Kysely<unknown>): Promise<void> {
    await sql`SELECT pg_advisory_xact_lock(${SCHEMA_LOCK_KEY})`.execute(db);
  }

  override async releaseMigrationLock(): Promise<void> {}
}

function withSchemaLock<D extends Dialect>(dialect: D): D {
  dialect.createAdapter = () => new SchemaLockAdapter();
  return dialect;
}

/** A transaction's `notifyOnCommit`s go out through the notifier once it committed (store/notifier.ts). */
function withNotifyOnCommit<D extends Dialect>(dialect: D, notifier: () => PostCommitNotifier): D {
  const createDriver = dialect.createDriver.bind(dialect);
  dialect.createDriver = () => new NotifyOnCommitDriver(createDriver(), notifier);
  return dialect;
}

/** Statements and transactions of a traced request become its spans (tracing/db-spans.ts). */
function withTracing<D extends Dialect>(dialect: D): D {
  const createDriver = dialect.createDriver.bind(dialect);
  dialect.createDriver = () => new TracedDriver(createDriver());
  return dialect;
}

/** Where Kysely's Migrator records the schema changes applied (its own table layout). */
export const SCHEMA_CHANGES_TABLE = 'schema_changes';
/** The Migrator's lock table (unused under SchemaLockAdapter, but created). */
const SCHEMA_CHANGES_LOCK_TABLE = `${SCHEMA_CHANGES_TABLE}_lock`;
/** The layout Kysely's Migrator creates for its record (and would create itself when the table is missing). */
const SCHEMA_CHANGES_DDL = `CREATE TABLE ${SCHEMA_CHANGES_TABLE} (name varchar(255) PRIMARY KEY, "timestamp" varchar(255) NOT NULL)`;
/** What the runner before Kysely's Migrator recorded (name, applied_at): adopted once, then left as it was. */
const OLD_TRACKING_TABLE = 'schema_migrations';

/**
 * Applies pending schema changes (schema/index.ts) with Kysely's Migrator, in one transaction under
 * an advisory lock, so replicas that start at the same moment apply each change exactly once. A
 * database whose schema the earlier runner made has its record adopted first: nothing runs twice.
 */
export async function applySchemaChanges(db: Db, changes: Record<string, Migration> = schemaChanges): Promise<void> {
  await db.transaction().execute(async (trx) => {
    // Taken here as well as by the Migrator (SchemaLockAdapter): adopting the old record needs it too.
    await sql`SELECT pg_advisory_xact_lock(${SCHEMA_LOCK_KEY})`.execute(trx);
    await adoptOldRecord(trx);
    const migrator = new Migrator({
      db: trx,
      provider: { getMigrations: async () => changes },
      migrationTableName: SCHEMA_CHANGES_TABLE,
      migrationLockTableName: SCHEMA_CHANGES_LOCK_TABLE,
      // As the earlier runner did: whatever is missing runs, in name order, even when a later one
      // has run (two branches each adding a change).
      allowUnorderedMigrations: true,
    });
    const { error, results } = await migrator.migrateToLatest();
    if (error) {
      const failed = results?.find((r) => r.status === 'Error');
      throw Object.assign(error instanceof Error ? error : new Error(String(error)), failed ? { schemaChange: failed.migrationName } : {});
    }
  });
}

/**
 * The earlier runner's table lists what it applied: the same names, so the Migrator's table starts
 * with them (their timestamps from applied_at) and runs only what came after.
 */
async function adoptOldRecord(trx: Db): Promise<void> {
  const tables = await sql<{ name: string }>`
    SELECT table_name AS name FROM information_schema.tables
    WHERE table_schema = current_schema() AND table_name IN (${SCHEMA_CHANGES_TABLE}, ${OLD_TRACKING_TABLE})`.execute(trx);
  const present = new Set(tables.rows.map((t) => t.name));
  if (present.has(SCHEMA_CHANGES_TABLE) || !present.has(OLD_TRACKING_TABLE)) return;
  await sql.raw(SCHEMA_CHANGES_DDL).execute(trx);
  await sql`
    INSERT INTO ${sql.table(SCHEMA_CHANGES_TABLE)} (name, "timestamp")
    SELECT name, to_char(applied_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') FROM ${sql.table(OLD_TRACKING_TABLE)}`.execute(trx);
}

/**
 * Empties every table but the schema-change record and restarts its sequences (tests share one
 * database per file and reset between tests). DELETE with foreign keys and triggers off
 * (session_replication_role, which needs a superuser, as a test database has) rather than TRUNCATE:
 * TRUNCATE gives every table and index a new file, ~150 ms a reset on PostgreSQL against ~2 ms.
 */
export async function truncateAll(db: Db): Promise<void> {
  await db.transaction().execute(async (trx) => {
    const tables = await sql<{ name: string }>`
      SELECT tablename AS name FROM pg_tables
      WHERE schemaname = current_schema() AND tablename NOT IN (${SCHEMA_CHANGES_TABLE}, ${SCHEMA_CHANGES_LOCK_TABLE}, ${OLD_TRACKING_TABLE})`.execute(trx);
    const sequences = await sql<{ name: string }>`SELECT sequencename AS name FROM pg_sequences WHERE schemaname = current_schema()`.execute(trx);
    const script = [
      'SET LOCAL session_replication_role = replica;',
      ...tables.rows.map((t) => `DELETE FROM ${pgIdentifier(t.name)};`),
      ...sequences.rows.map((s) => `ALTER SEQUENCE ${pgIdentifier(s.name)} RESTART;`),
    ];
    await sql.raw(SCRIPT_MARK + script.join('\n')).execute(trx);
  });
}
