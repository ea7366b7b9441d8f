/**
 * The transactional outbox (README "Delivery to agents, in short"): creating a task, an event or a cancel writes a
 * `deliveries` row in the same transaction, so a delivery exists exactly when its cause committed.
 * The dispatcher (delivery/dispatcher.ts) sends them. At the store level: the domain writes it, delivery reads it.
 */
import { sql, type Kysely, type RawBuilder } from 'kysely';
import type { AcpMethod, AcpMigration } from '../../contract/acp.js';
import type { Event } from '../../contract/conversation.js';
import type { Database, Db } from './db.js';
import { notifyOnCommit } from './notifier.js';
import { currentTraceContext } from '../tracing/context.js';

/** The NOTIFY channel that wakes every replica's dispatcher when a delivery commits (PostgreSQL). */
export const DELIVERY_CHANNEL = 'agentctl_delivery';

/**
 * What a delivery carries besides the agent and the task, which the dispatcher reads fresh when it
 * sends (so a migrated task is described as it is now).
 */
export type DeliveryInput = (
  | { taskId: string; method: 'task/create'; params: Record<string, unknown> | null }
  | { taskId: string; method: 'event/send'; event: Event }
  | { taskId: string; method: 'task/cancel' }
  /** A control delivery: interrupt the task's turns up to this delivery. */
  | { taskId: string; method: 'task/interrupt'; upToDeliveryId: string }
) & {
  /** Claimed highest first: live work 0 (the default), a rehearsal's replay REHEARSAL_PRIORITY. */
  priority?: number;
};

/** The priority of a rehearsal's deliveries: claimed after every due delivery of live work. */
export const REHEARSAL_PRIORITY = -1;

export type DeliveryPayload = {
  params?: Record<string, unknown> | null;
  /** event/send: the newest event of the turn. */
  event?: Event;
  /** event/send merged under the `merge` or `interrupt` policy: every event of the turn, oldest first. */
  events?: Event[];
  /** task/interrupt: the newest turn delivery it stops. */
  up_to_delivery_id?: string;
  /** task/migrate: the versions the task moved between. */
  migration?: AcpMigration;
};

const wakers = new Set<(taskId?: string) => void>();

/**
 * Registers an in-process dispatcher (PGlite) to be woken on enqueue; returns the unregister function.
 * `taskId`: only that task's next delivery may have come due (an agent's completion).
 */
export function onDeliveryEnqueued(wake: (taskId?: string) => void): () => void {
  wakers.add(wake);
  return () => wakers.delete(wake);
}

/**
 * Writes a delivery in the caller's transaction. Call it after the task row is locked (or
 * created), so per-task deliveries are numbered in the task's order.
 */
export async function enqueueDelivery(trx: Kysely<Database>, input: DeliveryInput): Promise<void> {
  const payload: DeliveryPayload =
    input.method === 'task/create'
      ? { params: input.params }
      : input.method === 'event/send'
        ? { event: input.event }
        : input.method === 'task/interrupt'
          ? { up_to_delivery_id: input.upToDeliveryId }
          : {};
  const method: AcpMethod = input.method;
  // The trace of the request that enqueued it goes with it: its delivery and the agent's handler join that trace.
  const traced = currentTraceContext(input.taskId);
  await trx
    .insertInto('deliveries')
    .values({
      kind: input.method === 'task/interrupt' ? 'interrupt' : 'turn',
      task_id: input.taskId,
      version_id: null,
      method,
      event_id: input.method === 'event/send' ? input.event.id : null,
      payload: JSON.stringify(payload),
      next_attempt_at: new Date(),
      failing_since: null,
      claimed_by: null,
      claimed_until: null,
      last_error: null,
      created_at: new Date(),
      updated_at: new Date(),
      ...(traced ? { traceparent: traced.traceparent, tracestate: traced.tracestate } : {}),
      ...(input.priority ? { priority: input.priority } : {}),
    })
    .execute();
  // A turn can only be due once its task's earlier ones are done: only that task need be looked at.
  // An interrupt goes while its task's turn is in flight, which a wake naming the task waits behind.
  await announceDeliveries(trx, input.method === 'task/interrupt' ? undefined : input.taskId);
}

