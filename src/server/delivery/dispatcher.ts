/**
 * The dispatcher (README "Delivery to agents, in short"): one per server replica. It claims outbox rows with
 * `FOR UPDATE SKIP LOCKED`, at most one in flight per task and in order per task, and POSTs each as
 * signed JSON-RPC to a live replica of the task's current version (read at claim time, so a
 * migrated task's next delivery reaches its new version). Failures retry with exponential backoff;
 * after the retry budget the task becomes FAILED with the reason. At least once: an agent
 * deduplicates by the JSON-RPC id (the delivery id). A claim left by a dispatcher that died (its
 * server was killed mid-call) is taken back as soon as it is seen gone, not when the claim runs out.
 *
 * An async agent that answers `deferred: true` takes the offered completion lease: the delivery
 * stays `leased` (the task's next one waits) until the agent reports its handler finished
 * (domain/deliveries.ts); when its replica goes or the lease runs out unrenewed it is sent again.
 */
import { randomUUID } from 'node:crypto';
import { sql } from 'kysely';
import { Agent, request } from 'undici';
import { ACP_PATH, SIGNATURE_HEADER, signBody, type AcpAgentRef, type AcpMethod, type AcpRequest, type AcpResponse } from '../../contract/acp.js';
import { MessageContent, OPEN_DELIVERY_STATUSES } from '../../contract/conversation.js';
import type { Task } from '../../contract/resources.js';
import { isTerminalTask } from '../../contract/lifecycle.js';
import type { Selectable } from 'kysely';
import type { Db, Store, TasksTable } from '../store/db.js';
import { toTask } from '../store/mappers.js';
import { signingSecretFor } from '../domain/registration.js';
import { settleDraining } from '../domain/events.js';
import { createMessage, recordTaskChange } from '../domain/conversation.js';
import { unrestricted } from '../auth/policy.js';
import { DomainError } from '../domain/errors.js';
import { DELIVERY_CHANNEL, onDeliveryEnqueued, type DeliveryPayload } from '../store/outbox.js';

/** The open statuses as an SQL list, for the claim statement. */
const OPEN = sql.join(OPEN_DELIVERY_STATUSES.map((status) => sql.lit(status)));

export interface DispatcherOptions {
  /** How long a delivery may keep failing before its task becomes FAILED (default 10 minutes). */
  retryBudgetMs?: number;
  /** First retry delay, doubled per attempt up to `backoffMaxMs`. */
  backoffBaseMs?: number;
  backoffMaxMs?: number;
  /** One agent call: connection, headers and body. */
  requestTimeoutMs?: number;
  /** Safety-net poll (retries come due, missed wake-ups). */
  pollMs?: number;
  /** Deliveries in flight at once from this replica (each to a different task). */
  maxInFlight?: number;
  /**
   * How long a deferred (acknowledged, handler running) delivery stays leased without a renewal or
   * completion before it is sent again (default 5 minutes; the ADK renews it every third of that).
   */
  leaseMs?: number;
  /** Where failures are reported; never given secrets. */
  log?: (message: string) => void;
}

export const DEFAULT_RETRY_BUDGET_MS = 10 * 60 * 1000;
export const DEFAULT_COMPLETION_LEASE_MS = 5 * 60 * 1000;
/** Recorded when a lease ran out: the agent neither completed nor renewed it. */
const LEASE_EXPIRED_REASON = 'the agent did not report its handler finished within the completion lease';

/**
 * Dispatchers running in this process. On PGlite they are all there are (one process opens a data
 * directory): a claim held by any other was left by a server that died.
 */
const RUNNING_HERE = new Set<string>();

/** A claimed delivery with what its request needs, read in the claiming statement. */
interface Claimed {
  id: string;
  task_id: string;
  method: AcpMethod;
  payload: DeliveryPayload;
  attempts: number;
  /** Set by failed attempts and lost leases; the retry budget runs from it. */
  failing_since: Date | null;
  last_error: string | null;
  /** The task's current version at claim time. */
  version_id: string;
  task_row: Selectable<TasksTable>;
  agent_name: string;
  namespace_slug: string;
  org_id: string;
  acp_type: string;
  /** Live replicas of the version, in a stable order. */
  acp_urls: string[];
}

