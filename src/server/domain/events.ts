import { sql, type Kysely } from 'kysely';
import type { Database } from '../store/db.js';
import { newId } from '../store/ids.js';
import { lockBranches } from './lookup.js';
import { bulkMove } from './version-lifecycle.js';
import { LIVE_TASK_STATUSES } from '../../contract/lifecycle.js';
import { statusList, statusLit } from '../store/sql.js';

type Trx = Kysely<Database>;

export type VersionEventType =
  | 'VERSION_CREATED'
  | 'VERSION_ACTIVATED'
  | 'VERSION_UNHEALTHY'
  | 'VERSION_RECOVERED'
  | 'VERSION_DRAINING'
  | 'VERSION_RETIRED'
  | 'VERSION_FAILED'
  | 'VERSION_ROLLED_BACK_FROM'
  | 'VERSION_ROLLED_BACK_TO'
  | 'TASKS_MIGRATED'
  | 'BRANCH_RETIRED';

/** Appends a lifecycle event with the branch's next sequence number (the update locks the branch row). */
export async function appendEvent(
  trx: Trx,
  branchId: string,
  versionId: string | null,
  type: VersionEventType,
  data: Record<string, unknown> = {},
): Promise<void> {
  await sql`
    WITH seq AS (UPDATE branches SET event_sequence = event_sequence + 1 WHERE id = ${branchId} RETURNING event_sequence)
    INSERT INTO version_events (id, branch_id, version_id, sequence, type, data)
    SELECT ${newId('event')}, ${branchId}, ${versionId}, event_sequence, ${type}, ${JSON.stringify(data)}::jsonb FROM seq`.execute(trx);
}

/**
 * A DRAINING version whose last live task has left becomes RETIRED at once; called in the same
 * transaction as whatever moved or ended tasks, and by the periodic sweep as a safety net.
 */
export async function settleDraining(trx: Trx, versionIds: Iterable<string>): Promise<string[]> {
  const ids = [...new Set(versionIds)];
  if (ids.length === 0) return [];
  const drained = bulkMove('drained');
  const retired = await sql<{ id: string; branch_id: string }>`
    UPDATE versions v SET status = ${statusLit(drained.to)}, retired_at = now(), updated_at = now()
    WHERE v.id = ANY(${ids}) AND v.status IN (${statusList(drained.from)})
      AND NOT EXISTS (SELECT 1 FROM tasks t WHERE t.current_version_id = v.id AND t.status IN (${statusList(LIVE_TASK_STATUSES)}))
      -- A running rollout from it may still move its tasks back (domain/rollouts.ts): it retires when the rollout ends.
      AND NOT EXISTS (SELECT 1 FROM rollouts r WHERE r.from_version_id = v.id AND r.status IN ('RUNNING', 'PAUSED'))
      -- A task that left runs its onMigrate elsewhere; should it throw, the task comes back here
      -- (domain/migration-hooks.ts): the source retires once no such hook is open (the sweep retires it).
      AND NOT EXISTS (SELECT 1 FROM deliveries d WHERE d.method = 'task/migrate' AND d.status IN ('pending', 'in_flight', 'leased')
                      AND d.payload->'migration'->>'from_version_id' = v.id)
      -- Nor while a move's hooks from it are still pending on its tasks' rows (schema 046).
      AND NOT EXISTS (SELECT 1 FROM migrate_hook_batches b WHERE b.from_version_ids ? v.id)
    RETURNING v.id, v.branch_id`.execute(trx);
  for (const v of retired.rows) await appendEvent(trx, v.branch_id, v.id, 'VERSION_RETIRED', { reason: 'drained' });
  return retired.rows.map((r) => r.id);
}

/** Safety net: retire every drained version (run periodically by the server). */
export async function sweepDraining(db: Kysely<Database>): Promise<number> {
  const draining = await db.selectFrom('versions').select('id').where('status', '=', 'DRAINING').execute();
  if (draining.length === 0) return 0;
  return db.transaction().execute(async (trx) => {
    // Branches before versions (the lock order in lookup.ts): settling appends branch events.
    const ids = draining.map((d) => d.id);
    const branches = await trx.selectFrom('versions').select('branch_id').distinct().where('id', 'in', ids).execute();
    await lockBranches(trx, { ids: branches.map((b) => b.branch_id) });
    return (await settleDraining(trx, ids)).length;
  });
}