/**
 * The INSERT of an event/send turn for each row of the statement's CTE `from` (columns `task_id`,
 * `id`: the event's id, `record`: the Event as jsonb), for a statement that writes the event in the
 * same round trip (conversation.ts). The same delivery as `enqueueDelivery` writes; the caller
 * NOTIFYs DELIVERY_CHANNEL with the task id in that statement and calls `wakeDispatchers` and
 * `deliveryCommitted` once it committed. With `claimed`, a claim at insert (`InsertClaim`): the row
 * goes in claimed by the dispatcher where the CTE `claimed.cte` (one row: `ok` boolean,
 * `version_id`) says it may be, and the INSERT returns what `InsertClaim.read` reads.
 */
export function insertEventDeliveries(from: string, taskId: string, claimed?: { claim: InsertClaim; cte: string }): RawBuilder<unknown> {
  const traced = currentTraceContext(taskId);
  const method: AcpMethod = 'event/send';
  // Claimed or not, one row: each claimed column is its claimed value where the CTE says ok.
  const ok = claimed && sql.ref(`${claimed.cte}.ok`);
  const either = (yes: () => RawBuilder<unknown>, no: RawBuilder<unknown>) => (ok ? sql`CASE WHEN ${ok} THEN ${yes()} ELSE ${no} END` : no);
  return sql`INSERT INTO deliveries (kind, task_id, version_id, method, event_id, payload, next_attempt_at, created_at, updated_at, traceparent, tracestate,
      status, claimed_by, claimed_until, attempts)
    SELECT 'turn', f.task_id, ${either(() => sql.ref(`${claimed!.cte}.version_id`), sql`NULL`)}, ${method}, f.id, jsonb_build_object('event', f.record), now(), now(), now(),
      ${traced?.traceparent ?? null}, ${traced?.tracestate ?? null},
      ${either(() => sql`'in_flight'`, sql`'pending'`)}, ${either(() => sql`${claimed!.claim.claimer}`, sql`NULL`)},
      ${either(() => sql`now() + ${claimed!.claim.claimMs} * interval '1 millisecond'`, sql`NULL`)}, ${either(() => sql`1`, sql`0`)}
    FROM ${sql.table(from)} AS f ${claimed ? sql`CROSS JOIN ${sql.table(claimed.cte)}` : sql``}
    ${claimed ? sql`RETURNING id, task_id, method, kind, 'pending'::text AS prior_status, payload, attempts, failing_since, last_error, version_id, traceparent, tracestate, created_at, status` : sql``}`;
}

/** `insertEventDeliveries`' parameters in order, for a statement shape (store/prepared.ts StatementShapes). */
export function insertEventDeliveryValues(taskId: string, claim?: InsertClaim): unknown[] {
  const traced = currentTraceContext(taskId);
  const method: AcpMethod = 'event/send';
  return [method, traced?.traceparent ?? null, traced?.tracestate ?? null, ...(claim ? [claim.claimer, claim.claimMs] : [])];
}

/**
 * A claim at insert, offered by this process's dispatcher (`insertClaim`): a statement that writes a
 * task's turn delivery writes it already claimed by the dispatcher (in flight, the attempt counted)
 * when nothing of the task is open before it, and hands the row over after its commit, to be sent
 * with no claim statement of its own. A slot of the dispatcher is held for it until `settle`.
 */
