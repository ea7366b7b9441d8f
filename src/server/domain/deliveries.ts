/**
 * The completion lease of async deliveries (README "Delivery to agents"): an agent that answers a
 * delivery with `deferred: true` holds it, leased, until it reports that its handler finished. While
 * it is leased the task's next delivery waits (one in flight per task, in order). A lease ends with
 * the agent's completion, with its replica going away (the runtime saw the process exit), or when it
 * runs out without a renewal; the last two put the delivery back for redelivery.
 */
import { sql, type Kysely, type Selectable } from 'kysely';
import type { Delivery } from '../../contract/conversation.js';
import type { AcpCarriedCompletion, AcpMethod } from '../../contract/acp.js';
import type { Database, DeliveriesTable, Db } from '../store/db.js';
import { iso } from '../store/mappers.js';
import { executePrepared } from '../store/prepared.js';
import type { Permissions } from '../auth/policy.js';
import { conflict, DomainError, namedVersion, notFound } from './errors.js';
import { inCallerOrg, versionById } from './lookup.js';
import { DEV_IMAGE_PREFIX } from '../../contract/enums.js';
import { isRefusal, next } from './version-lifecycle.js';
import {
  announceDeliveries,
  completeHere,
  type CompletedHere,
  DELIVERY_CHANNEL,
  deliveryCommitted,
  dispatcherHere,
  type RunGrant,
  wakeDispatchers,
} from '../store/outbox.js';
import { runGrant, runnableTask } from './conversation.js';
import type { Tracing } from '../tracing/tracing.js';
import { agentServiceOf, recordAgentSpans } from './traces.js';

type Executor = Kysely<Database>;

/** Why a leased delivery went back to pending when its replica went (recorded as its last error). */
export const REPLICA_GONE_REASON = 'the agent process that took it exited before reporting its handler finished';
/**
 * Every replica of the version went at once: the runtime stopped them, or they were a previous
 * server's (killed, its agents gone with it). The platform's doing, not the version's: no retry
 * budget is spent, and a rollout does not count it against the version (rollouts.ts).
 */
export const REPLICAS_STOPPED_REASON = 'the version’s agent processes were stopped, or the server restarted, before the handler finished';
/**
 * A lease granted or last renewed before the server restarted ran out: its agent could not renew
 * it while no server ran (or went with the server). Like REPLICAS_STOPPED_REASON, the platform's
 * doing: no retry budget spent, not counted against a rollout (dispatcher.ts `inheritedBefore`).
 */
export const INHERITED_LEASE_REASON = 'its completion lease was taken before the server restarted and ran out without a renewal since';
/** The streaming_error of a message whose writer's process went away mid-message. */
export const WRITER_GONE_REASON = 'the agent process writing it exited before finishing it';

function toDelivery(row: Selectable<DeliveriesTable>): Delivery {
  return {
    id: String(row.id),
    task_id: row.task_id,
    method: row.method as AcpMethod,
    status: row.status,
    attempts: row.attempts,
    lease_expires_at: row.status === 'leased' ? iso(row.claimed_until) : null,
  };
}

/**
 * The delivery when the key may run its task's agent (404 as if it did not exist when it may not
 * discover it). Not locked: the change that follows is one conditional UPDATE.
 */
async function deliveryForAgent(db: Executor, perms: Permissions, deliveryId: string) {
  const row = await db
    .selectFrom('deliveries')
    .innerJoin('tasks', 'tasks.id', 'deliveries.task_id')
    .selectAll('deliveries')
    .select(['tasks.agent_id', 'tasks.namespace_id'])
    .where('deliveries.id', '=', deliveryId)
    .where(inCallerOrg(perms, 'tasks.namespace_id'))
    .executeTakeFirst();
  if (!row) throw notFound('Delivery', deliveryId);
  perms.require('run', { type: 'agent', id: row.agent_id, namespaceId: row.namespace_id }, `Delivery ${deliveryId}`);
  return row;
}

