/**
 * The state upgrade (issue 22, README "Versions and migration"): a task that moves between
 * versions (a migration, a rollback) gets a `task/migrate` control delivery, enqueued in the move's
 * own transaction, so it is in the task's queue ahead of every later event. The target version's
 * agent runs `onMigrate(ctx, { from, to })` before it handles anything that follows; when that
 * throws, the task goes back to the version it came from and the error is kept on the task.
 */
import { sql, type Kysely, type RawBuilder } from 'kysely';
import type { Database } from '../store/db.js';
import type { AcpMigration } from '../../contract/acp.js';
import { announceDeliveries } from '../store/outbox.js';
import { appendEvent, settleDraining } from './events.js';
import { recordTaskChange } from './conversation.js';
import { lockBranch } from './lookup.js';

type Trx = Kysely<Database>;

/** The handler a version's agent must have declared (at registration) for a move to it to run a hook. */
export const MIGRATE_HANDLER = 'onMigrate';

/** Whether the version's agent declared the handler when it registered (ADK agents declare theirs). */
export async function versionDeclares(trx: Trx, versionId: string, handler: string): Promise<boolean> {
  const row = await trx.selectFrom('versions').select('handlers').where('id', '=', versionId).executeTakeFirst();
  return Array.isArray(row?.handlers) && (row.handlers as unknown[]).includes(handler);
}

/**
 * Enqueues one `task/migrate` delivery per moved task, when the target's agent declared onMigrate
 * (an agent without it has nothing to run: no delivery, no cost to a large migration). `from` is
 * the task's version before the move: one for all, or one per task.
 */
export async function enqueueMigrationHooks(
  trx: Trx,
  taskIds: readonly string[],
  from: string | ReadonlyMap<string, string>,
  toVersionId: string,
): Promise<number> {
  if (taskIds.length === 0 || !(await versionDeclares(trx, toVersionId, MIGRATE_HANDLER))) return 0;
  const ids = [...taskIds];
  const froms = ids.map((id) => (typeof from === 'string' ? from : from.get(id)!));
  const inserted = await sql<{ n: number }>`
    WITH moved AS (SELECT * FROM unnest(${ids}::text[], ${froms}::text[]) AS m(task_id, from_version_id)),
    ins AS (
      INSERT INTO deliveries (task_id, method, payload, next_attempt_at, created_at, updated_at)
      SELECT m.task_id, 'task/migrate',
             jsonb_build_object('migration', jsonb_build_object('from_version_id', f.id, 'from_version_number', f.number, 'to_version_id', t.id, 'to_version_number', t.number)),
             now(), now(), now()
      FROM moved m JOIN versions f ON f.id = m.from_version_id JOIN versions t ON t.id = ${toVersionId}
      WHERE f.id <> t.id
      ORDER BY m.task_id
      RETURNING 1
    )
    SELECT count(*)::int AS n FROM ins`.execute(trx);
  const n = inserted.rows[0]?.n ?? 0;
  if (n > 0) await announceDeliveries(trx);
  return n;
}

/**
 * The same `task/migrate` deliveries as a CTE body of the move's own statement (migrate.ts), reading
 * the CTE `moved` (its `id` column): `fromOf` is the version each moved task left (an expression
 * over `moved`), `fromIds` every such version. A large migration enqueues its hooks without sending
 * the moved ids back and forth; each version pair's payload is built once. The rows go in as the
 * move returns them, unsorted: each task gets one, so its own order (by id) holds whatever the order
 * across tasks, and sorting 10,000 ids was a tenth of the hooks' cost. Only for a target that
 * declared onMigrate (versionDeclares); announce the deliveries after (announceDeliveries).
 */
export function migrationHooksSql(toVersionId: string, fromIds: readonly string[], fromOf: RawBuilder<unknown>): RawBuilder<unknown> {
  return sql`
    INSERT INTO deliveries (task_id, method, payload, next_attempt_at, created_at, updated_at)
    SELECT moved.id, 'task/migrate', p.payload, now(), now(), now()
    FROM moved JOIN (
      SELECT f.id, jsonb_build_object('migration', jsonb_build_object('from_version_id', f.id, 'from_version_number', f.number, 'to_version_id', t.id, 'to_version_number', t.number)) AS payload
      FROM versions f, versions t WHERE f.id = ANY(${[...fromIds]}::text[]) AND t.id = ${toVersionId} AND f.id <> t.id
    ) p ON p.id = ${fromOf}
    RETURNING 1`;
}

/**
 * The SET list of a statement that moves tasks to `toVersionId` (migrate.ts, moveRecorded): the
 * version, when the task moved (`moved_at`, which schema 039's trigger fills only for a move that
 * does not set it: one function call a row saved) and, when the target declared onMigrate, the
 * clearing of an earlier failed hook's error.
 */
export function moveSetSql(toVersionId: string, hooks: boolean): RawBuilder<unknown> {
  return sql`current_version_id = ${toVersionId}, moved_at = now(), updated_at = now()${hooks ? sql`, migration_error = NULL` : sql``}`;
}

/**
 * The agent reported that onMigrate threw: the task goes back to the version its last `task/migrate`
 * delivery moved it from (when it is still on the version it moved to), with the error on the task
 * (`migration_error`, shown by `tasks get`). Called in the report's transaction.
 */
export async function revertFailedMigration(trx: Trx, taskId: string, message: string): Promise<void> {
  const hook = await trx
    .selectFrom('deliveries')
    .select(['id', 'payload'])
    .where('task_id', '=', taskId)
    .where('method', '=', 'task/migrate')
    .orderBy('id', 'desc')
    .limit(1)
    .executeTakeFirst();
  const migration = (hook?.payload as { migration?: AcpMigration } | undefined)?.migration;
  if (!migration) return;
  const task = await trx.selectFrom('tasks').select(['branch_id', 'current_version_id']).where('id', '=', taskId).executeTakeFirst();
  if (!task || task.current_version_id !== migration.to_version_id) return;
  // Branch before task (the lock order of migrations, lookup.ts).
  await lockBranch(trx, task.branch_id);
  const error = { message, from_version_id: migration.from_version_id, to_version_id: migration.to_version_id, at: new Date().toISOString() };
  const moved = await sql<{ branch_id: string }>`
    UPDATE tasks SET current_version_id = ${migration.from_version_id}, migration_error = ${JSON.stringify(error)}::jsonb, updated_at = now()
    WHERE id = ${taskId} AND current_version_id = ${migration.to_version_id}
    RETURNING branch_id`.execute(trx);
  const branchId = moved.rows[0]?.branch_id;
  if (!branchId) return;
  await appendEvent(trx, branchId, migration.from_version_id, 'TASKS_MIGRATED', {
    from_version_ids: [migration.to_version_id],
    to_version_id: migration.from_version_id,
    count: 1,
    task_ids: [taskId],
    mode: 'migrate_hook_failed',
    reason: message,
  });
  await recordTaskChange(trx, [taskId]);
  await settleDraining(trx, [migration.to_version_id]);
}