export interface InsertClaim {
  claimer: string;
  claimMs: number;
  /** SQL over the task row `t` as the statement's snapshot sees it: nothing of the task is open, and its version takes pushed deliveries. */
  claimable: () => RawBuilder<unknown>;
  /** `claimable`'s form and its parameters in order, for a statement shape (store/prepared.ts StatementShapes). */
  shape: string;
  values: readonly unknown[];
  /** SQL: what the dispatcher reads of each claimed delivery of `from` (a row source with the INSERT's RETURNING columns). */
  read: (from: RawBuilder<unknown>) => RawBuilder<unknown>;
  /** Once, after the statement (committed or failed): the row it claimed, as `read` read it, to be sent now; undefined gives the slot back. */
  settle: (claimed: unknown) => void;
}

type InsertClaimer = (taskId: string) => Promise<InsertClaim | undefined>;
const insertClaimers = new Map<Db, InsertClaimer>();

/** Registers the dispatcher on `db` that claims deliveries as they are inserted; returns the unregister function. */
export function onInsertClaim(db: Db, take: InsertClaimer): () => void {
  insertClaimers.set(db, take);
  return () => {
    if (insertClaimers.get(db) === take) insertClaimers.delete(db);
  };
}

/**
 * A claim at insert of `taskId`'s turn when a dispatcher on `db` runs in this process and has room for
 * another flight; else undefined. It may first wait a statement of that dispatcher's (see `insertClaim`
 * in dispatcher.ts): the write that frees the task, or the claim that holds the free slots.
 */
export async function insertClaim(db: Db, taskId: string): Promise<InsertClaim | undefined> {
  return insertClaimers.get(db)?.(taskId);
}

/**
 * Adds `event` to the task's last queued turn when that is an event/send not sent yet (the `merge`
 * and `interrupt` policies): the agent gets them together as one turn. False when there is none
 * (the caller enqueues a delivery of its own). Call it with the task row locked.
 */
export async function mergeIntoQueuedTurn(trx: Kysely<Database>, taskId: string, event: Event): Promise<boolean> {
  const last = await trx
    .selectFrom('deliveries')
    .select(['id', 'method', 'status', 'attempts', 'payload'])
    // An onMigrate hook pending on the task's row after it (schema 046) is the last queued turn.
    .select(
      sql<boolean>`EXISTS (SELECT 1 FROM tasks t WHERE t.id = deliveries.task_id AND ${hookPending('t')} AND t.migrate_hook_id > deliveries.id)`.as(
        'hook_after',
      ),
    )
    .where('task_id', '=', taskId)
    .where('kind', '=', 'turn')
    .orderBy('id', 'desc')
    .limit(1)
    .forUpdate()
    .executeTakeFirst();
  if (last?.method !== 'event/send' || last.status !== 'pending' || last.attempts !== 0 || last.hook_after) return false;
  const payload = last.payload as DeliveryPayload;
  const events = [...(payload.events ?? (payload.event ? [payload.event] : [])), event];
  await trx
    .updateTable('deliveries')
    .set({ payload: JSON.stringify({ event, events } satisfies DeliveryPayload), updated_at: new Date() })
    .where('id', '=', last.id)
    .execute();
  return true;
}

/**
 * SQL: task row `t` (an alias) has an onMigrate hook pending: a move noted it on the row (schema 046)
 * and the dispatcher has not written it as a delivery yet (its batch is still listed). The hook's
 * place in the task's queue is `t.migrate_hook_id`. The column is asked first: a row with no hook
 * (nearly every row) does not read the batches.
 */
export function hookPending(t: string): RawBuilder<boolean> {
  const row = sql.ref(t);
  return sql<boolean>`(${row}.migrate_hook_batch IS NOT NULL AND EXISTS (SELECT 1 FROM migrate_hook_batches hb WHERE hb.id = ${row}.migrate_hook_batch))`;
}

/**
 * The wake-up a move sends when it noted onMigrate hooks on task rows (domain/migration-hooks.ts),
 * in place of a task id: the dispatcher writes them as deliveries before its claim.
 */
export const HOOKS_NOTICE = 'migrate_hooks';

