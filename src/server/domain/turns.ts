/**
 * Turn control (README "Interrupt and double-texting"): whether a task's agent is busy with a turn,
 * interrupting the running turn, and what an event arriving meanwhile does under the version's
 * double-texting policy. A turn is a `turn` delivery (task/create, event/send, task/cancel) from when
 * it is enqueued until its handler finished; an interrupt is a control delivery that reaches the
 * agent without waiting behind it.
 */
import { sql, type Kysely } from 'kysely';
import type { Event, InterruptResult, TaskTurn } from '../../contract/conversation.js';
import { OPEN_DELIVERY_STATUSES } from '../../contract/conversation.js';
import type { DoubleTextingPolicy } from '../../contract/enums.js';
import type { Database, Db } from '../store/db.js';
import { enqueueDelivery, hookPending, mergeIntoQueuedTurn } from '../store/outbox.js';
import type { Permissions } from '../auth/policy.js';
import { conflict, named } from './errors.js';
import { taskById } from './lookup.js';

type Executor = Kysely<Database>;

/** The task's open turns, oldest first (the head runs, the rest wait). */
async function openTurns(db: Executor, taskId: string) {
  const open = sql.join(OPEN_DELIVERY_STATUSES.map((status) => sql.lit(status)));
  const turns = await sql<{ id: string; status: string; method: string }>`
    SELECT id, status, method FROM deliveries WHERE task_id = ${taskId} AND kind = 'turn' AND status IN (${open})
    UNION ALL
    -- An onMigrate hook a move noted on the task's row, not written as a delivery yet (schema 046): queued in its place.
    SELECT t.migrate_hook_id, 'pending', 'task/migrate' FROM tasks t WHERE t.id = ${taskId} AND ${hookPending('t')}
    ORDER BY id`.execute(db);
  return turns.rows;
}

/** The head turn when its handler runs (sent, or being sent); undefined when none does. */
const runningOf = (turns: { id: string; status: string }[]) => (turns[0] && turns[0].status !== 'pending' ? turns[0] : undefined);

/** `GET /tasks/{id}/turn`: needs `run` on the task's agent. */
export async function getTaskTurn(db: Db, perms: Permissions, taskId: string): Promise<TaskTurn> {
  const task = await taskById(db, perms, 'run', taskId);
  // Read after the task row: what the agent wrote for the turns counted here is up to this position.
  const turns = await openTurns(db, taskId);
  const running = runningOf(turns);
  return {
    task_id: taskId,
    busy: turns.length > 0,
    running_delivery_id: running ? String(running.id) : null,
    queued: turns.length - (running ? 1 : 0),
    last_sequence_id: Number(task.last_sequence_id),
  };
}

/**
 * Enqueues an interrupt of the task's running turn, unless one for it is open already. Undefined
 * when no turn runs. Call it with the task row locked.
 */
async function interruptRunningTurn(trx: Executor, taskId: string): Promise<string | undefined> {
  const running = runningOf(await openTurns(trx, taskId));
  if (!running) return undefined;
  const upTo = String(running.id);
  const pending = await trx
    .selectFrom('deliveries')
    .select('id')
    .where('task_id', '=', taskId)
    .where('kind', '=', 'interrupt')
    .where('status', 'in', OPEN_DELIVERY_STATUSES)
    .where(sql<boolean>`payload->>'up_to_delivery_id' = ${upTo}`)
    .executeTakeFirst();
  if (!pending) await enqueueDelivery(trx, { taskId, method: 'task/interrupt', upToDeliveryId: upTo });
  return upTo;
}

/** Locks the task row (as every writer of the task does first) and reads its version's policy. */
async function lockTask(trx: Executor, taskId: string) {
  return trx
    .selectFrom('tasks')
    .innerJoin('versions', 'versions.id', 'tasks.current_version_id')
    .select(['tasks.id', 'tasks.name', 'tasks.status', 'versions.double_texting'])
    .where('tasks.id', '=', taskId)
    .forNoKeyUpdate('tasks')
    .executeTakeFirstOrThrow();
}

/**
 * `POST /tasks/{id}/interrupt`: needs `run` on the task's agent. The running turn's handler is told
 * to stop (the task stays open); turns queued behind it go on as the policy queued them. No turn
 * running (or a finished task): 200 with nothing to do.
 */
export async function interruptTask(db: Db, perms: Permissions, taskId: string): Promise<InterruptResult> {
  await taskById(db, perms, 'run', taskId);
  return db.transaction().execute(async (trx) => {
    const task = await lockTask(trx, taskId);
    const upTo = await interruptRunningTurn(trx, taskId);
    const name = named(task.name, taskId);
    return upTo
      ? {
          task_id: taskId,
          interrupted: true,
          turn_delivery_id: upTo,
          detail: `Interrupting the running turn of task ${name} (delivery ${upTo}); the task stays open`,
        }
      : { task_id: taskId, interrupted: false, turn_delivery_id: null, detail: `Nothing to interrupt: no turn of task ${name} is running` };
  });
}

/**
 * Before a new event of the task is written (task row locked): refuses it under `reject` while a turn
 * is open. Returns the policy, for `deliverEvent`.
 */
export async function admitEvent(trx: Executor, taskId: string): Promise<DoubleTextingPolicy> {
  const task = await lockTask(trx, taskId);
  const policy = task.double_texting;
  if (policy === 'reject') {
    const turns = await openTurns(trx, taskId);
    if (turns.length > 0)
      throw conflict(
        'task_busy',
        `Task ${named(task.name, taskId)} is busy with a turn (delivery ${turns[0].id}) and its agent rejects events meanwhile (double_texting: reject); send it again when the agent is idle`,
      );
  }
  return policy;
}

/**
 * Delivers a new event under the policy: `enqueue` and `reject` queue a turn of its own; `merge` adds
 * it to the queued turn not sent yet, if there is one; `interrupt` does the same and interrupts the
 * running turn.
 */
export async function deliverEvent(trx: Executor, taskId: string, event: Event, policy: DoubleTextingPolicy): Promise<void> {
  if (policy === 'interrupt') await interruptRunningTurn(trx, taskId);
  if ((policy === 'merge' || policy === 'interrupt') && (await mergeIntoQueuedTurn(trx, taskId, event))) return;
  await enqueueDelivery(trx, { taskId, method: 'event/send', event });
}