/** A stable choice among a version's replicas: the same task goes to the same replica. */
function replicaIndex(taskId: string, count: number): number {
  let hash = 0x811c9dc5;
  for (let i = 0; i < taskId.length; i++) hash = Math.imul(hash ^ taskId.charCodeAt(i), 0x01000193) >>> 0;
  return hash % count;
}

class DeliveryFailure extends Error {}

export class Dispatcher {
  readonly id = `dsp_${randomUUID()}`;
  private readonly db: Db;
  private readonly http = new Agent({ keepAliveTimeout: 10_000, connections: 128 });
  private readonly options: Required<Omit<DispatcherOptions, 'log'>> & Pick<DispatcherOptions, 'log'>;
  private readonly inFlight = new Set<Promise<void>>();
  private readonly secrets = new Map<string, string>();
  private pumping = false;
  private again = false;
  private closed = false;
  private timer: NodeJS.Timeout | undefined;
  private unsubscribe: () => void;
  private listener: { end(): Promise<void> } | undefined;
  private sweep: Promise<void> = Promise.resolve();

  constructor(
    private readonly store: Store,
    options: DispatcherOptions = {},
  ) {
    this.db = store.db;
    const requestTimeoutMs = options.requestTimeoutMs ?? 30_000;
    const leaseMs = options.leaseMs ?? DEFAULT_COMPLETION_LEASE_MS;
    // Agents renew every third of the lease: shorter than a second leaves no room for a renewal.
    if (!Number.isInteger(leaseMs) || leaseMs < 1000)
      throw new Error(`The completion lease must be a whole number of milliseconds, at least 1000 (got ${leaseMs})`);
    this.options = {
      retryBudgetMs: options.retryBudgetMs ?? DEFAULT_RETRY_BUDGET_MS,
      backoffBaseMs: options.backoffBaseMs ?? 500,
      backoffMaxMs: options.backoffMaxMs ?? 30_000,
      requestTimeoutMs,
      pollMs: options.pollMs ?? 1000,
      maxInFlight: options.maxInFlight ?? 64,
      leaseMs,
      log: options.log,
    };
    // On PGlite an in-process wake is the signal (its claim queues behind the enqueuing transaction);
    // on PostgreSQL it would come before the commit and claim nothing: the LISTEN wakes it after.
    this.unsubscribe = store.engine === 'pglite' ? onDeliveryEnqueued(() => this.wake()) : () => {};
  }

  /** Starts polling and, on PostgreSQL, listening for deliveries committed by any replica. */
  async start(): Promise<void> {
    RUNNING_HERE.add(this.id);
    if (this.store.engine === 'postgres' && this.store.databaseUrl) await this.listen(this.store.databaseUrl);
    await this.releaseOrphanedClaims().catch((error) => this.options.log?.(`dispatcher: ${(error as Error).message}`));
    this.schedulePoll();
    this.wake();
  }

  /**
   * In-flight claims of a dispatcher that is gone (its server was killed mid-call) come due now,
   * not when the claim runs out (a minute later, the task's next deliveries waiting behind it). A
   * dispatcher lives as long as its LISTEN session on PostgreSQL (named with its id), in this
   * process on PGlite. Leased deliveries are not claims: their agent may still be running them.
   */
  private async releaseOrphanedClaims(): Promise<void> {
    let alive;
    if (this.store.engine === 'pglite') alive = sql`d.claimed_by IN (${sql.join([...RUNNING_HERE])})`;
    // Without a session of its own (no URL to LISTEN on) it cannot tell a gone dispatcher from a live one.
    else if (this.listener) alive = sql`EXISTS (SELECT 1 FROM pg_stat_activity a WHERE a.application_name = d.claimed_by)`;
    else return;
    await sql`
      UPDATE deliveries d SET claimed_until = now(), updated_at = now()
      WHERE d.status = 'in_flight' AND d.claimed_until > now() AND d.claimed_by <> ${this.id} AND NOT (${alive})`.execute(this.db);
  }