/**
 * `POST /deliveries/{id}/complete`: the agent's handler of the delivery finished (a failure was
 * already reported as a handler error). Done, and the task's next delivery may go. Completing a done
 * delivery again answers it as it is; one never sent, or one that failed, is a conflict.
 */
export async function completeDelivery(
  db: Db,
  perms: Permissions,
  deliveryId: string,
  reported?: { spans: readonly unknown[]; tracing?: Tracing },
): Promise<Delivery> {
  // Claimed but not acknowledged yet counts: a fast handler can finish before the dispatcher records
  // the acknowledgement (it then finds the row done and leaves it). One statement checks that the key
  // may run the task's agent, changes the row and wakes the dispatchers (the task's next delivery is
  // due), naming the task: this process's own at once, the other replicas' by NOTIFY only when none
  // runs here. When it changes nothing, the reads below say why. A dispatcher here writes it in its
  // next settling statement instead, with the claim of the task's next delivery (one round trip).
  const here = completeHere(db, deliveryId, runGrant(perms));
  if (here) {
    const completed = await here;
    if (completed) {
      await afterCompletedHere(db, perms.actor.orgId, completed, reported);
      return {
        id: completed.id,
        task_id: completed.task_id,
        method: completed.method as AcpMethod,
        status: 'done',
        attempts: completed.attempts,
        lease_expires_at: null,
      };
    }
    return explainUnchanged(db, perms, deliveryId);
  }
  const notify = !dispatcherHere();
  const done = await executePrepared(
    db,
    sql<Selectable<DeliveriesTable>>`
    WITH done AS (
      UPDATE deliveries SET status = 'done', claimed_by = NULL, claimed_until = NULL, leased_to = NULL, last_error = NULL, updated_at = now()
      FROM tasks
      WHERE deliveries.id = ${deliveryId} AND (deliveries.status IN ('in_flight', 'leased') OR (deliveries.status = 'pending' AND deliveries.attempts > 0))
        AND tasks.id = deliveries.task_id AND ${runnableTask(perms)}
      RETURNING deliveries.*
    )
    SELECT done.* ${notify ? sql`, pg_notify(${DELIVERY_CHANNEL}, done.task_id)` : sql``} FROM done`,
  );
  const delivery = done.rows[0];
  if (delivery) {
    // Only this task's next delivery came due: the dispatchers claim from it alone.
    wakeDispatchers(delivery.task_id);
    deliveryCommitted(delivery.task_id, notify);
    await recordReported(db, perms.actor.orgId, delivery.task_id, reported);
    return toDelivery(delivery);
  }
  return explainUnchanged(db, perms, deliveryId);
}

/**
 * Completions an agent carried in its answer to a later delivery (`completions_in_answer`, README
 * "Delivery to agents"), written by the dispatcher settling that answer (`complete`, its settling
 * statement): each as `completeDelivery` writes it, with the right of the answering agent alone
 * (its own tasks' deliveries, whatever its key may do). One that changes nothing (another agent's,
 * not open, a repeat) is left as it is: the agent took its answer as the report, so a delivery
 * still leased waits out its lease, as after a report that was lost.
 */
export async function completeCarried(
  db: Db,
  complete: (deliveryId: string, grant: RunGrant) => Promise<CompletedHere | undefined>,
  answering: { orgId: string; agentId: string },
  carried: readonly AcpCarriedCompletion[],
  tracing?: Tracing,
): Promise<void> {
  const grant: RunGrant = { orgId: answering.orgId, all: false, agentIds: [answering.agentId], namespaceIds: [] };
  await Promise.all(
    carried.map(async (report) => {
      const completed = await complete(report.id, grant);
      if (completed) await afterCompletedHere(db, answering.orgId, completed, report.spans ? { spans: report.spans, tracing } : undefined);
    }),
  );
}

/** One delivery of `POST /deliveries/complete`: as its own completion would answer, or why it was refused. */
export type ReportedCompletion = { id: string; delivery: Delivery } | { id: string; refused: DomainError };

