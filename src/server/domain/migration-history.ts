/**
 * The migration history (issue 22, part 4): every move of tasks between versions is a record in
 * `migrations` with exactly the tasks it moved and where each came from, written in the move's own
 * statement. `tasks migrate` (migrate.ts), rollout steps and reverts (rollouts.ts) and undos write
 * them; `migrations undo` moves exactly those tasks back, or says why it cannot.
 */
import { sql, type Kysely, type RawBuilder, type Selectable } from 'kysely';
import { LIVE_TASK_STATUSES } from '../../contract/lifecycle.js';
import type { MigrationKind, MigrationRecord } from '../../contract/rollouts.js';
import { ACTIVE_ROLLOUT_STATUSES } from '../../contract/rollouts.js';
import { versionLabel } from '../../contract/version-ref.js';
import type { Permissions } from '../auth/policy.js';
import type { Database, Db, MigrationsTable } from '../store/db.js';
import { newId } from '../store/ids.js';
import { statusList } from '../store/sql.js';
import { conflict, notFound } from './errors.js';
import { settleDraining } from './events.js';
import { inCallerOrg, lockBranch, readableAgentRows } from './lookup.js';
import { MIGRATE_HANDLER, migrationHooksSql, moveSetSql, versionDeclares } from './migration-hooks.js';
import { announceDeliveries, HOOKS_NOTICE } from '../store/outbox.js';

type Trx = Kysely<Database>;

/** Versions in these take tasks moved back to them (a DRAINING source included: that is what a revert is for). */
export const TAKES_TASKS_BACK = ['DEPLOYING', 'ACTIVE', 'UNHEALTHY', 'DRAINING'] as const;

export interface RecordFields {
  branchId: string;
  agentId: string;
  namespaceId: string;
  kind: MigrationKind;
  rolloutId?: string | null;
  step?: number | null;
  reason?: string | null;
  undoesId?: string | null;
  keyId?: string | null;
}

/**
 * The `INSERT INTO migrations` of a move, as a CTE body reading the CTE `moved` (its `id` column)
 * and `fromOf`, the version each moved task left (an expression over `moved`; `fromVersionId` when
 * every task left the same one, which spares sorting the moves for it). Inserts nothing when
 * nothing moved.
 */
export function migrationRecordSql(
  id: string,
  toVersionId: string,
  fields: RecordFields,
  fromOf: RawBuilder<unknown>,
  fromVersionId?: string,
): RawBuilder<unknown> {
  const fromIds = fromVersionId === undefined ? sql`coalesce(jsonb_agg(DISTINCT ${fromOf}), '[]'::jsonb)` : sql`jsonb_build_array(${fromVersionId}::text)`;
  return sql`
    INSERT INTO migrations (id, branch_id, agent_id, namespace_id, kind, rollout_id, step, to_version_id, from_version_ids, moves, count, reason, undoes_id, created_by_key_id)
    SELECT ${id}, ${fields.branchId}, ${fields.agentId}, ${fields.namespaceId}, ${fields.kind}, ${fields.rolloutId ?? null}, ${fields.step ?? null}::int,
           ${toVersionId}, ${fromIds},
           coalesce(jsonb_agg(jsonb_build_array(moved.id, ${fromOf})), '[]'::jsonb),
           count(*), ${fields.reason ?? null}, ${fields.undoesId ?? null}, ${fields.keyId ?? null}
    FROM moved HAVING count(*) > 0
    RETURNING id`;
}

/**
 * Moves the tasks of `fromVersionId` that `where` selects (a condition on `tasks`) to `toVersionId`
 * in one statement: the tasks moved, the branch's TASKS_MIGRATED event (naming the record, which
 * lists the tasks) and the migration record written together. With `hooks` (a rollout's step or
 * revert), when the target declared onMigrate, the same statement clears the moved tasks' earlier
 * hook error and notes their onMigrate hooks on their rows, for the dispatcher to write as
 * `task/migrate` deliveries (migration-hooks.ts): no second pass over the moved ids. Returns how many moved and the record's id (null when none did).
 */