  private async listen(url: string): Promise<void> {
    const pg = (await import('pg')).default;
    // Named with this dispatcher's id: other replicas see it alive while this session is (releaseOrphanedClaims).
    const client = new pg.Client({ connectionString: url, application_name: this.id });
    // A lost LISTEN connection only slows wake-ups to the poll interval; reconnect in the background.
    client.on('error', () => {
      this.listener = undefined;
      if (!this.closed) setTimeout(() => void this.listen(url).catch(() => {}), 1000).unref();
    });
    client.on('notification', () => this.wake());
    await client.connect();
    await client.query(`LISTEN ${DELIVERY_CHANNEL}`);
    if (this.closed) await client.end();
    else this.listener = client;
  }

  private schedulePoll(): void {
    if (this.closed) return;
    this.timer = setTimeout(() => {
      this.sweep = this.releaseOrphanedClaims()
        .catch((error) => this.options.log?.(`dispatcher: ${(error as Error).message}`))
        .finally(() => {
          this.wake();
          this.schedulePoll();
        });
    }, this.options.pollMs);
    this.timer.unref();
  }

  /** Claims and sends whatever is due; coalesces concurrent wake-ups. */
  wake(): void {
    if (this.closed) return;
    if (this.pumping) {
      this.again = true;
      return;
    }
    this.pumping = true;
    setImmediate(() => void this.pump());
  }

  private async pump(): Promise<void> {
    try {
      do {
        this.again = false;
        const room = this.options.maxInFlight - this.inFlight.size;
        if (room <= 0 || this.closed) break;
        const claimed = await this.claim(room);
        for (const delivery of claimed) {
          const flight: Promise<void> = this.deliver(delivery)
            .catch((error) => this.options.log?.(`delivery ${delivery.id}: ${(error as Error).message}`))
            .finally(() => {
              this.inFlight.delete(flight);
              this.wake();
            });
          this.inFlight.add(flight);
        }
        if (claimed.length === room) this.again = true;
      } while (this.again && !this.closed);
    } catch (error) {
      if (!this.closed) this.options.log?.(`dispatcher: ${(error as Error).message}`);
    } finally {
      this.pumping = false;
    }
  }

  /**
   * The head of each task's queue, when it is due, its claim free (or expired: its dispatcher
   * died; or its completion lease ran out) and the task's current version has a live replica. Rows
   * another dispatcher holds are skipped; a later row of a task waits while an earlier one is open
   * (leased included: one in flight per task).
   */
  private async claim(limit: number): Promise<Claimed[]> {
    // Long enough for one call; a dispatcher that dies mid-call leaves the row to be claimed again.
    const claimMs = this.options.requestTimeoutMs * 2 + 5000;
    // One statement claims and reads what the request needs: the task as it is now, its agent, and
    // the live replicas of its current version.
    const result = await sql<Claimed>`
      WITH claimed AS (
        UPDATE deliveries AS d
        SET status = 'in_flight', claimed_by = ${this.id}, claimed_until = now() + ${claimMs} * interval '1 millisecond',
            version_id = c.current_version_id, attempts = d.attempts + 1, updated_at = now(), leased_to = NULL,
            -- A lease that ran out is a failed attempt: the retry budget runs from the first.
            failing_since = CASE WHEN d.status = 'leased' THEN COALESCE(d.failing_since, now()) ELSE d.failing_since END,
            last_error = CASE WHEN d.status = 'leased' THEN ${LEASE_EXPIRED_REASON} ELSE d.last_error END
        FROM (
          SELECT o.id, t.current_version_id
          FROM deliveries o
          JOIN tasks t ON t.id = o.task_id
          WHERE o.status IN (${OPEN})
            AND ((o.status = 'pending' AND o.next_attempt_at <= now()) OR (o.status IN ('in_flight', 'leased') AND o.claimed_until < now()))
            AND NOT EXISTS (SELECT 1 FROM deliveries e WHERE e.task_id = o.task_id AND e.status IN (${OPEN}) AND e.id < o.id)
            AND EXISTS (SELECT 1 FROM version_replicas r WHERE r.version_id = t.current_version_id AND r.live)
          ORDER BY o.priority DESC, o.id
          LIMIT ${limit}
          FOR UPDATE OF o SKIP LOCKED
        ) AS c
        WHERE d.id = c.id
        RETURNING d.id, d.task_id, d.method, d.payload, d.attempts, d.failing_since, d.last_error, c.current_version_id AS version_id
      )
      SELECT claimed.id::text AS id, claimed.task_id, claimed.method, claimed.payload, claimed.attempts, claimed.failing_since, claimed.last_error, claimed.version_id,
             row_to_json(t) AS task_row, a.name AS agent_name, n.slug AS namespace_slug, n.org_id, v.acp_type,
             ARRAY(SELECT r.acp_url FROM version_replicas r WHERE r.version_id = claimed.version_id AND r.live ORDER BY r.replica_key) AS acp_urls
      FROM claimed
      JOIN tasks t ON t.id = claimed.task_id
      JOIN agents a ON a.id = t.agent_id
      JOIN namespaces n ON n.id = a.namespace_id
      JOIN versions v ON v.id = claimed.version_id
      ORDER BY claimed.id`.execute(this.db);
    return result.rows;
  }