/**
 * `POST /deliveries/complete`: each delivery completed as `completeDelivery` completes it (the same
 * checks of the key, the same answers), all at once: with a dispatcher here they go in its same
 * settling statement. A refusal answers its own delivery and leaves the others be.
 */
export function completeDeliveries(
  db: Db,
  perms: Permissions,
  reports: readonly { id: string; spans?: readonly unknown[] }[],
  tracing?: Tracing,
): Promise<ReportedCompletion[]> {
  return Promise.all(
    reports.map((report) =>
      completeDelivery(db, perms, report.id, report.spans ? { spans: report.spans, tracing } : undefined).then(
        (delivery): ReportedCompletion => ({ id: report.id, delivery }),
        (error: unknown): ReportedCompletion => {
          if (error instanceof DomainError) return { id: report.id, refused: error };
          throw error;
        },
      ),
    ),
  );
}

/**
 * The handler's spans (README "Traces"), with the first completion only (a repeat is not counted
 * twice): kept with the delivery's trace, their tokens added to the task.
 */
async function recordReported(db: Db, orgId: string, taskId: string, reported?: { spans: readonly unknown[]; tracing?: Tracing }) {
  if (!reported?.spans.length) return;
  const service = await agentServiceOf(db, taskId);
  await recordAgentSpans(db, reported.tracing, { orgId, taskId, service }, reported.spans);
}

/** A completion this process's dispatcher wrote: the task's next delivery woken unless it claimed it, the handler's spans kept. */
async function afterCompletedHere(db: Db, orgId: string, completed: CompletedHere, reported?: { spans: readonly unknown[]; tracing?: Tracing }) {
  if (!completed.handed_over) {
    wakeDispatchers(completed.task_id);
    deliveryCommitted(completed.task_id, false);
  }
  await recordReported(db, orgId, completed.task_id, reported);
}

/** A completion that changed nothing: the delivery as it is when done already, else why not. */
async function explainUnchanged(db: Db, perms: Permissions, deliveryId: string): Promise<Delivery> {
  const row = await deliveryForAgent(db, perms, deliveryId);
  if (row.status === 'done') return toDelivery(row);
  if (row.status === 'failed')
    throw conflict('delivery_failed', `Delivery ${deliveryId} failed (${row.last_error ?? 'its task failed'}); there is nothing to complete`);
  throw conflict('delivery_not_sent', `Delivery ${deliveryId} has not been sent to the agent yet`);
}

/**
 * `POST /deliveries/{id}/renew`: the handler still runs; the lease starts over. A delivery not
 * acknowledged yet, or done, is answered as it is; one released for redelivery (its lease ran out)
 * is 409 `lease_lost`: it will be delivered again.
 */
export async function renewDeliveryLease(db: Db, perms: Permissions, deliveryId: string): Promise<Delivery> {
  await deliveryForAgent(db, perms, deliveryId);
  const renewed = await sql<Selectable<DeliveriesTable>>`
    UPDATE deliveries SET claimed_until = now() + lease_ms * interval '1 millisecond', updated_at = now()
    WHERE id = ${deliveryId} AND status = 'leased' RETURNING *`.execute(db);
  if (renewed.rows[0]) return toDelivery(renewed.rows[0]);
  const row = await deliveryForAgent(db, perms, deliveryId);
  if (row.status === 'in_flight' || row.status === 'done') return toDelivery(row);
  throw conflict(
    'lease_lost',
    `Delivery ${deliveryId} is no longer leased (${row.status}): it ${row.status === 'failed' ? 'failed' : 'will be delivered again'}`,
  );
}

/**
 * `GET /versions/{id}/deliveries/stream` may open: a dev version (image `dev://`, made by `agentctl
 * dev`) whose processes may still register, and a caller with write on its agent (who may start them).
 */