export async function moveRecorded(
  trx: Trx,
  fromVersionId: string,
  toVersionId: string,
  where: RawBuilder<unknown>,
  fields: RecordFields,
  options: { hooks?: boolean } = {},
): Promise<{ count: number; migrationId: string | null }> {
  const id = newId('migration');
  const hooks = options.hooks === true && (await versionDeclares(trx, toVersionId, MIGRATE_HANDLER));
  const moving = sql`current_version_id = ${fromVersionId} AND ${where}`;
  const hookSql = hooks ? migrationHooksSql(toVersionId, [fromVersionId], moving) : undefined;
  const eventData = sql`jsonb_build_object('from_version_ids', jsonb_build_array(${fromVersionId}::text), 'to_version_id', ${toVersionId}::text,
    'count', (SELECT count(*) FROM moved), 'mode', ${fields.kind}::text, 'migration_id', ${id}::text)`;
  const result = await sql<{ n: number; migration_id: string | null }>`
    WITH ${hookSql ? sql`prior AS (${hookSql.prior}), ` : sql``}moved AS (
      UPDATE tasks SET ${moveSetSql(toVersionId, hooks ? id : null)}
      WHERE ${moving}
      RETURNING id
    ), seq AS (
      UPDATE branches SET event_sequence = event_sequence + 1 WHERE id = ${fields.branchId} AND EXISTS (SELECT 1 FROM moved)
      RETURNING event_sequence
    ), event AS (
      INSERT INTO version_events (id, branch_id, version_id, sequence, type, data)
      SELECT ${newId('event')}, ${fields.branchId}, ${toVersionId}, event_sequence, 'TASKS_MIGRATED', ${eventData} FROM seq
    ), rec AS (${migrationRecordSql(id, toVersionId, fields, sql`${fromVersionId}::text`, fromVersionId)})${
      hookSql ? sql`, batch AS (${hookSql.batch})` : sql``
    }
    SELECT (SELECT count(*)::int FROM moved) AS n, (SELECT id FROM rec) AS migration_id`.execute(trx);
  const row = result.rows[0];
  if (hooks && row.n > 0) await announceDeliveries(trx, HOOKS_NOTICE);
  return { count: row.n, migrationId: row.migration_id };
}

type Row = Selectable<MigrationsTable>;

const movesOf = (row: Row) => (row.moves as [string, string][]).sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0));
const fromOf = (row: Row) => row.from_version_ids as string[];

function toRecord(row: Row, withMoves: boolean): MigrationRecord {
  return {
    id: row.id,
    branch_id: row.branch_id,
    agent_id: row.agent_id,
    kind: row.kind as MigrationRecord['kind'],
    rollout_id: row.rollout_id,
    step: row.step,
    from_version_ids: fromOf(row),
    to_version_id: row.to_version_id,
    count: row.count,
    reason: row.reason,
    undoes_id: row.undoes_id,
    undone_by_id: row.undone_by_id,
    created_at: new Date(row.created_at).toISOString(),
    ...(withMoves ? { moves: movesOf(row).map(([task_id, from_version_id]) => ({ task_id, from_version_id })) } : {}),
  };
}

const agentRef = (row: { agent_id: string; namespace_id: string }) => ({ type: 'agent', id: row.agent_id, namespaceId: row.namespace_id }) as const;

/** `GET /migrations`: newest first, the ones of agents the caller may read, one page of them (without their moves). */
export async function listMigrations(
  db: Db,
  perms: Permissions,
  q: { agent_id?: string; branch_id?: string; rollout_id?: string; limit: number; page_number: number },
): Promise<{ migrations: MigrationRecord[]; total: number }> {
  let query = db.selectFrom('migrations').where(readableAgentRows(perms, 'migrations', q));
  if (q.rollout_id) query = query.where('rollout_id', '=', q.rollout_id);
  const [rows, count] = await Promise.all([
    query
      .select([
        'id',
        'branch_id',
        'agent_id',
        'namespace_id',
        'kind',
        'rollout_id',
        'step',
        'to_version_id',
        'from_version_ids',
        'count',
        'reason',
        'undoes_id',
        'undone_by_id',
        'created_by_key_id',
        'created_at',
      ])
      .select(sql<[string, string][]>`'[]'::jsonb`.as('moves'))
      .orderBy('id', 'desc')
      .limit(q.limit)
      .offset((q.page_number - 1) * q.limit)
      .execute(),
    query.select(sql<number>`count(*)::int`.as('n')).executeTakeFirstOrThrow(),
  ]);
  return { migrations: rows.map((r) => toRecord(r, false)), total: count.n };
}

async function migrationRow(db: Kysely<Database>, perms: Permissions, id: string, permission: 'read' | 'write'): Promise<Row> {
  const row = await db.selectFrom('migrations').selectAll().where('id', '=', id).where(inCallerOrg(perms, 'migrations.namespace_id')).executeTakeFirst();
  if (!row) throw notFound('Migration', id);
  perms.require(permission, agentRef(row), `Migration ${id}`);
  return row;
}

/** `GET /migrations/{id}`: the record with exactly the tasks it moved. */
export async function getMigration(db: Db, perms: Permissions, id: string): Promise<MigrationRecord> {
  return toRecord(await migrationRow(db, perms, id, 'read'), true);
}