  private async secretFor(versionId: string): Promise<string> {
    let secret = this.secrets.get(versionId);
    if (!secret) {
      secret = await signingSecretFor(this.db, versionId);
      this.secrets.set(versionId, secret);
    }
    return secret;
  }

  private async deliver(delivery: Claimed): Promise<void> {
    let target = '';
    try {
      if (delivery.acp_urls.length === 0) {
        // Its last replica went away since the claim: hold it until one registers.
        await this.release(delivery, null);
        return;
      }
      // Lost leases (an agent process dying in the handler, again and again) count like failed
      // calls: past the budget the task fails instead of the delivery going round for ever.
      if (delivery.failing_since && Date.now() - new Date(delivery.failing_since).getTime() >= this.options.retryBudgetMs) {
        await this.failTask(delivery, delivery.last_error ?? 'it kept failing');
        return;
      }
      target = delivery.acp_urls[replicaIndex(delivery.task_id, delivery.acp_urls.length)];
      const agent: AcpAgentRef = { id: delivery.task_row.agent_id, name: `${delivery.namespace_slug}/${delivery.agent_name}` };
      const rpc = toRequest(delivery, agent, toTask(delivery.task_row), delivery.acp_type, this.options.leaseMs);
      const body = JSON.stringify(rpc);
      const signature = signBody(await this.secretFor(delivery.version_id), body);
      const response = await request(target.replace(/\/+$/, '') + ACP_PATH, {
        method: 'POST',
        dispatcher: this.http,
        headers: { 'content-type': 'application/json', [SIGNATURE_HEADER]: signature },
        body,
        headersTimeout: this.options.requestTimeoutMs,
        bodyTimeout: this.options.requestTimeoutMs,
      });
      const text = await response.body.text();
      if (response.statusCode >= 300) throw new DeliveryFailure(`the agent answered HTTP ${response.statusCode}${rpcErrorOf(text)}`);
      let answer: AcpResponse;
      try {
        answer = JSON.parse(text) as AcpResponse;
      } catch {
        throw new DeliveryFailure('the agent answered with a body that is not JSON-RPC');
      }
      if (answer.error) throw new DeliveryFailure(`the agent answered JSON-RPC error ${answer.error.code}: ${String(answer.error.message).slice(0, 200)}`);
      // A sync agent's inline reply is recorded before the delivery is done: a crash in between
      // repeats the delivery (at least once) rather than losing the reply.
      if (rpc.method === 'message/send') await this.recordReplies(delivery.org_id, delivery.task_id, answer.result?.messages ?? []);
      if (rpc.method !== 'message/send' && answer.result?.deferred === true) await this.lease(delivery, target);
      else await this.complete(delivery);
    } catch (error) {
      const reason = error instanceof DeliveryFailure ? error.message : describeNetworkError(error);
      this.options.log?.(`delivery ${delivery.id} (${delivery.method}, task ${delivery.task_id}) to ${target || 'its version'} failed: ${reason}`);
      await this.release(delivery, reason);
    }
  }

