import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { sql, type Selectable } from 'kysely';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { applySchemaChanges, openDatabase, openStore, type Database, type Engine, type Store, type StoreOptions } from '../../src/server/store/db.js';
import { schemaChanges } from '../../src/server/store/schema/index.js';
import { runScript } from '../../src/server/store/schema/script.js';
import { createTestDatabase, engines } from '../support/service.js';
import { AGENT_STATUSES, TASK_STATUSES, VERSION_STATUSES } from '../../src/contract/lifecycle.js';
import { STREAM_RECORD_KINDS, STREAMING_STATUSES } from '../../src/contract/conversation.js';

/** An empty database of the engine: PGlite (in memory, or a data directory that outlives a close), or PostgreSQL. */
async function emptyDatabase(engine: Engine, reopened = false): Promise<{ options: StoreOptions; drop: () => Promise<void> }> {
  if (engine === 'postgres') {
    const database = await createTestDatabase();
    return { options: { databaseUrl: database.url }, drop: database.drop };
  }
  if (!reopened) return { options: {}, drop: async () => {} };
  const dir = mkdtempSync(`${tmpdir()}/agentctl-schema-`);
  return { options: { dataDir: dir }, drop: async () => rmSync(dir, { recursive: true, force: true }) };
}

const names = Object.keys(schemaChanges);