/**
 * `POST /migrations/{id}/undo`: exactly the tasks of the migration back to the versions they left,
 * recorded as an `undo`. Refused (409) when they have moved on since: a task is no longer on the
 * migration's target or no longer live, a later migration moved one of them, it was undone
 * already, the version they left takes no tasks any more, or a rollout is still driving it.
 */
export async function undoMigration(db: Db, perms: Permissions, id: string): Promise<MigrationRecord> {
  return db.transaction().execute(async (trx) => {
    const first = await migrationRow(trx, perms, id, 'write');
    await lockBranch(trx, first.branch_id);
    const row = await trx.selectFrom('migrations').selectAll().where('id', '=', id).forUpdate().executeTakeFirstOrThrow();
    if (row.undone_by_id) throw conflict('migration_moved_on', `Migration ${id} was undone already (by ${row.undone_by_id})`);
    if (row.rollout_id) {
      const rollout = await trx.selectFrom('rollouts').select(['id', 'status']).where('id', '=', row.rollout_id).executeTakeFirstOrThrow();
      if ((ACTIVE_ROLLOUT_STATUSES as readonly string[]).includes(rollout.status)) {
        throw conflict(
          'rollout_in_progress',
          `Migration ${id} is a step of rollout ${rollout.id}, which is ${rollout.status}: abort the rollout to move its tasks back`,
        );
      }
    }
    const ids = movesOf(row).map(([taskId]) => taskId);
    const tasks = await trx
      .selectFrom('tasks')
      .select(['id', 'name', 'status', 'current_version_id'])
      .where('id', 'in', ids)
      .orderBy('id')
      .forNoKeyUpdate()
      .execute();
    const versions = new Map(
      (
        await trx
          .selectFrom('versions')
          .select(['id', 'number', 'status'])
          .where('id', 'in', [row.to_version_id, ...fromOf(row)])
          .execute()
      ).map((v) => [v.id, v]),
    );
    const label = (versionId: string) => {
      const v = versions.get(versionId);
      return v ? versionLabel(v.number) : versionId;
    };
    const problems: string[] = [];
    const named = (t: { id: string; name: string | null }) => (t.name ? `${t.name} (${t.id})` : t.id);
    for (const t of tasks) {
      if (!(LIVE_TASK_STATUSES as readonly string[]).includes(t.status)) problems.push(`${named(t)} is ${t.status}`);
      else if (t.current_version_id !== row.to_version_id)
        problems.push(`${named(t)} is on ${label(t.current_version_id)} now, not ${label(row.to_version_id)}`);
    }
    for (const gone of ids.filter((taskId) => !tasks.some((t) => t.id === taskId))) problems.push(`${gone} was deleted`);
    const later = await sql<{ id: string; task_id: string }>`
      SELECT m.id, e.value->>0 AS task_id FROM migrations m, jsonb_array_elements(m.moves) e
      WHERE m.branch_id = ${row.branch_id} AND m.id > ${row.id} AND (e.value->>0) = ANY(${ids}) ORDER BY m.id LIMIT 1`.execute(trx);
    if (later.rows.length) problems.push(`${later.rows[0].task_id} was moved again by ${later.rows[0].id}`);
    if (problems.length) {
      const listed = problems.slice(0, 5).join('; ') + (problems.length > 5 ? `; and ${problems.length - 5} more` : '');
      throw conflict('migration_moved_on', `The tasks of migration ${id} have moved on since, so it cannot be undone: ${listed}`);
    }
    for (const from of fromOf(row)) {
      const v = versions.get(from);
      if (!v || !(TAKES_TASKS_BACK as readonly string[]).includes(v.status)) {
        throw conflict(
          'source_retired',
          `${label(from)} is ${v?.status ?? 'gone'} and takes no tasks, so migration ${id} cannot be undone; roll the branch back instead (agentctl rollback)`,
        );
      }
    }
    let first_record: string | null = null;
    for (const from of fromOf(row)) {
      const group = movesOf(row)
        .filter(([, f]) => f === from)
        .map(([taskId]) => taskId);
      const { migrationId } = await moveRecorded(trx, row.to_version_id, from, sql`id = ANY(${group}) AND status IN (${statusList(LIVE_TASK_STATUSES)})`, {
        branchId: row.branch_id,
        agentId: row.agent_id,
        namespaceId: row.namespace_id,
        kind: 'undo',
        undoesId: row.id,
        reason: `undo of ${row.id}`,
        keyId: perms.actor.keyId || null,
      });
      first_record ??= migrationId;
    }
    await trx.updateTable('migrations').set({ undone_by_id: first_record }).where('id', '=', row.id).execute();
    await settleDraining(trx, [row.to_version_id]);
    return toRecord(await trx.selectFrom('migrations').selectAll().where('id', '=', first_record!).executeTakeFirstOrThrow(), true);
  });
}
