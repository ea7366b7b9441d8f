/**
 * The state upgrade (issue 22, README "Versions and migration"): a task that moves between
 * versions (a migration, a rollback) gets a `task/migrate` control delivery, placed in the task's
 * queue by the move's own transaction, so it is ahead of every later event: a deploy or rollback
 * writes the delivery; a migration or rollout step (thousands of tasks in one statement) notes it on
 * the task row with the delivery id it will have, and the dispatcher writes it. The target version's
 * agent runs `onMigrate(ctx, { from, to })` before it handles anything that follows; when that
 * throws, the task goes back to the version it came from and the error is kept on the task.
 */
import { sql, type Kysely, type RawBuilder } from 'kysely';
import type { Database } from '../store/db.js';
import type { AcpMigration } from '../../contract/acp.js';
import { announceDeliveries, hookPending } from '../store/outbox.js';
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

/** The `task/migrate` payload of a move from version row `f` to version row `t` (SQL aliases). */
const hookPayload = (f: string, t: string) =>
  sql.raw(
    `jsonb_build_object('migration', jsonb_build_object('from_version_id', ${f}.id, 'from_version_number', ${f}.number, 'to_version_id', ${t}.id, 'to_version_number', ${t}.number))`,
  );

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
             ${hookPayload('f', 't')}, now(), now(), now()
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
 * The hooks of a move to a target that declared onMigrate, as CTE bodies of the move's own statement
 * (migrate.ts, moveRecorded), which sets them on the task rows (`moveSetSql` with the batch) and
 * writes no delivery (schema 046): `batch` lists the move's hooks for the dispatcher, reading the
 * CTE `rec` (the move's migration record, written when anything moved); `prior`, for a moved task
 * whose hook of an earlier move is still pending on its row, writes that one's delivery first (under
 * its own id, so in its place; one the dispatcher wrote meanwhile is left alone). `where`: the move's
 * condition on `tasks`. Announce the deliveries after (announceDeliveries): the dispatcher writes them.
 */
export function migrationHooksSql(
  toVersionId: string,
  fromIds: readonly string[],
  where: RawBuilder<unknown>,
): { batch: RawBuilder<unknown>; prior: RawBuilder<unknown> } {
  return {
    batch: sql`INSERT INTO migrate_hook_batches (id, to_version_id, from_version_ids) SELECT rec.id, ${toVersionId}, ${JSON.stringify(fromIds)}::jsonb FROM rec RETURNING id`,
    prior: sql`INSERT INTO deliveries (id, task_id, method, payload, next_attempt_at, created_at, updated_at)
      SELECT p.migrate_hook_id, p.id, 'task/migrate', ${hookPayload('f', 'tv')}, now(), now(), now()
      FROM (SELECT id, migrate_hook_id, migrate_hook_from, migrate_hook_batch FROM tasks
            -- Checked once, first: with no batch pending (the dispatcher keeps up) the tasks are not read.
            WHERE EXISTS (SELECT 1 FROM migrate_hook_batches) AND migrate_hook_batch IS NOT NULL AND ${where}) p
      JOIN migrate_hook_batches b ON b.id = p.migrate_hook_batch JOIN versions f ON f.id = p.migrate_hook_from JOIN versions tv ON tv.id = b.to_version_id
      ON CONFLICT (id) DO NOTHING`,
  };
}

/**
 * The SET list of a statement that moves tasks to `toVersionId` (migrate.ts, moveRecorded): the
 * version, when the task moved (`moved_at`, which schema 039's trigger fills only for a move that
 * does not set it: one function call a row saved) and, when the target declared onMigrate (`batch`:
 * the move's migration record id), the clearing of an earlier failed hook's error and the hook on
 * the row: its delivery id, taken from the deliveries' sequence now (its place in the task's queue),
 * and the version the task leaves (the SET reads the row as it was).
 */
export function moveSetSql(toVersionId: string, batch: string | null): RawBuilder<unknown> {
  return sql`current_version_id = ${toVersionId}, moved_at = now(), updated_at = now()${
    batch
      ? // A task already on the target (named in a migration by id) gets no hook.
        sql`, migration_error = NULL,
          migrate_hook_id = CASE WHEN current_version_id <> ${toVersionId} THEN nextval('deliveries_id_seq') ELSE migrate_hook_id END,
          migrate_hook_from = CASE WHEN current_version_id <> ${toVersionId} THEN current_version_id ELSE migrate_hook_from END,
          migrate_hook_batch = CASE WHEN current_version_id <> ${toVersionId} THEN ${batch} ELSE migrate_hook_batch END`
      : sql``
  }`;
}

