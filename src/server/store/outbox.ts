/**
 * The transactional outbox (README "Delivery to agents, in short"): creating a task, an event or a cancel writes a
 * `deliveries` row in the same transaction, so a delivery exists exactly when its cause committed.
 * The dispatcher (delivery/dispatcher.ts) sends them. At the store level: the domain writes it, delivery reads it.
 */
import { sql, type Kysely } from 'kysely';
import type { AcpMethod, AcpMigration } from '../../contract/acp.js';
import type { Event } from '../../contract/conversation.js';
import type { Database } from './db.js';

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
) & {
  /** Claimed highest first: live work 0 (the default), a rehearsal's replay REHEARSAL_PRIORITY. */
  priority?: number;
};

/** The priority of a rehearsal's deliveries: claimed after every due delivery of live work. */
export const REHEARSAL_PRIORITY = -1;

export type DeliveryPayload = { params?: Record<string, unknown> | null; event?: Event; migration?: AcpMigration };

const wakers = new Set<() => void>();

/** Registers an in-process dispatcher (PGlite) to be woken on enqueue; returns the unregister function. */
export function onDeliveryEnqueued(wake: () => void): () => void {
  wakers.add(wake);
  return () => wakers.delete(wake);
}

/**
 * Writes a delivery in the caller's transaction. Call it after the task row is locked (or
 * created), so per-task deliveries are numbered in the task's order.
 */
export async function enqueueDelivery(trx: Kysely<Database>, input: DeliveryInput): Promise<void> {
  const payload: DeliveryPayload = input.method === 'task/create' ? { params: input.params } : input.method === 'event/send' ? { event: input.event } : {};
  const method: AcpMethod = input.method;
  await trx
    .insertInto('deliveries')
    .values({
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
      ...(input.priority ? { priority: input.priority } : {}),
    })
    .execute();
  await announceDeliveries(trx);
}

/**
 * Wakes the dispatchers when the caller's transaction made a delivery due (a new one, a completed
 * one that unblocks the task's next, a released lease).
 */
export async function announceDeliveries(trx: Kysely<Database>): Promise<void> {
  // Delivered at commit, to every replica's LISTEN (PostgreSQL).
  await sql`SELECT pg_notify(${DELIVERY_CHANNEL}, '')`.execute(trx);
  // In this process (PGlite dispatchers): the claim queues behind this transaction on PGlite's one
  // connection, so it sees the row.
  wakeDispatchers();
}

/** Wakes this process's PGlite dispatchers (on PostgreSQL they listen for the NOTIFY instead). */
export function wakeDispatchers(): void {
  for (const wake of wakers) wake();
}
