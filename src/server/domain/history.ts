// History retention: the state and file history rehearsals start from (schema 025 state_history,
// 026 filesystem_history) is kept back to the task's last migration and within a retention window,
// whichever is shorter; the hourly housekeeping prunes what is older (README "Safe migrations").
import { type Kysely, sql } from 'kysely';
import { parseDuration } from '../../contract/rollout-rules.js';
import type { Database } from '../store/db.js';

export const HISTORY_RETENTION_ENV = 'AGENTCTL_HISTORY_RETENTION';
export const DEFAULT_HISTORY_RETENTION = '30d';

/** AGENTCTL_HISTORY_RETENTION (`30d`, `12h`, ...) in milliseconds; a value that is no duration stops the start. */
export function historyRetentionMs(value = process.env[HISTORY_RETENTION_ENV]): number {
  const text = value?.trim() || DEFAULT_HISTORY_RETENTION;
  const ms = parseDuration(text);
  if (ms === undefined || ms <= 0) throw new Error(`${HISTORY_RETENTION_ENV} must be a duration such as 30d, 12h or 90m, not "${text}"`);
  return ms;
}

export interface PrunedHistory {
  /** Tasks whose first rehearsable sequence moved on. */
  tasks: number;
  states: number;
  archives: number;
}

/**
 * Prunes every task's history below its new first rehearsable sequence K: the first sequence the
 * task recorded after both (now - retention) and its last move to another version (past its last
 * sequence when it recorded nothing since). What a rehearsal from K or later reads stays: each agent's last state
 * written before K (the value at K), the archives replaced at or after K, and the task's first
 * archive (its files at creation, which a rehearsal from the start copies). The pruned archives'
 * blobs are then referenced by nothing and the blob sweep collects them.
 */
export async function pruneHistory(db: Kysely<Database>, retentionMs: number, now = new Date()): Promise<PrunedHistory> {
  const since = new Date(now.getTime() - retentionMs);
  return db.transaction().execute(async (trx) => {
    // Raising K locks the task rows, so a rehearsal that checked K (FOR SHARE) reads its history whole.
    // The last migration is tasks.moved_at (schema 027: every move, the fact the state history reads
    // too); GREATEST skips its null (never moved), leaving the window alone.
    const raised = await sql<{ id: string }>`
      WITH cut AS (
        SELECT t.id AS task_id, COALESCE(
          (SELECT min(s.sequence_id) FROM task_stream s WHERE s.task_id = t.id AND s.created_at >= GREATEST(${since}::timestamptz, t.moved_at)),
          t.last_sequence_id + 1) AS k
        FROM tasks t
        WHERE t.id IN (SELECT task_id FROM state_history UNION SELECT task_id FROM filesystem_history)
      )
      UPDATE tasks t SET history_from_sequence = cut.k FROM cut
      WHERE t.id = cut.task_id AND cut.k > t.history_from_sequence
      RETURNING t.id`.execute(trx);
    if (raised.rows.length === 0) return { tasks: 0, states: 0, archives: 0 };
    const ids = raised.rows.map((r) => r.id);
    const states = await sql`
      DELETE FROM state_history h USING tasks t
      WHERE t.id = ANY(${ids}) AND h.task_id = t.id AND h.sequence_id < (
        SELECT max(w.sequence_id) FROM (
          SELECT x.sequence_id FROM state_history x WHERE x.task_id = h.task_id AND x.agent_id = h.agent_id
          UNION ALL
          SELECT COALESCE(s.written_at_sequence, 0) FROM states s WHERE s.task_id = h.task_id AND s.agent_id = h.agent_id
        ) AS w WHERE w.sequence_id < t.history_from_sequence)`.execute(trx);
    const archives = await sql`
      DELETE FROM filesystem_history h USING tasks t
      WHERE t.id = ANY(${ids}) AND h.task_id = t.id AND h.replaced_at_sequence < t.history_from_sequence
        AND h.replaced_at_sequence > (
          SELECT min(x.replaced_at_sequence) FROM filesystem_history x WHERE x.task_id = h.task_id AND x.filesystem_id = h.filesystem_id)`.execute(trx);
    return { tasks: ids.length, states: Number(states.numAffectedRows ?? 0), archives: Number(archives.numAffectedRows ?? 0) };
  });
}