/**
 * Writes the deliveries of the oldest move whose hooks are pending on its tasks' rows (the dispatcher,
 * before it claims): each under the id its move took, so in the task's queue exactly where the move
 * put it; a task moved on by a later hooked move is skipped (that move wrote this hook already). The
 * batch goes in the same statement: from then on the hooks are deliveries like any other. Returns
 * how many batches it took (0: none was pending, or another dispatcher holds it).
 */
export async function writePendingHooks(db: Kysely<Database>): Promise<number> {
  const result = await sql<{ batches: number }>`
    WITH b AS (SELECT id, to_version_id FROM migrate_hook_batches ORDER BY created_at, id LIMIT 1 FOR UPDATE SKIP LOCKED),
    ins AS (
      INSERT INTO deliveries (id, task_id, method, payload, next_attempt_at, created_at, updated_at)
      SELECT t.migrate_hook_id, t.id, 'task/migrate', ${hookPayload('f', 'tv')}, now(), now(), now()
      FROM b JOIN migrations m ON m.id = b.id CROSS JOIN LATERAL jsonb_array_elements(m.moves) mv
      JOIN tasks t ON t.id = mv->>0 AND t.migrate_hook_batch = b.id
      JOIN versions f ON f.id = t.migrate_hook_from JOIN versions tv ON tv.id = b.to_version_id
      ON CONFLICT (id) DO NOTHING
    ), gone AS (DELETE FROM migrate_hook_batches x USING b WHERE x.id = b.id)
    SELECT count(*)::int AS batches FROM b`.execute(db);
  return result.rows[0]?.batches ?? 0;
}

/**
 * SQL: no onMigrate hook is pending on task row `t` (an alias) ahead of delivery id `before` (none: a
 * delivery being inserted, after every other): a hook noted by a move whose batch the dispatcher has
 * not written yet holds the task's later deliveries as its delivery row would.
 */
export function noHookPendingBefore(t: string, before?: RawBuilder<unknown>): RawBuilder<unknown> {
  return sql`NOT (${hookPending(t)}${before ? sql` AND ${sql.ref(t)}.migrate_hook_id < ${before}` : sql``})`;
}

/**
 * The agent reported that onMigrate threw: the task goes back to the version its last `task/migrate`
 * delivery moved it from (when it is still on the version it moved to), with the error on the task
 * (`migration_error`, shown by `tasks get`). Called in the report's transaction.
 */
export async function revertFailedMigration(trx: Trx, taskId: string, message: string): Promise<void> {
  // The task, the hook pending on its row (if any) and its last `task/migrate` delivery, in one read.
  const found = await sql<{
    branch_id: string;
    current_version_id: string;
    pending_id: string | null;
    pending_from: string | null;
    pending_to: string | null;
    written: { id: string; migration?: AcpMigration } | null;
  }>`
    SELECT t.branch_id, t.current_version_id, t.migrate_hook_id::text AS pending_id, t.migrate_hook_from AS pending_from, hb.to_version_id AS pending_to,
      (SELECT json_build_object('id', d.id::text, 'migration', d.payload->'migration') FROM deliveries d
       WHERE d.task_id = t.id AND d.method = 'task/migrate' ORDER BY d.id DESC LIMIT 1) AS written
    FROM tasks t LEFT JOIN migrate_hook_batches hb ON hb.id = t.migrate_hook_batch
    WHERE t.id = ${taskId}`.execute(trx);
  const task = found.rows[0];
  if (!task) return;
  const hook = task.written;
  let migration: Pick<AcpMigration, 'from_version_id' | 'to_version_id'> | undefined = hook?.migration ?? undefined;
  // A later hook still noted on the task's row (its batch not yet written as deliveries) is the last move.
  const onRow = task.pending_id !== null && task.pending_from !== null && task.pending_to !== null && (!hook || BigInt(task.pending_id) > BigInt(hook.id));
  if (onRow) migration = { from_version_id: task.pending_from!, to_version_id: task.pending_to! };
  if (!migration || task.current_version_id !== migration.to_version_id) return;
  // Branch before task (the lock order of migrations, lookup.ts).
  await lockBranch(trx, task.branch_id);
  const error = { message, from_version_id: migration.from_version_id, to_version_id: migration.to_version_id, at: new Date().toISOString() };
  const moved = await sql<{ branch_id: string }>`
    UPDATE tasks SET current_version_id = ${migration.from_version_id}, migration_error = ${JSON.stringify(error)}::jsonb, updated_at = now()
      ${onRow ? sql`, migrate_hook_batch = NULL` : sql``} -- a hook still on the row goes with the move it belonged to
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