  /** Done: the task's next delivery may go. */
  private async complete(delivery: Claimed): Promise<void> {
    await this.db
      .updateTable('deliveries')
      .set({ status: 'done', claimed_by: null, claimed_until: null, last_error: null, updated_at: new Date() })
      .where('id', '=', delivery.id)
      .where('claimed_by', '=', this.id)
      .where('status', '=', 'in_flight')
      .execute();
  }

  /**
   * Acknowledged with `deferred`: leased to the replica that took it until the agent completes it.
   * Nothing to do when the agent's completion came first (the row is done already).
   */
  private async lease(delivery: Claimed, target: string): Promise<void> {
    await sql`
      UPDATE deliveries SET status = 'leased', leased_to = ${target}, lease_ms = ${this.options.leaseMs}, claimed_by = NULL,
        claimed_until = now() + ${this.options.leaseMs} * interval '1 millisecond', updated_at = now()
      WHERE id = ${delivery.id} AND claimed_by = ${this.id} AND status = 'in_flight'`.execute(this.db);
  }

  /** A sync agent's reply, as agent messages, through the domain with a system principal of the task's org. */
  private async recordReplies(orgId: string, taskId: string, replies: unknown[]): Promise<void> {
    const system = unrestricted({ keyId: '', orgId, name: 'dispatcher' });
    for (const reply of replies) {
      const content = MessageContent.safeParse(reply);
      if (!content.success) {
        this.options.log?.(`task ${taskId}: the agent's reply is not a TextPart or DataPart; dropped`);
        continue;
      }
      try {
        await createMessage(this.db, system, { task_id: taskId, content: content.data, author: 'agent', streaming_status: null });
      } catch (error) {
        // A task that ended meanwhile takes no messages: nothing to retry.
        if (!(error instanceof DomainError)) throw error;
        this.options.log?.(`task ${taskId}: the agent's reply was not recorded: ${error.detail}`);
      }
    }
  }

  /**
   * Back to pending after a failure (retry with backoff), or held with no attempt counted (`reason`
   * null: no live replica). Past the retry budget the task fails with the reason.
   */
  private async release(delivery: Claimed, reason: string | null): Promise<void> {
    if (reason === null) {
      await this.db
        .updateTable('deliveries')
        .set({ status: 'pending', attempts: delivery.attempts - 1, claimed_by: null, claimed_until: null, updated_at: new Date() })
        .where('id', '=', delivery.id)
        .where('claimed_by', '=', this.id)
        .execute();
      return;
    }
    const delayMs = Math.min(this.options.backoffBaseMs * 2 ** Math.min(delivery.attempts - 1, 20), this.options.backoffMaxMs) * (0.75 + Math.random() * 0.25);
    const row = await sql<{ failing_since: Date }>`
      UPDATE deliveries SET status = 'pending', claimed_by = NULL, claimed_until = NULL, last_error = ${reason},
        failing_since = COALESCE(failing_since, now()), next_attempt_at = now() + ${Math.round(delayMs)} * interval '1 millisecond', updated_at = now()
      WHERE id = ${delivery.id} AND claimed_by = ${this.id}
      RETURNING failing_since`.execute(this.db);
    const since = row.rows[0]?.failing_since;
    if (since && Date.now() - new Date(since).getTime() >= this.options.retryBudgetMs) await this.failTask(delivery, reason);
  }