export async function devVersionForPull(db: Db, perms: Permissions, versionId: string): Promise<{ id: string }> {
  const version = await versionById(db, perms, 'write', versionId);
  if (!version.image_url.startsWith(DEV_IMAGE_PREFIX))
    throw conflict(
      'not_a_dev_version',
      `Version ${namedVersion(version)} is not a dev version (its image is ${version.image_url}): its deliveries are pushed to its processes`,
    );
  if (isRefusal(next(version.status, 'registered')))
    throw conflict('invalid_transition', `Version ${namedVersion(version)} is ${version.status}; start a new one with \`agentctl dev\``);
  return { id: version.id };
}

/** `POST /deliveries/{id}/answer` may report on the delivery: write on its task's agent (like the stream it came on). */
export async function deliveryForAnswer(db: Db, perms: Permissions, deliveryId: string): Promise<Delivery> {
  const row = await deliveryForAgent(db, perms, deliveryId);
  perms.require('write', { type: 'agent', id: row.agent_id, namespaceId: row.namespace_id }, `Delivery ${deliveryId}`);
  return toDelivery(row);
}

/** The delivery as it is now (after an answer was settled). */
export async function deliveryNow(db: Db, deliveryId: string): Promise<Delivery> {
  const row = await db.selectFrom('deliveries').selectAll().where('id', '=', deliveryId).executeTakeFirstOrThrow();
  return toDelivery(row);
}

/**
 * The replica at `acpUrl` of the version (every replica, when null) went away: what it held leased
 * goes back for redelivery at once. A replica that went alone counts as a failed attempt against the
 * retry budget; every replica at once (the runtime stopped them, the server restarted) does not. Returns
 * the tasks whose turns it released: once committed, their messages still streaming end INTERRUPTED
 * (`interruptStreams`).
 */
export async function releaseLeases(trx: Executor, versionId: string, acpUrl: string | null): Promise<string[]> {
  const released = await sql<{ task_id: string }>`
    UPDATE deliveries SET ${releasedByGoneReplica(acpUrl === null)}
    WHERE status = 'leased' AND version_id = ${versionId} ${acpUrl === null ? sql`` : sql`AND leased_to = ${acpUrl}`}
    RETURNING task_id`.execute(trx);
  if (released.rows.length > 0) await announceDeliveries(trx);
  return released.rows.map((r) => r.task_id);
}

/**
 * The columns of a delivery its replica's going put back for redelivery at once (an UPDATE's SET
 * list): by `releaseLeases`, and by the dispatcher's lease write that finds the replica gone already.
 * Every replica at once (`every`) is the platform's doing: no failure of the agent, so no retry
 * budget spent.
 */
export function releasedByGoneReplica(every: boolean) {
  return sql`status = 'pending', leased_to = NULL, claimed_by = NULL, claimed_until = NULL,
    last_error = ${every ? REPLICAS_STOPPED_REASON : REPLICA_GONE_REASON},
    failing_since = ${every ? sql`failing_since` : sql`COALESCE(failing_since, now())`}, next_attempt_at = now(), updated_at = now()`;
}

/** What the delivery queue holds now: open deliveries by status, and how long the oldest has waited. */
export interface DeliveryQueueStats {
  open: Record<'pending' | 'in_flight' | 'leased', number>;
  /** Seconds since the oldest open delivery was created; 0 when none is open. */
  oldestAgeSeconds: number;
}

/** One query over the open deliveries (the partial index `deliveries_open` holds exactly these). */
export async function deliveryQueueStats(db: Executor): Promise<DeliveryQueueStats> {
  const rows = await sql<{ status: 'pending' | 'in_flight' | 'leased'; n: number; oldest: number }>`
    SELECT status, count(*)::int AS n, COALESCE(extract(epoch FROM now() - min(created_at)), 0)::float8 AS oldest
    FROM deliveries WHERE status IN ('pending', 'in_flight', 'leased') GROUP BY status`.execute(db);
  const open = { pending: 0, in_flight: 0, leased: 0 };
  let oldestAgeSeconds = 0;
  for (const row of rows.rows) {
    open[row.status] = row.n;
    oldestAgeSeconds = Math.max(oldestAgeSeconds, Number(row.oldest));
  }
  return { open, oldestAgeSeconds };
}