describe.each(engines)('schema changes (%s)', (engine) => {
  // First, and alone: this one needs a database of its own, opened twice.
  test('a database whose schema the earlier runner made (schema_migrations) upgrades in place: what it recorded does not run again, what came after does', async () => {
    const database = await emptyDatabase(engine, true);
    try {
      // The earlier runner's result after 005: the schema, its table, its records and some data.
      const old = await openDatabase(database.options);
      await old.db.transaction().execute(async (trx) => {
        for (const name of names.slice(0, 5)) await schemaChanges[name].up(trx);
        await sql`CREATE TABLE schema_migrations (name text PRIMARY KEY, applied_at timestamptz NOT NULL DEFAULT now())`.execute(trx);
        for (const name of names.slice(0, 5))
          await sql`INSERT INTO schema_migrations (name, applied_at) VALUES (${name}, '2026-01-02T03:04:05.678Z')`.execute(trx);
        await sql`INSERT INTO orgs (id, name) VALUES ('org_old', 'Old')`.execute(trx);
      });
      await old.close();

      // 001_initial's CREATE TABLEs would fail if anything ran a second time.
      const upgraded = await openStore(database.options);
      try {
        const applied = await sql<{ name: string; timestamp: string }>`SELECT name, "timestamp" FROM schema_changes ORDER BY name`.execute(upgraded.db);
        expect(applied.rows.slice(0, 5)).toEqual(names.slice(0, 5).map((name) => ({ name, timestamp: '2026-01-02T03:04:05.678Z' })));
        expect(applied.rows.map((r) => r.name)).toEqual(names);
        const numbered = await sql<{
          n: number;
        }>`SELECT count(*)::int AS n FROM information_schema.columns WHERE table_name = 'versions' AND column_name = 'number'`.execute(upgraded.db);
        expect(numbered.rows[0].n).toBe(1);
        const orgs = await sql<{ id: string }>`SELECT id FROM orgs`.execute(upgraded.db);
        expect(orgs.rows).toEqual([{ id: 'org_old' }]);
        const oldRecord = await sql<{ n: number }>`SELECT count(*)::int AS n FROM schema_migrations`.execute(upgraded.db);
        expect(oldRecord.rows[0].n).toBe(5);
      } finally {
        await upgraded.close();
      }

      // Opened again: nothing left to do, nothing recorded twice.
      const again = await openStore(database.options);
      const applied = await sql<{ name: string }>`SELECT name FROM schema_changes ORDER BY name`.execute(again.db);
      expect(applied.rows.map((r) => r.name)).toEqual(names);
      await again.close();
    } finally {
      await database.drop();
    }
  });

  describe('on a database brought up to date at start', () => {
    let database: Awaited<ReturnType<typeof emptyDatabase>>;
    let store: Store;
    beforeAll(async () => {
      database = await emptyDatabase(engine);
      store = await openStore(database.options);
    });
    afterAll(async () => {
      await store?.close();
      await database?.drop();
    });

    test('a later change whose function and trigger bodies hold semicolons applies whole, and its trigger notifies a listener', async () => {
      await applySchemaChanges(store.db, {
        ...schemaChanges,
        '900_org_created_notice': {
          up: (db) =>
            runScript(
              db,
              /* sql */ `
CREATE FUNCTION org_created_notice() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  payload text;
BEGIN
  payload := NEW.id || ';' || NEW.name;
  PERFORM pg_notify('org_created', payload);
  RETURN NEW;
END;
$$;
CREATE TRIGGER org_created_notice AFTER INSERT ON orgs FOR EACH ROW EXECUTE FUNCTION org_created_notice();
`,
            ),
        },
      });
      const applied = await sql<{ name: string }>`SELECT name FROM schema_changes ORDER BY name`.execute(store.db);
      expect(applied.rows.map((r) => r.name)).toEqual([...names, '900_org_created_notice']);

      const heard: string[] = [];
      const stop = await store.listen('org_created', (payload) => heard.push(payload));
      await sql`INSERT INTO orgs (id, name) VALUES ('org_notice', 'Notice; with a semicolon')`.execute(store.db);
      for (let i = 0; i < 100 && heard.length === 0; i++) await new Promise((resolve) => setTimeout(resolve, 50));
      await stop();
      expect(heard).toEqual(['org_notice;Notice; with a semicolon']);
    });

    test('the table types (store/db.ts) name every column of every table, with its type and whether it takes null', async () => {
      const columns = await sql<{ table_name: string; column_name: string; data_type: string; is_nullable: 'YES' | 'NO' }>`
        SELECT table_name, column_name, data_type, is_nullable FROM information_schema.columns
        WHERE table_schema = current_schema() AND table_name NOT LIKE 'schema_changes%'
        ORDER BY table_name, column_name`.execute(store.db);
      const actual: Record<string, Record<string, string>> = {};
      for (const c of columns.rows) (actual[c.table_name] ??= {})[c.column_name] = c.data_type + (c.is_nullable === 'YES' ? ' null' : '');
      expect(actual).toEqual(TABLE_COLUMNS);
    });

    test('the status columns take exactly the statuses of the contract (src/contract/lifecycle.ts)', async () => {
      const allowed = async (table: string) => {
        const checks = await sql<{ def: string }>`
          SELECT pg_get_constraintdef(c.oid) AS def FROM pg_constraint c
          WHERE c.conrelid = ${table}::regclass AND c.contype = 'c' AND pg_get_constraintdef(c.oid) LIKE '%(status %'`.execute(store.db);
        expect(checks.rows).toHaveLength(1);
        return [...checks.rows[0].def.matchAll(/'([A-Z_]+)'/g)].map((m) => m[1]).sort();
      };
      expect(await allowed('versions')).toEqual([...VERSION_STATUSES].sort());
      expect(await allowed('tasks')).toEqual([...TASK_STATUSES].sort());
      expect(await allowed('agents')).toEqual([...AGENT_STATUSES].sort());
    });

    test('messages take exactly the streaming statuses, and the task stream exactly the record kinds, of the contract (src/contract/conversation.ts)', async () => {
      const allowed = async (table: string, column: string) => {
        const checks = await sql<{ def: string }>`
          SELECT pg_get_constraintdef(c.oid) AS def FROM pg_constraint c
          WHERE c.conrelid = ${table}::regclass AND c.contype = 'c' AND pg_get_constraintdef(c.oid) LIKE ${`%(${column} %`}`.execute(store.db);
        expect(checks.rows).toHaveLength(1);
        return [...checks.rows[0].def.matchAll(/'([a-zA-Z_]+)'/g)].map((m) => m[1]).sort();
      };
      expect(await allowed('messages', 'streaming_status')).toEqual([...STREAMING_STATUSES].sort());
      expect(await allowed('task_stream', 'kind')).toEqual([...STREAM_RECORD_KINDS].sort());
    });
  });
});

// ---- the table types, as the database must have them --------------------------------------------

/** The PostgreSQL types a column's TypeScript (select) type stands for. */
type PgTypeOf<S> = unknown extends S
  ? 'jsonb'
  : [NonNullable<S>] extends [Date]
    ? 'timestamp with time zone'
    : [NonNullable<S>] extends [boolean]
      ? 'boolean'
      : [NonNullable<S>] extends [number]
        ? 'integer' | 'double precision'
        : [NonNullable<S>] extends [string]
          ? 'text' | 'bigint'
          : [NonNullable<S>] extends [string | number]
            ? 'bigint'
            : never;
/** Whether the column takes null: `| null` on the column, or in its select type (Generated<T | null>). */
type TakesNull<Raw, S> = null extends Raw ? true : unknown extends S ? false : null extends S ? true : false;
type ColumnFacts<T> = {
  [C in keyof T & keyof Selectable<T>]-?: `${PgTypeOf<Selectable<T>[C]>}${TakesNull<T[C], Selectable<T>[C]> extends true ? ' null' : ''}`;
};

/**
 * Every table of `Database` and every column of its type: a column missing here, or here and not in
 * the type, or whose type or nullability disagrees with the TypeScript type, fails to compile; the
 * test above compares it with the database.
 */
const TABLE_COLUMNS: { [T in keyof Database]: ColumnFacts<Database[T]> } = {
  agent_secrets: {
    id: 'text',
    agent_id: 'text',
    environment_id: 'text null',
    name: 'text',
    ciphertext: 'text',
    wrapped_key: 'text',
    key_id: 'text',
    revision: 'integer',
    created_at: 'timestamp with time zone',
    updated_at: 'timestamp with time zone',
  },
  rollouts: {
    id: 'text',
    branch_id: 'text',
    agent_id: 'text',
    namespace_id: 'text',
    from_version_id: 'text',
    to_version_id: 'text',
    steps: 'jsonb',
    watch_ms: 'integer',
    max_error_rate: 'double precision',
    status: 'text',
    step_index: 'integer',
    step_started_at: 'timestamp with time zone null',
    new_tasks: 'integer',
    new_tasks_to_target: 'integer',
    reason: 'text null',
    report: 'jsonb',
    created_by_key_id: 'text null',
    created_at: 'timestamp with time zone',
    updated_at: 'timestamp with time zone',
    finished_at: 'timestamp with time zone null',
  },
  migrate_hook_batches: { id: 'text', to_version_id: 'text', from_version_ids: 'jsonb', created_at: 'timestamp with time zone' },
  migrations: {
    id: 'text',
    branch_id: 'text',
    agent_id: 'text',
    namespace_id: 'text',
    kind: 'text',
    rollout_id: 'text null',
    step: 'integer null',
    to_version_id: 'text',
    from_version_ids: 'jsonb',
    moves: 'jsonb',
    count: 'integer',
    reason: 'text null',
    undoes_id: 'text null',
    undone_by_id: 'text null',
    created_by_key_id: 'text null',
    created_at: 'timestamp with time zone',
  },
  agents: {
    id: 'text',
    namespace_id: 'text',
    name: 'text',
    description: 'text',
    status: 'text',
    status_reason: 'text null',
    agent_input_type: 'text null',
    registered_at: 'timestamp with time zone null',
    registration_metadata: 'jsonb null',
    created_by_key_id: 'text null',
    created_at: 'timestamp with time zone',
    updated_at: 'timestamp with time zone',
    last_version_number: 'integer',
  },
  api_keys: {
    id: 'text',
    org_id: 'text',
    name: 'text',
    description: 'text',
    key_hash: 'text',
    key_prefix: 'text',
    created_by_key_id: 'text null',
    expires_at: 'timestamp with time zone null',
    revoked_at: 'timestamp with time zone null',
    last_used_at: 'timestamp with time zone null',
    created_at: 'timestamp with time zone',
    updated_at: 'timestamp with time zone',
    runtime_agent_id: 'text null',
  },
  console_sessions: {
    id: 'text',
    key_id: 'text',
    token_hash: 'text',
    user_agent: 'text',
    created_at: 'timestamp with time zone',
    expires_at: 'timestamp with time zone',
    ended_at: 'timestamp with time zone null',
  },
  console_sign_in_tokens: {
    token_hash: 'text',
    key_id: 'text',
    created_at: 'timestamp with time zone',
    expires_at: 'timestamp with time zone',
    used_at: 'timestamp with time zone null',
  },
  branches: {
    id: 'text',
    agent_id: 'text',
    git_branch: 'text',
    git_branch_normalized: 'text',
    replicas: 'integer',
    current_version_id: 'text null',
    event_sequence: 'integer',
    retired_at: 'timestamp with time zone null',
    retired_reason: 'text null',
    created_at: 'timestamp with time zone',
    updated_at: 'timestamp with time zone',
  },
  deliveries: {
    id: 'bigint',
    task_id: 'text',
    version_id: 'text null',
    method: 'text',
    event_id: 'text null',
    payload: 'jsonb',
    status: 'text',
    attempts: 'integer',
    next_attempt_at: 'timestamp with time zone',
    failing_since: 'timestamp with time zone null',
    claimed_by: 'text null',
    claimed_until: 'timestamp with time zone null',
    last_error: 'text null',
    created_at: 'timestamp with time zone',
    updated_at: 'timestamp with time zone',
    leased_to: 'text null',
    lease_ms: 'integer null',
    traceparent: 'text null',
    tracestate: 'text null',
    kind: 'text',
    priority: 'integer',
  },
  environments: {
    id: 'text',
    agent_id: 'text',
    name: 'text',
    description: 'text',
    is_prod: 'boolean',
    branch_rules: 'jsonb',
    created_at: 'timestamp with time zone',
    updated_at: 'timestamp with time zone',
  },
  events: { id: 'text', task_id: 'text', agent_id: 'text', sequence_id: 'integer', content: 'jsonb', created_at: 'timestamp with time zone' },
  filesystems: {
    id: 'text',
    namespace_id: 'text',
    project_id: 'text null',
    created_at: 'timestamp with time zone',
    archive_checksum: 'text null',
    size_bytes: 'bigint',
    files_count: 'integer',
    archive_bytes: 'bigint',
    blob_key: 'text null',
    manifest_key: 'text null',
    created_by_key_id: 'text null',
    updated_at: 'timestamp with time zone',
  },
  filesystem_history: {
    filesystem_id: 'text',
    task_id: 'text',
    replaced_at_sequence: 'integer',
    archive_checksum: 'text null',
    size_bytes: 'bigint',
    files_count: 'integer',
    archive_bytes: 'bigint',
    blob_key: 'text null',
    manifest_key: 'text null',
  },
  grants: {
    id: 'bigint',
    principal_type: 'text',
    principal_id: 'text',
    resource_type: 'text',
    resource_id: 'text',
    role: 'text',
    legacy_role: 'text null',
    source: 'text',
    created_at: 'timestamp with time zone',
  },
  group_members: { group_id: 'text', key_id: 'text', added_at: 'timestamp with time zone' },
  groups: {
    id: 'text',
    org_id: 'text',
    name: 'text',
    description: 'text',
    created_at: 'timestamp with time zone',
    updated_at: 'timestamp with time zone',
    created_by_key_id: 'text null',
  },
  idempotency_records: {
    key_id: 'text',
    route: 'text',
    idempotency_key: 'text',
    request_hash: 'text',
    status: 'integer null',
    response: 'text null',
    created_at: 'timestamp with time zone',
  },
  messages: {
    id: 'text',
    task_id: 'text',
    author: 'text',
    content: 'jsonb',
    streaming_status: 'text null',
    streaming_error: 'text null',
    sequence_id: 'integer',
    updated_sequence_id: 'integer',
    created_at: 'timestamp with time zone',
    updated_at: 'timestamp with time zone',
  },
  namespaces: {
    id: 'text',
    org_id: 'text',
    name: 'text',
    slug: 'text',
    created_at: 'timestamp with time zone',
    updated_at: 'timestamp with time zone',
    created_by_key_id: 'text null',
  },
  orgs: { id: 'text', name: 'text', created_at: 'timestamp with time zone' },
  projects: {
    id: 'text',
    namespace_id: 'text',
    name: 'text',
    description: 'text',
    created_by_key_id: 'text null',
    created_at: 'timestamp with time zone',
    updated_at: 'timestamp with time zone',
  },
  rehearsals: {
    id: 'text',
    org_id: 'text',
    agent_id: 'text',
    from_version_id: 'text null',
    to_version_id: 'text',
    status: 'text',
    from_sequence: 'integer null',
    max_events: 'integer',
    event_timeout_ms: 'integer',
    report: 'jsonb null',
    created_by_key_id: 'text null',
    created_at: 'timestamp with time zone',
    completed_at: 'timestamp with time zone null',
    expires_at: 'timestamp with time zone',
  },
  rehearsal_tasks: {
    rehearsal_id: 'text',
    task_id: 'text',
    shadow_task_id: 'text null',
    status: 'text',
    event_ids: 'jsonb',
    shadow_event_ids: 'jsonb',
    timed_out: 'jsonb',
    events_total: 'integer',
    skipped_reason: 'text null',
    report: 'jsonb null',
    start_files_count: 'integer null',
    start_archive_checksum: 'text null',
  },
  registration_tokens: {
    token_hash: 'text',
    version_id: 'text',
    reusable: 'boolean',
    expires_at: 'timestamp with time zone',
    used_at: 'timestamp with time zone null',
    created_by_key_id: 'text null',
    created_at: 'timestamp with time zone',
  },
  schedules: {
    id: 'text',
    org_id: 'text',
    namespace_id: 'text',
    agent_id: 'text',
    name: 'text null',
    cron: 'text',
    timezone: 'text',
    branch: 'text null',
    params: 'jsonb null',
    task_name: 'text null',
    event: 'jsonb null',
    missed: 'text',
    status: 'text',
    next_run_at: 'timestamp with time zone null',
    last_run_at: 'timestamp with time zone null',
    last_error: 'text null',
    created_by_key_id: 'text null',
    created_at: 'timestamp with time zone',
    updated_at: 'timestamp with time zone',
  },
  schedule_ticks: {
    schedule_id: 'text',
    tick_at: 'timestamp with time zone',
    kind: 'text',
    task_id: 'text null',
    event_id: 'text null',
    error: 'text null',
    created_at: 'timestamp with time zone',
  },
  states: {
    id: 'text',
    task_id: 'text',
    agent_id: 'text',
    state: 'jsonb',
    version: 'integer',
    created_at: 'timestamp with time zone',
    updated_at: 'timestamp with time zone',
    written_by_version_id: 'text null',
    written_at_sequence: 'integer null',
  },
  state_history: {
    task_id: 'text',
    agent_id: 'text',
    sequence_id: 'integer',
    state: 'jsonb',
    written_at: 'timestamp with time zone null',
    written_by_version_id: 'text null',
    before_move: 'boolean',
  },
  task_stream: { task_id: 'text', sequence_id: 'integer', kind: 'text', record: 'jsonb', created_at: 'timestamp with time zone' },
  task_system_folders: { task_id: 'text', type: 'text', filesystem_id: 'text' },
  trace_spans: {
    id: 'bigint',
    org_id: 'text',
    trace_id: 'text',
    span_id: 'text',
    parent_span_id: 'text null',
    task_id: 'text null',
    name: 'text',
    kind: 'text',
    service: 'text',
    start_us: 'bigint',
    end_us: 'bigint',
    status: 'text',
    status_message: 'text null',
    attributes: 'jsonb',
    recorded_at: 'timestamp with time zone',
  },
  tasks: {
    id: 'text',
    agent_id: 'text',
    branch_id: 'text',
    namespace_id: 'text',
    filesystem_id: 'text',
    project_id: 'text null',
    name: 'text null',
    status: 'text',
    status_reason: 'text null',
    params: 'jsonb null',
    task_metadata: 'jsonb null',
    created_version_id: 'text',
    current_version_id: 'text',
    created_by_key_id: 'text null',
    created_at: 'timestamp with time zone',
    updated_at: 'timestamp with time zone',
    last_sequence_id: 'integer',
    org_id: 'text',
    input_tokens: 'bigint',
    output_tokens: 'bigint',
    shadow_of: 'text null',
    rehearsal_id: 'text null',
    migration_error: 'jsonb null',
    history_from_sequence: 'integer',
    moved_at: 'timestamp with time zone null',
    migrate_hook_id: 'bigint null',
    migrate_hook_from: 'text null',
    migrate_hook_batch: 'text null',
  },
  trackers: {
    id: 'text',
    task_id: 'text',
    agent_id: 'text',
    status: 'text',
    status_message: 'text null',
    progress: 'double precision null',
    last_processed_event_id: 'text null',
    created_at: 'timestamp with time zone',
    updated_at: 'timestamp with time zone',
  },
  version_events: {
    id: 'text',
    branch_id: 'text',
    version_id: 'text null',
    sequence: 'integer',
    type: 'text',
    data: 'jsonb',
    created_at: 'timestamp with time zone',
  },
  version_replicas: {
    version_id: 'text',
    replica_key: 'text',
    acp_url: 'text',
    runtime_key_id: 'text null',
    registered_at: 'timestamp with time zone',
    last_seen_at: 'timestamp with time zone',
    live: 'boolean',
  },
  versions: {
    id: 'text',
    branch_id: 'text',
    agent_id: 'text',
    git_hash: 'text',
    git_branch: 'text',
    git_message: 'text',
    author_name: 'text',
    author_email: 'text',
    image_url: 'text',
    status: 'text',
    deployed_at: 'timestamp with time zone',
    sdk_type: 'text',
    acp_type: 'text',
    is_dirty: 'boolean',
    replicas: 'integer',
    desired_replicas: 'integer',
    are_tasks_sticky: 'boolean',
    description: 'text',
    rollback_count: 'integer',
    last_rollback_at: 'timestamp with time zone null',
    rolled_back_at: 'timestamp with time zone null',
    retired_at: 'timestamp with time zone null',
    image_expires_at: 'timestamp with time zone null',
    failure_reason: 'text null',
    failure_diagnostics: 'jsonb null',
    source_filesystem_id: 'text null',
    created_at: 'timestamp with time zone',
    updated_at: 'timestamp with time zone',
    signing_secret: 'text null',
    number: 'integer',
    resources: 'jsonb null',
    double_texting: 'text',
    handlers: 'jsonb null',
  },
};