/**
 * Wakes the dispatchers when the caller's transaction made a delivery due (a new one, a completed
 * one that unblocks the task's next, a released lease). `notice`: a task id when only that task's
 * next turn may have come due (see `wakeDispatchers`), HOOKS_NOTICE for a move's hooks.
 */
export async function announceDeliveries(trx: Kysely<Database>, notice?: string): Promise<void> {
  // At commit, to every replica's LISTEN (PostgreSQL).
  await notifyOnCommit(trx, DELIVERY_CHANNEL, notice ?? '');
  // In this process (PGlite dispatchers): the claim queues behind this transaction on PGlite's one
  // connection, so it sees the row.
  wakeDispatchers(notice);
}

const committedWakers = new Set<(taskId: string, notified: boolean) => void>();

/**
 * Registers a dispatcher (PostgreSQL) to be handed, in process, the task whose next delivery a
 * statement of this process committed; returns the unregister function.
 */
export function onDeliveryCommitted(wake: (taskId: string, notified: boolean) => void): () => void {
  committedWakers.add(wake);
  return () => committedWakers.delete(wake);
}

/**
 * After the commit of a statement that made `taskId`'s next delivery due: this process's dispatchers
 * claim it at once instead of after a notification's trip through the database. `notified`: the
 * statement NOTIFYed DELIVERY_CHANNEL with the task id (they then skip that echo of it).
 */
export function deliveryCommitted(taskId: string, notified: boolean): void {
  for (const wake of committedWakers) wake(taskId, notified);
}

/**
 * Whether a dispatcher of this process takes the hand-over (`deliveryCommitted`): a completion then
 * need not NOTIFY the other replicas (on PostgreSQL a NOTIFY serialises every notifying commit of
 * the cluster behind one lock), since this one claims the task's next delivery at once.
 */
export function dispatcherHere(): boolean {
  return committedWakers.size > 0;
}

/** Who may run a task's agent, as data (domain/conversation.ts `runGrant`): checked in a statement that serves several callers. */
export interface RunGrant {
  orgId: string;
  all: boolean;
  agentIds: string[];
  namespaceIds: string[];
}

/** What a completion written by this process's dispatcher changed, for the agent's answer. */
export interface CompletedHere {
  id: string;
  task_id: string;
  method: string;
  attempts: number;
  /** The dispatcher claimed the task's next delivery in the same statement and sends it on: nobody else need be woken. */
  handed_over: boolean;
}

type Completer = (deliveryId: string, grant: RunGrant) => Promise<CompletedHere | undefined>;
/** By database handle: a process may serve several databases (tests), each with its own dispatcher. */
const completers = new Map<Db, Completer>();

/** Registers a dispatcher on `db` to write agents' completions in its settling statements; returns the unregister function. */
export function onCompletionHere(db: Db, complete: Completer): () => void {
  completers.set(db, complete);
  return () => {
    if (completers.get(db) === complete) completers.delete(db);
  };
}

/**
 * `POST /deliveries/{id}/complete` through this process's dispatcher when one runs: the completion
 * goes in its next settling statement, with the claim of the task's next delivery (one round trip
 * for both, shared with the other answers that came meanwhile). Null when none runs here; undefined
 * when the statement changed nothing (not allowed, or not open).
 */
export function completeHere(db: Db, deliveryId: string, grant: RunGrant): Promise<CompletedHere | undefined> | null {
  return completers.get(db)?.(deliveryId, grant) ?? null;
}

/**
 * Wakes this process's PGlite dispatchers (on PostgreSQL they listen for the NOTIFY instead, whose
 * payload is the task id when the wake is for one task). With `taskId`, only that task's next
 * delivery may have come due: the dispatcher claims from it alone (HOOKS_NOTICE: a move's hooks).
 */
export function wakeDispatchers(taskId?: string): void {
  for (const wake of wakers) wake(taskId);
}