  /** The retry budget is spent: the task becomes FAILED naming the cause, and its open deliveries are dropped. */
  private async failTask(delivery: Claimed, reason: string): Promise<void> {
    const ms = this.options.retryBudgetMs;
    const budget = ms >= 60_000 ? `${Math.round(ms / 6000) / 10} minutes` : ms >= 1000 ? `${Math.round(ms / 100) / 10} seconds` : `${ms} ms`;
    const statusReason = `Delivery failed: ${delivery.method} could not be delivered to the agent within ${budget} (${reason})`;
    await this.db.transaction().execute(async (trx) => {
      const task = await trx
        .selectFrom('tasks')
        .select(['id', 'status', 'current_version_id'])
        .where('id', '=', delivery.task_id)
        .forNoKeyUpdate()
        .executeTakeFirstOrThrow();
      await trx
        .updateTable('deliveries')
        .set({ status: 'failed', claimed_by: null, claimed_until: null, leased_to: null, last_error: reason, updated_at: new Date() })
        .where('task_id', '=', delivery.task_id)
        .where('status', 'in', OPEN_DELIVERY_STATUSES)
        .execute();
      if (isTerminalTask(task.status)) return;
      await trx.updateTable('tasks').set({ status: 'FAILED', status_reason: statusReason, updated_at: new Date() }).where('id', '=', task.id).execute();
      await settleDraining(trx, [task.current_version_id]);
      await recordTaskChange(trx, [task.id]);
    });
    this.options.log?.(`task ${delivery.task_id} failed: ${statusReason}`);
  }

  /** Stops claiming, waits for the calls in flight, closes connections. */
  async close(): Promise<void> {
    this.closed = true;
    this.unsubscribe();
    if (this.timer) clearTimeout(this.timer);
    await Promise.allSettled([...this.inFlight, this.sweep]);
    RUNNING_HERE.delete(this.id);
    await this.listener?.end().catch(() => {});
    await this.http.close().catch(() => {});
  }
}

function toRequest(delivery: Claimed, agent: AcpAgentRef, task: Task, acpType: string, leaseMs: number): AcpRequest {
  const request = methodRequest(delivery, agent, task, acpType, leaseMs);
  // A shadow task's delivery (a rehearsal): the ADK tells the handler (ctx.rehearsal).
  if (delivery.task_row.shadow_of) request.params.rehearsal = true;
  return request;
}

function methodRequest(delivery: Claimed, agent: AcpAgentRef, task: Task, acpType: string, leaseMs: number): AcpRequest {
  const base = { jsonrpc: '2.0' as const, id: delivery.id };
  switch (delivery.method) {
    case 'task/create':
      return { ...base, method: 'task/create', params: { agent, task, params: delivery.payload.params ?? null, lease_ms: leaseMs } };
    case 'event/send':
      // A sync agent answers a user's event inline: it gets message/send with the event's content.
      if (acpType === 'sync') return { ...base, method: 'message/send', params: { agent, task, content: delivery.payload.event!.content } };
      return { ...base, method: 'event/send', params: { agent, task, event: delivery.payload.event!, lease_ms: leaseMs } };
    case 'task/cancel':
      return { ...base, method: 'task/cancel', params: { agent, task, lease_ms: leaseMs } };
    case 'task/migrate':
      return { ...base, method: 'task/migrate', params: { agent, task, migration: delivery.payload.migration!, lease_ms: leaseMs } };
    case 'message/send':
      throw new DeliveryFailure('message/send is derived from event/send, never enqueued');
  }
}

function rpcErrorOf(text: string): string {
  try {
    const parsed = JSON.parse(text) as AcpResponse;
    if (parsed?.error) return ` (JSON-RPC error ${parsed.error.code}: ${String(parsed.error.message).slice(0, 200)})`;
  } catch {
    // not JSON: the status says enough
  }
  return '';
}

function describeNetworkError(error: unknown): string {
  const e = error as { code?: string; message?: string };
  switch (e.code) {
    case 'ECONNREFUSED':
      return 'connection refused';
    case 'ECONNRESET':
    case 'UND_ERR_SOCKET':
      return 'the connection was closed before an answer';
    case 'UND_ERR_HEADERS_TIMEOUT':
    case 'UND_ERR_BODY_TIMEOUT':
    case 'UND_ERR_CONNECT_TIMEOUT':
      return 'the agent did not answer in time';
    default:
      return e.code ? `${e.code}: ${e.message ?? ''}`.trim() : (e.message ?? String(error));
  }
}

/** Starts a dispatcher on the store; `close()` it before closing the store. */
export async function startDispatcher(store: Store, options: DispatcherOptions = {}): Promise<Dispatcher> {
  const dispatcher = new Dispatcher(store, options);
  await dispatcher.start();
  return dispatcher;
}
