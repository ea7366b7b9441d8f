/**
 * The dispatcher (README "Delivery to agents, in short"): one per server replica. It claims outbox rows with
 * `FOR UPDATE SKIP LOCKED`, at most one in flight per task and in order per task, and POSTs each as
 * signed JSON-RPC to a live replica of the task's current version (read at claim time, so a
 * migrated task's next delivery reaches its new version). Failures retry with exponential backoff;
 * after the retry budget the task becomes FAILED with the reason. At least once: an agent
 * deduplicates by the JSON-RPC id (the delivery id). A claim left by a dispatcher that died (its
 * server was killed mid-call, or with a dev stream open) is taken back as soon as it is seen gone,
 * not when the claim runs out.
 *
 * An async agent that answers `deferred: true` takes the offered completion lease: the delivery
 * stays `leased` (the task's next one waits) until the agent reports its handler finished
 * (domain/deliveries.ts); when its replica goes or the lease runs out unrenewed it is sent again.
 */
import { randomUUID } from 'node:crypto';
import { sql, type RawBuilder } from 'kysely';
import { Agent, request } from 'undici';
import {
  ACP_PATH,
  SIGNATURE_HEADER,
  signBody,
  type AcpAgentRef,
  type AcpCarriedCompletion,
  type AcpMethod,
  type AcpRequest,
  type AcpResponse,
} from '../../contract/acp.js';
import {
  DeliveryCompletionReport,
  MessageContent,
  OPEN_DELIVERY_STATUSES,
  type DeliveryAnswerRequest,
  type PulledDelivery,
} from '../../contract/conversation.js';
import { DEV_IMAGE_PREFIX, MAX_COMPLETIONS_PER_REQUEST } from '../../contract/enums.js';
import type { Task } from '../../contract/resources.js';
import { isTerminalTask } from '../../contract/lifecycle.js';
import type { Selectable } from 'kysely';
import type { Db, Store, TasksTable } from '../store/db.js';
import { toTask } from '../store/mappers.js';
import { signingSecretFor } from '../domain/registration.js';
import { settleDraining } from '../domain/events.js';
import { noHookPendingBefore, writePendingHooks } from '../domain/migration-hooks.js';
import { createMessage, interruptStreams, recordTaskChange } from '../domain/conversation.js';
import { DEFAULT_INTERRUPT_GRACE_MS, OUT_OF_ORDER_DELIVERY_KINDS, type DeliveryKind } from '../../contract/enums.js';
import { unrestricted } from '../auth/policy.js';
import { DomainError } from '../domain/errors.js';
import {
  announceDeliveries,
  DELIVERY_CHANNEL,
  HOOKS_NOTICE,
  onCompletionHere,
  onDeliveryCommitted,
  onDeliveryEnqueued,
  onInsertClaim,
  type CompletedHere,
  type InsertClaim,
  type DeliveryPayload,
  type RunGrant,
} from '../store/outbox.js';
import { runnableTaskByGrant } from '../domain/conversation.js';
import { context, ROOT_CONTEXT, SpanKind, SpanStatusCode, type Span } from '@opentelemetry/api';
import { formatTraceparent } from '../../contract/trace-context.js';
import type { Tracing } from '../tracing/tracing.js';
import { recordAgentSpans } from '../domain/traces.js';
import { completeCarried, INHERITED_LEASE_REASON, releasedByGoneReplica, WRITER_GONE_REASON } from '../domain/deliveries.js';
import { executePrepared } from '../store/prepared.js';

/** The open statuses as an SQL list, for the claim statement. */
const OPEN = sql.join(OPEN_DELIVERY_STATUSES.map((status) => sql.lit(status)));

/**
 * Claims held by a pull stream (a dev version's `agentctl dev`) are named with this prefix, then the
 * id of the dispatcher serving the stream and `/`: a stream lives no longer than its dispatcher.
 */
const PULL_CLAIM_PREFIX = 'pull_';
/**
 * How long a pulled delivery stays claimed by its stream without an answer: `agentctl dev` holds
 * one while its agent restarts; past this it is sent again (the agent deduplicates by its id).
 */
export const PULL_CLAIM_MS = 60_000;
/** At most this many deliveries of one dev version in flight on its stream (each of a different task). */
const PULL_IN_FLIGHT = 32;

/** A connected pull stream of a dev version. */
interface PullStream {
  id: string;
  versionId: string;
  send: (delivery: PulledDelivery) => boolean;
  end: () => void;
  pumping: boolean;
  again: boolean;
  closed: boolean;
}

/** What the agent answered, or why it could not be asked. */
type AgentAnswer = { statusCode: number; text: string } | { error: string };

/** What settling an answer needs of its delivery. */
type Settling = Pick<Claimed, 'id' | 'task_id' | 'method' | 'kind' | 'attempts' | 'org_id' | 'namespace_slug' | 'agent_name'>;

/**
 * How a delivery ended for its flight: `next`, the task's next delivery, claimed by the statement that
 * completed this one (the flight sends it on); `unblocked`, a task whose next delivery may be due now
 * that this one is done (completed, nothing claimed after it).
 */
interface Settled {
  next?: Claimed;
  unblocked?: string;
  /** complete: the row as the statement completed it (none when it changed nothing). */
  completed?: { id: string; task_id: string; method: string; attempts: number };
}

/**
 * A completion or lease waiting for the next settling statement, with the caller's promise. `done`
 * and `lease` are this dispatcher's answers under its claim; `complete` is an agent's report that a
 * deferred delivery's handler finished (`POST /deliveries/{id}/complete`), checked against its key.
 */
interface QueuedSettle {
  op: 'done' | 'lease' | 'complete';
  id: string;
  taskId: string;
  claimer: string;
  /** done: the same statement may claim the task's next delivery for this flight (complete: for a new one). */
  chain: boolean;
  /** lease: the replica that took it. */
  target: string | null;
  /** lease: when it began to wait for its completion (performance.now()). */
  waitingSince?: number;
  /**
   * done, chained, of a live task: the statement looks for the task's next turn itself, so claiming
   * none it leaves nothing that a claim of the task right after would find (a delivery enqueued
   * after its snapshot wakes the task, which waits for this flight to land: `hintedAfterFlight`).
   * A rehearsal's next turn is never chained (priority): its flight wakes a claim of the task.
   */
  looked?: boolean;
  /** complete: the lease of the same delivery in the same batch, whose flight takes the task's next delivery. */
  flight?: QueuedSettle;
  /** complete: who may run the task's agent, as the caller's key allows. */
  grant?: RunGrant;
  /** lease: the delivery, and the agent that answered it (its completion may come in that agent's answer to a later delivery). */
  delivery?: Settling;
  agentId?: string;
  resolve: (settled: Settled) => void;
  reject: (error: unknown) => void;
}

/** What a settling statement reports on its one row: the agents' completions it wrote, the tasks of leases whose replica had gone. */
interface SettleReport {
  completed: NonNullable<Settled['completed']>[] | null;
  unleased: string[] | null;
}

/**
 * Settling statements (completions and leases of every flight that finished meanwhile, in one
 * statement each) running at once: while they run, further answers gather for the next one.
 */
const SETTLE_STATEMENTS = 2;

/**
 * How long a lease waits for its own completion before it is written (at most): an agent whose
 * handler is quick reports it complete meanwhile, and one statement then writes the completion
 * instead of both (the lease only when the completion was not written). It waits even while other
 * statements go: a lease that went with the next statement of any kind was written, and then its
 * completion, whenever other deliveries were being settled. Nothing is at risk meanwhile: the
 * delivery stays claimed in flight (a claim runs for minutes), and the task's next one waits behind
 * it all the same.
 */
const LEASE_WRITE_WAIT_MS = 25;

/**
 * Claims running at once: wake-ups that come while one runs (a completion reported for another task)
 * are claimed alongside it rather than after it. Safe as claims of several replicas are: each locks
 * what it takes and skips what another holds.
 */
const CLAIM_STATEMENTS = 2;
/** The least window of the claim over every task (Dispatcher claimWindow). */
const CLAIM_WINDOW_MIN = 256;

/**
 * While work waits for room, a flight sends at most this many of its task's deliveries one after
 * another before it gives its slot back to the claim over every task (oldest first, live work
 * before rehearsals).
 */
const CHAIN_WHILE_WAITING = 16;

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
  /**
   * Deliveries in flight at once from this replica (each to a different task; default 128). A flight
   * mostly waits (the agent's answer, the settling statement), so more of them carry more at once.
   */
  maxInFlight?: number;
  /**
   * How long a deferred (acknowledged, handler running) delivery stays leased without a renewal or
   * completion before it is sent again (default 5 minutes; the ADK renews it every third of that).
   */
  leaseMs?: number;
  /**
   * How long an interrupted handler that ignores its signal may run on before the agent cuts its turn
   * off and completes its delivery (sent with each interrupt; default 10 s).
   */
  interruptGraceMs?: number;
  /**
   * The claim over every task first reads this many open deliveries at the head of the claim order
   * (default: twice the limit and the flights, at least CLAIM_WINDOW_MIN), and the whole order only
   * when they were that many and held too few it could claim.
   */
  claimWindow?: number;
  /** How long a lease waits for its completion before it is written on its own (default LEASE_WRITE_WAIT_MS). */
  leaseWriteWaitMs?: number;
  /** Where failures are reported; never given secrets. */
  log?: (message: string) => void;
  /** The server's tracing: each delivery's outbox wait and call become spans of the trace that enqueued it. */
  tracing?: Tracing;
}

export const DEFAULT_RETRY_BUDGET_MS = 10 * 60 * 1000;
export const DEFAULT_COMPLETION_LEASE_MS = 5 * 60 * 1000;
/** Recorded when a lease ran out: the agent neither completed nor renewed it. */
const LEASE_EXPIRED_REASON = 'the agent did not report its handler finished within the completion lease';
/** The streaming_error of a message left streaming by a turn whose lease ran out. */
const LEASE_EXPIRED_STREAM_REASON = 'the agent stopped reporting on the turn writing it (its completion lease ran out)';
/** Control deliveries, as an SQL list: they neither wait behind a task's open turn nor hold up its later ones. */
const OUT_OF_ORDER = sql.join(OUT_OF_ORDER_DELIVERY_KINDS.map((kind) => sql.lit(kind)));

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
  kind: DeliveryKind;
  /** The status before this claim: `leased` when the claim takes back a delivery whose lease ran out. */
  prior_status: string;
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
  /** The trace context of the request that enqueued it, and when that was. */
  traceparent: string | null;
  tracestate: string | null;
  created_at: Date;
}

/**
 * What a claim reads of each row it claimed (`from`: the claimed deliveries with `prior_status` and
 * `version_id`, the version claimed for): the request's fields, the task as it is now, its agent,
 * and the live replicas of the version. Shared by the claim statements and the claim at insert.
 */
function claimedRows(from: RawBuilder<unknown>) {
  return sql`SELECT claimed.id::text AS id, claimed.task_id, claimed.method, claimed.kind, claimed.prior_status, claimed.payload, claimed.attempts, claimed.failing_since,
             claimed.last_error, claimed.version_id, claimed.traceparent, claimed.tracestate, claimed.created_at,
             row_to_json(t) AS task_row, a.name AS agent_name, n.slug AS namespace_slug, n.org_id, v.acp_type,
             ARRAY(SELECT r.acp_url FROM version_replicas r WHERE r.version_id = claimed.version_id AND r.live ORDER BY r.replica_key) AS acp_urls
      FROM ${from} AS claimed
      JOIN tasks t ON t.id = claimed.task_id
      JOIN agents a ON a.id = t.agent_id
      JOIN namespaces n ON n.id = a.namespace_id
      JOIN versions v ON v.id = claimed.version_id`;
}

/**
 * The id of `task`'s first open turn (control deliveries aside), leaving out `finished`: ids a
 * completion in the same statement wrote done, which its snapshot still sees open. The index on
 * (task_id, id) answers it at the first row.
 */
function firstOpenTurn(task: RawBuilder<unknown>, finished?: RawBuilder<unknown>) {
  return sql`(SELECT e.id FROM deliveries e WHERE e.task_id = ${task} AND e.status IN (${OPEN}) AND e.kind NOT IN (${OUT_OF_ORDER})
    ${finished ? sql`AND e.id NOT IN (${finished})` : sql``} ORDER BY e.id LIMIT 1)`;
}

/**
 * One turn at a time per task, in order: nothing of `task` open before the delivery (control
 * deliveries aside), an onMigrate hook still pending on the task's row (`t`, in the caller's
 * statement) included. `before`: the delivery's id, a turn that is open itself (none: a row being
 * inserted, after every other). `finished`: ids being written done, which the statement's snapshot
 * may still see open.
 */
function nothingOpenBefore(task: RawBuilder<unknown>, before?: RawBuilder<unknown>, finished?: RawBuilder<unknown>) {
  const noHook = noHookPendingBefore('t', before);
  if (!before)
    return sql`NOT EXISTS (SELECT 1 FROM deliveries e WHERE e.task_id = ${task} AND e.status IN (${OPEN}) AND e.kind NOT IN (${OUT_OF_ORDER})
      ${finished ? sql`AND e.id NOT IN (${finished})` : sql``}) AND ${noHook}`;
  // Being open itself, the delivery is the first open turn of its task. Asked so, the index on
  // (task_id, id) stops at that first row; as NOT EXISTS (... e.id < delivery) the planners (PGlite's
  // always) tested every open row of the task, a long queue costing its length on every claim.
  return sql`${before} = ${firstOpenTurn(task, finished)} AND ${noHook}`;
}

/** A stable choice among a version's replicas: the same task goes to the same replica. */
function replicaIndex(taskId: string, count: number): number {
  let hash = 0x811c9dc5;
  for (let i = 0; i < taskId.length; i++) hash = Math.imul(hash ^ taskId.charCodeAt(i), 0x01000193) >>> 0;
  return hash % count;
}

/** Resolves when `promise` settles, either way: something to wait for that never rejects. */
const settledOf = (promise: Promise<unknown>): Promise<void> =>
  promise.then(
    () => {},
    () => {},
  );

class DeliveryFailure extends Error {}

/** A task's turn that its agent answered and this dispatcher is writing done (`complete`). */
interface Completing {
  id: string;
  claimer: string;
  /** Whether the statement writing it ran (false: it failed, the turn is still open). */
  written: Promise<boolean>;
}

/**
 * A claim at insert may count a turn being written done as done (see `insertClaim`) while its claim
 * has at least this long to run: a claim held so long is its claimer's alone, so the write, already
 * under way, finds the row as the event's statement saw it.
 */
const COMPLETING_CLAIM_MARGIN_MS = 5000;

export class Dispatcher {
  readonly id = `dsp_${randomUUID()}`;
  private readonly db: Db;
  private readonly http: Agent;
  private readonly options: Required<Omit<DispatcherOptions, 'log' | 'tracing' | 'claimWindow'>> & Pick<DispatcherOptions, 'log' | 'claimWindow'>;
  private readonly tracing?: Tracing;
  private readonly inFlight = new Set<Promise<void>>();
  private readonly secrets = new Map<string, Promise<string>>();
  /** The secrets `secrets` read, by version: a flight signs with them at once. */
  private readonly secretsRead = new Map<string, string>();
  /** Answers waiting to be written (see `settleQueued`), and the settling statements running. */
  private queuedSettles: QueuedSettle[] = [];
  private settling = 0;
  private settleScheduled = false;
  /** Leases waiting for their completions (leaseWriteWaitMs at most), by delivery id, oldest first. */
  private readonly waitingLeases = new Map<string, QueuedSettle>();
  /** Fires when the oldest waiting lease has waited leaseWriteWaitMs: it is queued then. */
  private leaseTimer: NodeJS.Timeout | undefined;
  /** Lease writes not finished yet: closing waits for them. */
  private readonly leaseWrites = new Set<Promise<unknown>>();
  /** Claim loops running (at most CLAIM_STATEMENTS), and the slots their claims running now may fill. */
  private pumps = 0;
  private reserved = 0;
  /** A claim over every task is wanted: a delivery was enqueued, the poll came, room freed while work waited. */
  private general = false;
  /** A move may have noted onMigrate hooks on task rows (its HOOKS_NOTICE, the start, the poll): written as deliveries before the next claim over every task. */
  private hooksDue = true;
  /** Tasks whose next delivery may have come due (an agent reported a deferred one complete): claimed by looking at them alone. */
  private readonly hinted = new Set<string>();
  /**
   * Tasks with a turn's flight here (how many), and those hinted meanwhile: a hinted task's next turn
   * cannot go before the flight's turn is done, whose statement claims it (chained) or wakes the task
   * after it committed; claimed sooner it would find the turn still open (an event posted as the agent
   * answers comes before the completion commits) and cost a statement for nothing.
   */
  private readonly flying = new Map<string, number>();
  private readonly hintedAfterFlight = new Set<string>();
  /** Tasks whose turn was answered and is being written done, until it is (see `complete`). */
  private readonly completing = new Map<string, Completing>();
  /** Claim statements running, each settled when it ends (a claim at insert may wait for them). */
  private readonly claimsRunning = new Set<Promise<void>>();
  /** The last claim filled every free slot: work may be waiting for room, so freed room is offered to every task. */
  private starved = false;
  private closed = false;
  private timer: NodeJS.Timeout | undefined;
  private unsubscribe: () => void = () => {};
  private unsubscribeCompletions: () => void = () => {};
  private unsubscribeInsertClaims: () => void = () => {};
  private listener: { end(): Promise<void> } | undefined;
  private sweep: Promise<void> = Promise.resolve();
  /**
   * Tasks handed over in process (`onDeliveryCommitted`) whose NOTIFY has not come back yet, with how
   * many: that notification would only claim again what the hand-over claimed.
   */
  private readonly echoes = new Map<string, number>();
  private readonly pulls = new Map<string, PullStream>();
  /**
   * When this dispatcher started alone (no other one was running on the database): a lease last
   * granted or renewed before then was held across the restart, so its agent could not renew it
   * while no server ran, or went with the server. Null when another dispatcher was running (it
   * may have been renewing leases all along) or it cannot tell.
   */
  private inheritedBefore: Date | null = null;

  constructor(
    private readonly store: Store,
    options: DispatcherOptions = {},
  ) {
    this.db = store.db;
    this.tracing = options.tracing;
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
      maxInFlight: options.maxInFlight ?? 128,
      leaseMs,
      interruptGraceMs: options.interruptGraceMs ?? DEFAULT_INTERRUPT_GRACE_MS,
      claimWindow: options.claimWindow,
      leaseWriteWaitMs: options.leaseWriteWaitMs ?? LEASE_WRITE_WAIT_MS,
      log: options.log,
    };
    // A flight has one call open at a time: a connection per flight to a replica holding them all.
    this.http = new Agent({ keepAliveTimeout: 10_000, connections: this.options.maxInFlight });
  }

  /** Starts polling and, on PostgreSQL, listening for deliveries committed by any replica. */
  async start(): Promise<void> {
    RUNNING_HERE.add(this.id);
    if (this.store.engine === 'postgres' && this.store.databaseUrl) await this.listen(this.store.databaseUrl);
    // Told of this process's writes (and claiming at insert) once its LISTEN session shows it alive
    // to the other replicas: a dispatcher made and never started (a test driving its settling
    // statement) claimed and sent unseen, and the others took its claims for orphaned and sent them again.
    this.unsubscribeCompletions = onCompletionHere(this.db, (deliveryId, grant) => this.completeReported(deliveryId, grant));
    this.unsubscribeInsertClaims = onInsertClaim(this.db, (taskId) => this.insertClaim(taskId));
    // On PGlite an in-process wake is the signal (its claim queues behind the enqueuing transaction);
    // on PostgreSQL it would come before the commit and claim nothing: the LISTEN wakes it after, or,
    // for a statement of this process, the hand-over after its commit (whose NOTIFY echo is then skipped).
    this.unsubscribe =
      this.store.engine === 'pglite'
        ? onDeliveryEnqueued((taskId) => this.wake(taskId))
        : onDeliveryCommitted((taskId, notified) => {
            if (notified && this.listener) this.echoes.set(taskId, (this.echoes.get(taskId) ?? 0) + 1);
            this.wake(taskId);
          });
    await this.releaseOrphanedClaims().catch((error) => this.options.log?.(`dispatcher: ${(error as Error).message}`));
    this.inheritedBefore = await this.startedAlone().catch((error) => {
      this.options.log?.(`dispatcher: ${(error as Error).message}`);
      return null;
    });
    this.schedulePoll();
    this.wake();
  }

  /**
   * In-flight claims of a dispatcher that is gone (its server was killed mid-call) come due now,
   * not when the claim runs out (a minute later, the task's next deliveries waiting behind it). A
   * dispatcher lives as long as its LISTEN session on PostgreSQL (named with its id), in this
   * process on PGlite. Pushed leases are not claims: their agent may still be running them (they
   * go with its replica). Pulled ones go with their stream's dispatcher too: a dev process still
   * running the handler answers the repeat on the next stream as a repeat (deferred, not run
   * again), and one that died with the server has nobody left to complete it for five minutes.
   */
  private async releaseOrphanedClaims(): Promise<void> {
    // Who holds each open row: its claimer, or a pulled lease's stream (pushed leases are left out).
    const held = sql`
      SELECT id, CASE WHEN status = 'leased' THEN leased_to ELSE claimed_by END AS held_by FROM deliveries
      WHERE claimed_until > now() AND (status = 'in_flight' OR (status = 'leased' AND left(leased_to, ${PULL_CLAIM_PREFIX.length}) = ${PULL_CLAIM_PREFIX}))`;
    // The dispatcher behind it: a pull stream's id names its dispatcher's (PULL_CLAIM_PREFIX).
    const owner = sql`CASE WHEN left(h.held_by, ${PULL_CLAIM_PREFIX.length}) = ${PULL_CLAIM_PREFIX}
      THEN split_part(substr(h.held_by, ${PULL_CLAIM_PREFIX.length + 1}), '/', 1) ELSE h.held_by END`;
    let alive;
    if (this.store.engine === 'pglite') alive = sql`o.owner IN (${sql.join([...RUNNING_HERE])})`;
    // Without a session of its own (no URL to LISTEN on) it cannot tell a gone dispatcher from a live one.
    else if (this.listener) alive = sql`EXISTS (SELECT 1 FROM pg_stat_activity a WHERE a.application_name = o.owner)`;
    else return;
    await sql`
      UPDATE deliveries SET claimed_until = now(), updated_at = now()
      FROM (SELECT h.id, ${owner} AS owner FROM (${held}) h) o
      WHERE deliveries.id = o.id AND o.owner <> ${this.id} AND NOT (${alive})`.execute(this.db);
  }

  /** The database's time now when no other dispatcher runs on it (this process's on PGlite, a LISTEN session on PostgreSQL); else null. */
  private async startedAlone(): Promise<Date | null> {
    let others;
    if (this.store.engine === 'pglite') others = sql.lit(RUNNING_HERE.size > 1);
    else if (this.listener)
      others = sql`EXISTS (SELECT 1 FROM pg_stat_activity a WHERE a.datname = current_database() AND left(a.application_name, 4) = 'dsp_' AND a.application_name <> ${this.id})`;
    else return null;
    const row = await sql<{ now: Date; others: boolean }>`SELECT now() AS now, ${others} AS others`.execute(this.db);
    return row.rows[0].others ? null : new Date(row.rows[0].now);
  }

  private async listen(url: string): Promise<void> {
    const pg = (await import('pg')).default;
    // Named with this dispatcher's id: other replicas see it alive while this session is (releaseOrphanedClaims).
    const client = new pg.Client({ connectionString: url, application_name: this.id });
    // A lost LISTEN connection only slows wake-ups to the poll interval; reconnect in the background.
    client.on('error', () => {
      this.listener = undefined;
      this.echoes.clear();
      if (!this.closed) setTimeout(() => void this.listen(url).catch(() => {}), 1000).unref();
    });
    // A notification naming a task (an agent's completion) wakes a claim of that task alone.
    client.on('notification', (message) => {
      const taskId = message.payload || undefined;
      const echoes = taskId ? this.echoes.get(taskId) : undefined;
      if (taskId && echoes) {
        if (echoes > 1) this.echoes.set(taskId, echoes - 1);
        else this.echoes.delete(taskId);
        return;
      }
      this.wake(taskId);
    });
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
          // The safety net for hooks too: a move on another replica whose NOTIFY this one missed.
          this.wake(HOOKS_NOTICE);
          this.schedulePoll();
        });
    }, this.options.pollMs);
    this.timer.unref();
  }

  /**
   * Claims and sends whatever is due; coalesces concurrent wake-ups. With `taskId`, only that task's
   * next delivery may have come due: it is claimed by a statement that looks at the hinted tasks alone.
   */
  wake(taskId?: string): void {
    if (this.closed) return;
    for (const pull of this.pulls.values()) this.wakePull(pull);
    if (taskId === undefined || taskId === HOOKS_NOTICE) {
      this.general = true;
      if (taskId === HOOKS_NOTICE) this.hooksDue = true;
    } else if (this.flying.has(taskId)) return void this.hintedAfterFlight.add(taskId);
    else this.hinted.add(taskId);
    this.kick();
  }

  /** The claim over every task; a move's hooks, pending on its tasks' rows, first become deliveries in their places. */
  private async claimEverywhere(limit: number): Promise<Claimed[]> {
    if (this.hooksDue) {
      this.hooksDue = false;
      // One move a statement.
      while ((await writePendingHooks(this.db)) > 0);
    }
    return this.claim(limit);
  }

  /** Starts a claim loop for the wake-ups noted, unless as many run as may. */
  private kick(): void {
    if (this.closed || this.pumps >= CLAIM_STATEMENTS) return;
    this.pumps++;
    // Woken from a request: its trace context must not follow the claims into their queries.
    context.with(ROOT_CONTEXT, () => setImmediate(() => void this.pump()));
  }

  private async pump(): Promise<void> {
    try {
      while (!this.closed && (this.general || this.hinted.size > 0)) {
        const room = this.options.maxInFlight - this.inFlight.size - this.reserved;
        if (room <= 0) {
          // The claim running now has the room: it takes these wake-ups when it is done.
          if (this.reserved > 0) break;
          // The next flight to end offers its slot to every task (it wakes a claim over all of them).
          this.starved = true;
          this.general = false;
          this.hinted.clear();
          break;
        }
        let claimed: Claimed[];
        // While work waits for room, only the claim over every task takes it: oldest first, live work first.
        const general = this.general || this.starved;
        const tasks = general ? [] : [...this.hinted];
        // The slots the claim may fill are held while it runs (a claim at insert finds the rest free).
        // Of hinted tasks it takes a turn per task, and interrupts: one slot more tells it to look again.
        const limit = general ? room : Math.min(room, tasks.length + 1);
        this.general = false;
        this.hinted.clear();
        this.reserved += limit;
        const running = general ? this.claimEverywhere(limit) : this.claim(limit, undefined, tasks);
        const ended = settledOf(running);
        this.claimsRunning.add(ended);
        try {
          claimed = await running;
        } finally {
          this.reserved -= limit;
          this.claimsRunning.delete(ended);
        }
        if (general) this.starved = claimed.length === room;
        else if (claimed.length === room) this.starved = true;
        else if (claimed.length === limit) for (const task of tasks) this.hinted.add(task);
        for (const delivery of claimed) this.launch(delivery);
        if (this.starved) this.general = true;
      }
    } catch (error) {
      if (!this.closed) this.options.log?.(`dispatcher: ${(error as Error).message}`);
    } finally {
      this.pumps--;
    }
  }

  /**
   * A flight: sends the delivery and then, one after another, each next delivery of its task that the
   * completion of the one before claimed in the same statement. Ending, it wakes a claim for what it
   * may have left due: its task's next delivery, or anything at all when work was waiting for room.
   */
  private launch(first: Claimed, after?: Promise<boolean>): void {
    const turn = first.kind === 'turn';
    const fly = async (): Promise<string | undefined> => {
      // Claimed at insert behind a turn being written done: sent once it is; if that write failed,
      // back to pending (no attempt counted), to be claimed behind the turn when it is settled.
      if (after && !(await after)) {
        await this.release(first, null);
        return first.task_id;
      }
      let delivery: Claimed | undefined = first;
      let sent = 0;
      let unblocked: string | undefined;
      while (delivery) {
        if (this.closed) {
          // Closing: what the last completion claimed goes back, to be sent by another dispatcher or after a restart.
          await this.release(delivery, null);
          return undefined;
        }
        sent++;
        const chain = !this.starved || sent < CHAIN_WHILE_WAITING;
        const failed = delivery;
        const settled: Settled = await this.deliver(delivery, chain).catch((error) => {
          this.options.log?.(`delivery ${failed.id}: ${(error as Error).message}`);
          return { unblocked: failed.task_id };
        });
        delivery = settled.next;
        unblocked = settled.unblocked;
      }
      return unblocked;
    };
    if (turn) this.flying.set(first.task_id, (this.flying.get(first.task_id) ?? 0) + 1);
    const flight: Promise<void> = fly()
      .catch((error) => {
        this.options.log?.(`delivery ${first.id}: ${(error as Error).message}`);
        return undefined;
      })
      .then((unblocked) => {
        this.inFlight.delete(flight);
        const hinted = turn && this.landed(first.task_id);
        if (this.starved) this.wake();
        else if (unblocked || hinted) this.wake(unblocked ?? first.task_id);
      });
    this.inFlight.add(flight);
  }

  /** A turn's flight of the task ended: whether the task was hinted meanwhile (its hint waited for this). */
  private landed(taskId: string): boolean {
    const count = this.flying.get(taskId) ?? 0;
    if (count > 1) {
      this.flying.set(taskId, count - 1);
      return false;
    }
    this.flying.delete(taskId);
    return this.hintedAfterFlight.delete(taskId);
  }

  /**
   * The head of each task's queue (of `tasks` alone, when given), when it is due, its claim free (or
   * expired: its dispatcher died; or its completion lease ran out) and the task's current version has
   * a live replica. Rows another dispatcher holds are skipped; a later row of a task waits while an
   * earlier one is open (leased included: one in flight per task).
   */
  private async claim(limit: number, pull?: PullStream, tasks?: readonly string[]): Promise<Claimed[]> {
    if (pull || tasks) return this.claimFrom(limit, pull, tasks);
    // Over every task, the head of the claim order first: tested row by row, the whole order cost every
    // claim all the open deliveries (PGlite, 1,000 tasks with 2 events each: 2,714 index rows, 871
    // tested, 8-12 ms a claim, for about 9 claimed). Past the window only when the window was full
    // and held too few: the rows at its head are then all in flight or waiting behind their task's turn.
    const window = this.options.claimWindow ?? Math.max(CLAIM_WINDOW_MIN, 2 ** Math.ceil(Math.log2(2 * (limit + this.inFlight.size))));
    const { claimed, read } = await this.claimInWindow(limit, window);
    if (claimed.length === limit || read < window) return claimed;
    return [...claimed, ...(await this.claimFrom(limit - claimed.length))];
  }

  /** The claim over every task, of the first `window` open deliveries in the claim order: what it claimed, and how many it read. */
  private async claimInWindow(limit: number, window: number): Promise<{ claimed: Claimed[]; read: number }> {
    // Read once (a LIMIT of its own), then looked up by id. Joined to it instead, the planners (with
    // no statistics yet) crossed every open row with the window: 214,643 pairs tested for 141 rows.
    const head = sql`head AS MATERIALIZED (
      SELECT h.id FROM deliveries h WHERE h.status IN (${OPEN}) ORDER BY h.priority DESC, h.id LIMIT ${sql.lit(window)}
    )`;
    const pick = this.claimable(limit, { among: sql`o.id = ANY(ARRAY(SELECT id FROM head))` });
    const result = await executePrepared(
      this.db,
      this.claiming(this.id, undefined, pick, head, sql`(SELECT count(*)::int FROM head)`) as RawBuilder<Claimed & { reported: number }>,
    );
    return { claimed: result.rows.filter((row) => row.id !== null), read: result.rows[0]?.reported ?? 0 };
  }

  /** The claim of the whole order (of `tasks` alone, when given; a pull stream's own version's). */
  private async claimFrom(limit: number, pull?: PullStream, tasks?: readonly string[]): Promise<Claimed[]> {
    const claimer = pull?.id ?? this.id;
    const result = await executePrepared(this.db, this.claiming(claimer, pull, this.claimable(limit, { pull, tasks })));
    return result.rows;
  }

  /** The claimable deliveries (`among` them, when given), the first `limit` in the claim order, locked. */
  private claimable(limit: number, { pull, tasks, among }: { pull?: PullStream; tasks?: readonly string[]; among?: RawBuilder<unknown> } = {}) {
    return sql`
      SELECT o.id, o.status AS prior_status, t.current_version_id
      FROM deliveries o
      JOIN tasks t ON t.id = o.task_id
      WHERE o.status IN (${OPEN})
        ${among ? sql`AND ${among}` : sql``}
        ${tasks ? sql`AND o.task_id = ANY(${tasks}::text[])` : sql``}
        AND ((o.status = 'pending' AND o.next_attempt_at <= now()) OR (o.status IN ('in_flight', 'leased') AND o.claimed_until < now()))
        -- One turn at a time per task, in order; control deliveries (an interrupt) go at once.
        AND (o.kind IN (${OUT_OF_ORDER})
          OR ${nothingOpenBefore(sql`o.task_id`, sql`o.id`)})
        AND ${this.targetOf(pull)}
      ORDER BY o.priority DESC, o.id
      LIMIT ${limit}
      FOR UPDATE OF o SKIP LOCKED`;
  }

  /** How long a pushed claim runs: long enough for one call; a dispatcher that dies mid-call leaves the row to be claimed again. */
  private claimMs(): number {
    return this.options.requestTimeoutMs * 2 + 5000;
  }

  /**
   * A claim at insert (outbox.ts InsertClaim) for a statement writing a task's turn, while this
   * dispatcher has a free slot and no work waits for room (then the claim over every task takes the
   * slots, oldest first). The row is claimed as the claim statement would claim it: nothing of its
   * task open before it (an interrupt aside), its version with a live replica and pushed to. A
   * dispatcher that dies before sending leaves an in-flight claim, released as any orphaned claim is.
   */
  private async insertClaim(taskId: string): Promise<InsertClaim | undefined> {
    // The task's last turn was answered and is being written done: the event's statement counts it
    // as done while it is still in flight under that claim with time to run, and its flight sends
    // the event once the write ran (`launch`). Waiting for the write before the event's statement
    // put two commits one after the other on the event's way (on PostgreSQL 3-4 ms of its 5).
    const completing = this.completing.get(taskId);
    const offeredAt = performance.now();
    // A claim statement holds the free slots while it runs; it seldom fills them all.
    while (!this.closed && !this.starved && this.freeSlots() <= 0 && this.claimsRunning.size > 0) await Promise.race(this.claimsRunning);
    if (this.closed || this.starved || this.freeSlots() <= 0) return undefined;
    this.reserved++;
    let settled = false;
    const finishing = () =>
      completing &&
      sql`SELECT x.id FROM deliveries x WHERE x.id = ${completing.id} AND x.status = 'in_flight' AND x.claimed_by = ${completing.claimer}
        AND x.claimed_until > now() + ${COMPLETING_CLAIM_MARGIN_MS} * interval '1 millisecond'`;
    // Sent once the turn is written done, within the margin (its claim held throughout); else given back.
    const after = completing?.written.then((written) => written && performance.now() - offeredAt < COMPLETING_CLAIM_MARGIN_MS);
    return {
      claimer: this.id,
      claimMs: this.claimMs(),
      claimable: () => sql`${nothingOpenBefore(sql`t.id`, undefined, finishing())} AND ${this.targetOf()}`,
      shape: completing ? 'finishing' : 'free',
      values: [...(completing ? [completing.id, completing.claimer, COMPLETING_CLAIM_MARGIN_MS] : []), DEV_IMAGE_PREFIX.length, DEV_IMAGE_PREFIX],
      read: claimedRows,
      settle: (claimed) => {
        if (settled) return;
        settled = true;
        this.reserved--;
        if (claimed) this.launch(claimed as Claimed, after);
        // A claim that found no room while this slot was held takes the wake-ups it left.
        else if (this.general || this.hinted.size > 0) this.kick();
      },
    };
  }

  /** Slots for another flight: neither in flight nor held by a statement that may claim. */
  private freeSlots(): number {
    return this.options.maxInFlight - this.inFlight.size - this.reserved;
  }

  /** Pushed: to a live replica, never to a dev version. Pulled: the stream's own dev version. */
  private targetOf(pull?: PullStream) {
    return pull
      ? sql`t.current_version_id = ${pull.versionId}`
      : sql`EXISTS (SELECT 1 FROM version_replicas r WHERE r.version_id = t.current_version_id AND r.live)
            AND NOT EXISTS (SELECT 1 FROM versions pv WHERE pv.id = t.current_version_id AND left(pv.image_url, ${DEV_IMAGE_PREFIX.length}) = ${DEV_IMAGE_PREFIX})`;
  }

  /**
   * One statement claims the rows `pick` selects (`id`, `prior_status`, `current_version_id`, locked)
   * and reads what their requests need: the task as it is now, its agent, and the live replicas of
   * its current version. `before` are common table expressions `pick` may use (a completion). With
   * `report`, one row at least: its value as column `reported` of the first row (beside the first
   * claimed row, or nulls when none was).
   */
  private claiming(claimer: string, pull: PullStream | undefined, pick: RawBuilder<unknown>, before?: RawBuilder<unknown>, report?: RawBuilder<unknown>) {
    const claimMs = pull ? PULL_CLAIM_MS : this.claimMs();
    const inherited = this.inheritedBefore ? sql`d.updated_at < ${this.inheritedBefore}` : sql`false`;
    return sql<Claimed>`
      WITH ${before ? sql`${before},` : sql``} claimed AS (
        UPDATE deliveries AS d
        SET status = 'in_flight', claimed_by = ${claimer}, claimed_until = now() + ${claimMs} * interval '1 millisecond',
            version_id = c.current_version_id, attempts = d.attempts + 1, updated_at = now(), leased_to = NULL,
            -- A lease that ran out is a failed attempt: the retry budget runs from the first. Not one
            -- held across a restart and not renewed since (inheritedBefore): the platform's doing.
            failing_since = CASE WHEN d.status = 'leased' AND NOT ${inherited} THEN COALESCE(d.failing_since, now()) ELSE d.failing_since END,
            last_error = CASE WHEN d.status = 'leased' THEN (CASE WHEN ${inherited} THEN ${INHERITED_LEASE_REASON} ELSE ${LEASE_EXPIRED_REASON} END) ELSE d.last_error END
        FROM (${pick}) AS c
        WHERE d.id = c.id
        RETURNING d.id, d.task_id, d.method, d.kind, c.prior_status, d.payload, d.attempts, d.failing_since, d.last_error, c.current_version_id AS version_id,
          d.traceparent, d.tracestate, d.created_at
      )
      ${report ? sql`, out AS (` : sql``}
      ${claimedRows(sql`claimed`)}
      ${
        report
          ? // The report on the first row alone: on every row, a batch of n completions that claimed n
            // deliveries sent (and parsed) the n completions n times.
            sql`) SELECT out.*, CASE WHEN row_number() OVER (ORDER BY out.id) = 1 THEN r.reported END AS reported
              FROM (SELECT ${report} AS reported) r LEFT JOIN out ON true ORDER BY out.id`
          : sql`ORDER BY claimed.id`
      }`;
  }

  /** The version's signing secret, read once: the flights that start together share that one read. */
  private secretFor(versionId: string): Promise<string> {
    let secret = this.secrets.get(versionId);
    if (!secret) {
      secret = signingSecretFor(this.db, versionId);
      this.secrets.set(versionId, secret);
      secret.then(
        (read) => this.secretsRead.set(versionId, read),
        () => this.secrets.delete(versionId),
      );
    }
    return secret;
  }

  /**
   * Traced: the wait in the outbox and the call to the agent become spans of the trace that enqueued
   * it. `chain`: its completion may claim the task's next delivery (returned as `next`).
   */
  private deliver(delivery: Claimed, chain: boolean): Promise<Settled> {
    const tracing = this.tracing;
    if (!tracing || !delivery.traceparent) return this.deliverTraced(delivery, null, chain);
    const parent = tracing.contextFrom(delivery.traceparent, delivery.tracestate);
    const traceId = delivery.traceparent.slice(3, 35);
    tracing.note(traceId, { orgId: delivery.org_id, taskId: delivery.task_id });
    const attributes = { 'agentctl.task_id': delivery.task_id, 'agentctl.delivery_id': delivery.id, 'agentctl.delivery.attempt': delivery.attempts };
    tracing.tracer.startSpan('outbox wait', { kind: SpanKind.INTERNAL, startTime: new Date(delivery.created_at), attributes }, parent).end(Date.now());
    return tracing.inSpan(parent, `deliver ${delivery.method}`, { kind: SpanKind.CLIENT, attributes }, (span) => this.deliverTraced(delivery, span, chain));
  }

  private async deliverTraced(delivery: Claimed, span: Span | null, chain: boolean): Promise<Settled> {
    if (delivery.acp_urls.length === 0) {
      // Its last replica went away since the claim: hold it until one registers.
      await this.release(delivery, null);
      return {};
    }
    // Nothing to decide and the secret read (the common case): the request leaves in this turn of the
    // event loop, before the rest of it (the answer to the POST that wrote the event, say).
    const decided = this.settledBeforeSending(delivery, this.id);
    if (decided !== false && (await decided)) return {};
    const target = delivery.acp_urls[replicaIndex(delivery.task_id, delivery.acp_urls.length)];
    span?.setAttribute('server.address', target);
    let method: AcpMethod = delivery.method;
    let answer: AgentAnswer;
    try {
      const secret = this.secretsRead.get(delivery.version_id) ?? (await this.secretFor(delivery.version_id));
      const { rpc, body, signature } = this.signedWith(secret, delivery, span);
      method = rpc.method;
      const response = await request(target.replace(/\/+$/, '') + ACP_PATH, {
        method: 'POST',
        dispatcher: this.http,
        headers: { 'content-type': 'application/json', [SIGNATURE_HEADER]: signature },
        body,
        headersTimeout: this.options.requestTimeoutMs,
        bodyTimeout: this.options.requestTimeoutMs,
      });
      answer = { statusCode: response.statusCode, text: await response.body.text() };
    } catch (error) {
      answer = { error: describeNetworkError(error) };
    }
    return this.settle(delivery, delivery.task_row.agent_id, method, answer, target, this.id, span, chain);
  }

  /**
   * What is decided before a claimed delivery is sent: a turn whose lease ran out ends what its agent
   * left streaming; an interrupt whose turn finished meanwhile is done with nothing to stop; one past
   * its retry budget fails. True when the delivery was settled here and is not to be sent; false at
   * once (no promise) when there was nothing to decide.
   */
  private settledBeforeSending(delivery: Claimed, claimer: string): boolean | Promise<boolean> {
    const leaseRanOut = delivery.prior_status === 'leased' && delivery.kind === 'turn';
    if (!leaseRanOut && delivery.method !== 'task/interrupt' && !this.overBudget(delivery)) return false;
    return (async () => {
      // Its agent is gone or stuck, so what it left streaming ends now.
      if (leaseRanOut)
        await interruptStreams(this.db, [delivery.task_id], LEASE_EXPIRED_STREAM_REASON).catch((error) =>
          this.options.log?.(`task ${delivery.task_id}: could not end its interrupted message streams: ${(error as Error).message}`),
        );
      if (delivery.method === 'task/interrupt' && !(await this.turnStillRuns(delivery))) {
        await this.complete(delivery, claimer);
        return true;
      }
      if (!this.overBudget(delivery)) return false;
      await this.failTask(delivery, delivery.last_error ?? 'it kept failing');
      return true;
    })();
  }

  /**
   * Lost leases (an agent process dying in the handler, again and again) count like failed calls:
   * past the budget the task fails instead of the delivery going round for ever.
   */
  private overBudget(delivery: Claimed): boolean {
    return !!delivery.failing_since && Date.now() - new Date(delivery.failing_since).getTime() >= this.options.retryBudgetMs;
  }

  /** The delivery as signed JSON-RPC, the task described as it is now. */
  private async signed(delivery: Claimed): Promise<{ rpc: AcpRequest; body: string; signature: string }> {
    return this.signedWith(await this.secretFor(delivery.version_id), delivery);
  }

  private signedWith(secret: string, delivery: Claimed, span: Span | null = null): { rpc: AcpRequest; body: string; signature: string } {
    const agent: AcpAgentRef = { id: delivery.task_row.agent_id, name: `${delivery.namespace_slug}/${delivery.agent_name}` };
    const rpc = toRequest(delivery, agent, toTask(delivery.task_row), delivery.acp_type, this.options);
    // The agent's handler continues the trace from this call (W3C trace context, as the headers
    // carry it); a pulled delivery (no span here) continues the request's own.
    const traceparent = span ? formatTraceparent({ ...span.spanContext(), sampled: true }) : delivery.traceparent;
    if (traceparent) Object.assign(rpc.params, { traceparent, ...(delivery.tracestate ? { tracestate: delivery.tracestate } : {}) });
    const body = JSON.stringify(rpc);
    return { rpc, body, signature: signBody(secret, body) };
  }

  /**
   * What the agent answered (pushed by this dispatcher, or reported by `agentctl dev` for a pulled
   * one): done, leased (deferred), or back to pending with backoff. `claimer` holds the claim.
   */
  private async settle(
    delivery: Settling,
    agentId: string,
    method: AcpMethod,
    answer: AgentAnswer,
    target: string,
    claimer: string,
    span: Span | null = null,
    chain = false,
  ): Promise<Settled> {
    try {
      if ('error' in answer) throw new DeliveryFailure(answer.error);
      if (answer.statusCode >= 300) throw new DeliveryFailure(`the agent answered HTTP ${answer.statusCode}${rpcErrorOf(answer.text)}`);
      let parsed: AcpResponse;
      try {
        parsed = JSON.parse(answer.text) as AcpResponse;
      } catch {
        throw new DeliveryFailure('the agent answered with a body that is not JSON-RPC');
      }
      if (parsed.error) throw new DeliveryFailure(`the agent answered JSON-RPC error ${parsed.error.code}: ${String(parsed.error.message).slice(0, 200)}`);
      // The agent's other deferred deliveries whose handlers finished, carried in this answer: in the
      // settling statement this answer's own write goes in (queued first), no request of their own.
      const carried = carriedCompletions(parsed.result?.completed);
      if (carried.length > 0) this.completeCarried(delivery, agentId, carried);
      // A sync agent's inline reply is recorded before the delivery is done: a crash in between
      // repeats the delivery (at least once) rather than losing the reply.
      if (method === 'message/send') await this.recordReplies(delivery.org_id, delivery.task_id, parsed.result?.messages ?? []);
      // A sync agent's handler spans come with its answer.
      if (parsed.result?.spans?.length) {
        const service = `${delivery.namespace_slug}/${delivery.agent_name}`;
        await recordAgentSpans(this.db, this.tracing, { orgId: delivery.org_id, taskId: delivery.task_id, service }, parsed.result.spans);
      }
      // Leased: the agent's completion wakes the claim of the task's next delivery.
      if (method !== 'message/send' && parsed.result?.deferred === true) return await this.lease(delivery, agentId, target, claimer, chain);
      return await this.complete(delivery, claimer, chain);
    } catch (error) {
      const reason = error instanceof DeliveryFailure ? error.message : describeNetworkError(error);
      span?.setStatus({ code: SpanStatusCode.ERROR, message: reason.slice(0, 500) });
      this.options.log?.(`delivery ${delivery.id} (${delivery.method}, task ${delivery.task_id}) to ${target || 'its version'} failed: ${reason}`);
      await this.release(delivery, reason, claimer);
    }
    return {};
  }

  // ---- pulled deliveries: dev versions (README "Developing an agent: agentctl dev") ----

  /**
   * A dev version's `agentctl dev` connected: its deliveries are claimed for this stream and handed
   * to `send` (false: the stream is gone) as signed JSON-RPC, instead of pushed. Closing the stream
   * gives back what it held unanswered, to be sent again on the next one.
   */
  openPull(versionId: string, send: (delivery: PulledDelivery) => boolean, end: () => void): { id: string; close: () => Promise<void> } {
    const pull: PullStream = { id: `${PULL_CLAIM_PREFIX}${this.id}/${randomUUID()}`, versionId, send, end, pumping: false, again: false, closed: false };
    this.pulls.set(pull.id, pull);
    // Opened while this server shuts down: ended at once, so the puller reconnects (to its successor)
    // rather than waiting on a stream that will never carry anything.
    if (this.closed) setImmediate(end);
    this.wakePull(pull);
    return {
      id: pull.id,
      close: async () => {
        pull.closed = true;
        this.pulls.delete(pull.id);
        const released = await sql`
          UPDATE deliveries SET status = 'pending', claimed_by = NULL, claimed_until = NULL, attempts = greatest(attempts - 1, 0), updated_at = now()
          WHERE claimed_by = ${pull.id} AND status = 'in_flight'`.execute(this.db);
        if (Number(released.numAffectedRows ?? 0) > 0) this.wake();
      },
    };
  }

  private wakePull(pull: PullStream): void {
    if (pull.closed || this.closed) return;
    if (pull.pumping) {
      pull.again = true;
      return;
    }
    pull.pumping = true;
    setImmediate(() => void this.pumpPull(pull));
  }

  private async pumpPull(pull: PullStream): Promise<void> {
    try {
      do {
        pull.again = false;
        const claimed = await this.claim(PULL_IN_FLIGHT, pull);
        for (const delivery of claimed) {
          if (pull.closed) {
            await this.release(delivery, null, pull.id);
            continue;
          }
          if (await this.settledBeforeSending(delivery, pull.id)) continue;
          const { body, signature } = await this.signed(delivery);
          const sent = pull.send({
            delivery_id: String(delivery.id),
            task_id: delivery.task_id,
            method: delivery.method,
            attempt: delivery.attempts,
            claim: pull.id,
            body,
            signature,
          });
          if (!sent) await this.release(delivery, null, pull.id);
        }
        if (claimed.length === PULL_IN_FLIGHT) pull.again = true;
      } while (pull.again && !pull.closed && !this.closed);
    } catch (error) {
      if (!this.closed) this.options.log?.(`pull stream of ${pull.versionId}: ${(error as Error).message}`);
    } finally {
      pull.pumping = false;
    }
  }

  /**
   * `POST /deliveries/{id}/answer`: `agentctl dev` reports what its agent answered a pulled
   * delivery. Settled as a pushed answer is, while the claim named is still the delivery's; an
   * answer under a lost claim (it was given back, sent again) changes nothing.
   */
  async answerPulled(deliveryId: string, answer: DeliveryAnswerRequest): Promise<void> {
    if (!answer.claim.startsWith(PULL_CLAIM_PREFIX)) return;
    const row = await sql<Settling & { acp_type: string; agent_id: string }>`
      SELECT d.id::text AS id, d.task_id, d.method, d.kind, d.attempts, n.org_id, n.slug AS namespace_slug, a.name AS agent_name, a.id AS agent_id, v.acp_type
      FROM deliveries d JOIN tasks t ON t.id = d.task_id JOIN agents a ON a.id = t.agent_id
        JOIN namespaces n ON n.id = a.namespace_id JOIN versions v ON v.id = d.version_id
      WHERE d.id = ${deliveryId} AND d.status = 'in_flight' AND d.claimed_by = ${answer.claim}`.execute(this.db);
    const delivery = row.rows[0];
    if (!delivery) return;
    const method: AcpMethod = delivery.method === 'event/send' && delivery.acp_type === 'sync' ? 'message/send' : delivery.method;
    const agentAnswer: AgentAnswer = answer.error !== undefined ? { error: answer.error } : { statusCode: answer.status_code!, text: answer.body ?? '' };
    await this.settle(delivery, delivery.agent_id, method, agentAnswer, answer.claim, answer.claim);
    // Its stream (and any claim) may take the task's next delivery now.
    this.wake(delivery.task_id);
  }

  /** Whether a turn the interrupt is for still runs (sent, or being sent, and not finished). */
  private async turnStillRuns(delivery: Claimed): Promise<boolean> {
    const upTo = delivery.payload.up_to_delivery_id ?? '0';
    const row = await this.db
      .selectFrom('deliveries')
      .select('id')
      .where('task_id', '=', delivery.task_id)
      .where('kind', '=', 'turn')
      .where('status', 'in', ['in_flight', 'leased'])
      .where('id', '<=', upTo)
      .executeTakeFirst();
    return row !== undefined;
  }

  /**
   * Done: the task's next delivery may go. With `chain` (a turn this dispatcher pushed), the same
   * statement claims that next delivery when it is due and its task's version takes pushed work: the
   * flight sends it on without a claim of its own. Rehearsal deliveries are not chained (they are
   * claimed after live work, by the claim over every task).
   */
  private complete(delivery: Settling, claimer = this.id, chain = false): Promise<Settled> {
    const chained = chain && delivery.kind === 'turn' && claimer === this.id;
    const rehearsal = 'task_row' in delivery && (delivery as Claimed).task_row.shadow_of !== null;
    const written = this.queueSettle('done', delivery, claimer, chained, null, chained && !rehearsal);
    if (delivery.kind !== 'turn') return written;
    // An event to the task meanwhile counts this turn as done, and is sent once this write ran (insertClaim).
    const entry: Completing = {
      id: delivery.id,
      claimer,
      written: written.then(
        () => true,
        () => false,
      ),
    };
    this.completing.set(delivery.task_id, entry);
    void entry.written.then(() => {
      if (this.completing.get(delivery.task_id) === entry) this.completing.delete(delivery.task_id);
    });
    return written;
  }

  /**
   * Acknowledged with `deferred`: leased to the replica that took it until the agent completes it.
   * Nothing to do when the agent's completion came first (the row is done already). The write goes
   * once its completion comes, or leaseWriteWaitMs later; meanwhile the flight keeps its slot:
   * a quick handler's completion, written in that same statement, claims the task's next delivery
   * for this flight (with `chain`), which sends it on as after a plain acknowledgement.
   */
  private async lease(delivery: Settling, agentId: string, target: string, claimer = this.id, chain = false): Promise<Settled> {
    const chained = chain && delivery.kind === 'turn' && claimer === this.id;
    const write = this.queueSettle('lease', delivery, claimer, chained, target, false, agentId).catch((error) => {
      this.options.log?.(`delivery ${delivery.id}: its lease was not written: ${(error as Error).message}`);
      return {} as Settled;
    });
    const tracked: Promise<unknown> = write.finally(() => this.leaseWrites.delete(tracked));
    this.leaseWrites.add(tracked);
    // A flight that may not chain (a pulled delivery's answer among them) need not wait for the write.
    return chained ? write : {};
  }

  /**
   * An agent reports a deferred delivery's handler finished: completed in the next settling statement,
   * which claims the task's next delivery too when this dispatcher has room for another flight (sent
   * at once, `handed_over`). Undefined when it changed nothing (not the key's to run, or not open).
   */
  private async completeReported(deliveryId: string, grant: RunGrant): Promise<CompletedHere | undefined> {
    const settled = await new Promise<Settled>((resolve, reject) => {
      // Its lease, waiting, goes right before it: one statement writes the lease only when it did not write the completion.
      this.queueWaitingLease(deliveryId);
      this.queuedSettles.push({ op: 'complete', id: deliveryId, taskId: '', claimer: '', chain: false, target: null, grant, resolve, reject });
      this.scheduleSettle();
    });
    if (!settled.completed) return undefined;
    return { ...settled.completed, handed_over: settled.next !== undefined };
  }

  /**
   * Completions and leases are written together: the answers that arrive while a settling statement
   * runs go in the next one (one UPDATE for them all, and one claim of their tasks' next deliveries),
   * so a busy dispatcher spends one round trip on many deliveries instead of one each.
   */
  private queueSettle(
    op: QueuedSettle['op'],
    delivery: Settling,
    claimer: string,
    chain: boolean,
    target: string | null,
    looked = false,
    agentId?: string,
  ): Promise<Settled> {
    return new Promise<Settled>((resolve, reject) => {
      const entry: QueuedSettle = { op, id: delivery.id, taskId: delivery.task_id, claimer, chain, target, looked, resolve, reject };
      if (op === 'lease' && !this.closed) {
        entry.delivery = delivery;
        entry.agentId = agentId;
        entry.waitingSince = performance.now();
        this.waitingLeases.set(entry.id, entry);
        this.armLeaseTimer();
        return;
      }
      this.queuedSettles.push(entry);
      this.scheduleSettle();
    });
  }

  /**
   * Completions an agent carried in its answer to a later delivery. One whose lease waits here for
   * this dispatcher's own flight, answered by the same agent, is that flight's answer now: done under
   * its claim, as a plain acknowledgement is, in a statement that claims the task's next delivery for
   * the flight (no lease written, no key to check). The others are written as the agent's reports are.
   */
  private completeCarried(carrier: Settling, agentId: string, carried: AcpCarriedCompletion[]): void {
    const reported: AcpCarriedCompletion[] = [];
    const log = (error: unknown) => this.options.log?.(`completions carried in the answer to delivery ${carrier.id}: ${(error as Error).message}`);
    for (const report of carried) {
      const lease = this.waitingLeases.get(report.id);
      if (!lease?.chain || !lease.delivery || lease.agentId !== agentId) {
        reported.push(report);
        continue;
      }
      this.waitingLeases.delete(report.id);
      this.complete(lease.delivery, lease.claimer, true).then(lease.resolve, lease.reject);
      if (report.spans?.length) {
        const service = `${carrier.namespace_slug}/${carrier.agent_name}`;
        recordAgentSpans(this.db, this.tracing, { orgId: carrier.org_id, taskId: lease.taskId, service }, report.spans).catch(log);
      }
    }
    if (reported.length > 0)
      completeCarried(this.db, (id, grant) => this.completeReported(id, grant), { orgId: carrier.org_id, agentId }, reported, this.tracing).catch(log);
  }

  /** A waiting lease queued for the next statement (its completion came, or it waited long enough, or closing). */
  private queueWaitingLease(deliveryId: string): void {
    const lease = this.waitingLeases.get(deliveryId);
    if (!lease) return;
    this.waitingLeases.delete(deliveryId);
    this.queuedSettles.push(lease);
  }

  /** The timer of the oldest waiting lease, unless one is set: it queues the leases that waited leaseWriteWaitMs. */
  private armLeaseTimer(): void {
    if (this.leaseTimer) return;
    const oldest = this.waitingLeases.values().next().value;
    if (!oldest) return;
    this.leaseTimer = setTimeout(
      () => {
        this.leaseTimer = undefined;
        const now = performance.now();
        for (const lease of this.waitingLeases.values()) {
          if (now - lease.waitingSince! < this.options.leaseWriteWaitMs) break;
          this.queueWaitingLease(lease.id);
        }
        this.scheduleSettle();
        this.armLeaseTimer();
      },
      Math.max(0, Math.ceil(oldest.waitingSince! + this.options.leaseWriteWaitMs - performance.now())),
    );
    this.leaseTimer.unref();
  }

  private scheduleSettle(): void {
    if (this.queuedSettles.length === 0) return;
    if (this.settling >= SETTLE_STATEMENTS || this.settleScheduled) return;
    // The answers of this turn of the event loop go together.
    this.settleScheduled = true;
    setImmediate(() => {
      this.settleScheduled = false;
      this.flushSettles();
    });
  }

  private flushSettles(): void {
    while (this.settling < SETTLE_STATEMENTS && this.queuedSettles.length > 0) {
      // A delivery is written once per statement (two writes of one row in a statement: one is lost):
      // a second answer for it waits for the next one. Except an agent's completion right behind its
      // lease (the handler was quick): the statement writes the lease only when the completion did not.
      const batch: QueuedSettle[] = [];
      const later: QueuedSettle[] = [];
      const ids = new Map<string, QueuedSettle['op'] | 'leased and completed'>();
      for (const entry of this.queuedSettles) {
        const before = ids.get(entry.id);
        if (before === undefined || (before === 'lease' && entry.op === 'complete')) {
          ids.set(entry.id, before ? 'leased and completed' : entry.op);
          batch.push(entry);
        } else later.push(entry);
      }
      this.queuedSettles = later;
      // Agents' completions may claim their task's next delivery for a new flight while there is room
      // for one; none while work waits for room (the claim over every task takes it, oldest first).
      let room = this.starved || this.closed ? 0 : this.options.maxInFlight - this.inFlight.size - this.reserved;
      // A completion right behind its lease (in this batch) hands the task's next delivery to the
      // lease's flight when that one may chain: its slot, no room needed.
      const leasing = new Map(batch.filter((entry) => entry.op === 'lease').map((entry) => [entry.id, entry] as const));
      for (const entry of batch) {
        if (entry.op !== 'complete') continue;
        const flight = leasing.get(entry.id);
        entry.chain = flight?.chain ? true : room-- > 0;
        if (flight?.chain) entry.flight = flight;
      }
      const reserved = batch.filter((entry) => entry.op === 'complete' && entry.chain && !entry.flight).length;
      this.reserved += reserved;
      this.settling++;
      this.settleBatch(batch)
        .then(
          ({ next, completed }) => {
            this.reserved -= reserved;
            const handed = new Map<QueuedSettle, Claimed>();
            // Completions first: what they claimed for a lease's flight is handed to it below.
            for (const entry of [...batch.filter((e) => e.op === 'complete'), ...batch.filter((e) => e.op !== 'complete')]) {
              if (entry.op === 'complete') {
                const row = completed.get(entry.id);
                const claimed = row && entry.chain ? next.get(row.task_id) : undefined;
                if (claimed) {
                  next.delete(row!.task_id);
                  // The lease's flight sends it on (resolved below); else a new flight.
                  if (entry.flight) handed.set(entry.flight, claimed);
                  else this.launch(claimed);
                }
                entry.resolve({ completed: row, next: claimed });
                continue;
              }
              if (entry.op === 'lease') {
                entry.resolve({ next: handed.get(entry) });
                continue;
              }
              const claimed = entry.chain ? next.get(entry.taskId) : undefined;
              if (claimed) next.delete(entry.taskId);
              // Claiming nothing, a chained completion of a live task leaves no claim to make (`looked`).
              entry.resolve(claimed ? { next: claimed } : entry.op === 'done' && !entry.looked ? { unblocked: entry.taskId } : {});
            }
          },
          (error) => {
            this.reserved -= reserved;
            for (const entry of batch) entry.reject(error);
          },
        )
        .finally(() => {
          this.settling--;
          // A claim that found no room while this statement held some takes the wake-ups it left.
          if (reserved > 0 && (this.general || this.hinted.size > 0)) this.kick();
          this.flushSettles();
        });
    }
  }

  /**
   * One statement: the completions and leases of `batch`, each only while the claim named is still
   * the delivery's, and the next delivery of each task whose chained completion it wrote. Returns
   * those, by task.
   */
  private async settleBatch(batch: QueuedSettle[]): Promise<{ next: Map<string, Claimed>; completed: Map<string, NonNullable<Settled['completed']>> }> {
    const done = batch.filter((entry) => entry.op === 'done');
    const leased = batch.filter((entry) => entry.op === 'lease');
    const reported = batch.filter((entry) => entry.op === 'complete');
    const chained = done.filter((entry) => entry.chain);
    const reportedChained = reported.filter((entry) => entry.chain);
    const leaseMs = this.options.leaseMs;
    // One delivery alone (an idle dispatcher) is named directly: the lighter statement to run. Either
    // form's text is the same whatever the ids (arrays are one parameter): prepared once on PGlite.
    // Named directly, a statement also keeps its generic plan: the planners guess an array parameter's
    // unnest at a hundred rows and the custom plan at its length, so every call was planned anew
    // (3 ms on PGlite, twice the running of the statement that completes a lease and claims the next).
    const doneRows =
      done.length === 1
        ? sql`WHERE d.id = ${done[0].id} AND d.claimed_by = ${done[0].claimer}`
        : // By the ids alone (each row's claimer taken from its place in the array), no unnest to join:
          // joined to one, the planners read every open delivery (fresh statistics: a bitmap scan of
          // the open index, 1,211 rows for 98 completions) or rescanned the unnest for every row (a
          // nested loop, 9,506 rows removed by its filter for 98), 3 ms of the statement.
          sql`WHERE d.id = ANY(${done.map((e) => e.id)}::bigint[])
          AND d.claimed_by = (${done.map((e) => e.claimer)}::text[])[array_position(${done.map((e) => e.id)}::bigint[], d.id)]`;
    const leasedRows =
      leased.length === 1
        ? sql`FROM (SELECT ${leased[0].target}::text AS target) AS u WHERE d.id = ${leased[0].id} AND d.claimed_by = ${leased[0].claimer}`
        : // As `done`'s: by the ids alone, each row's claimer and target from its place in the arrays.
          sql`FROM (SELECT ${leased.map((e) => e.id)}::bigint[] AS ids, ${leased.map((e) => e.claimer)}::text[] AS claimers, ${leased.map((e) => e.target)}::text[] AS targets) AS u
          WHERE d.id = ANY(${leased.map((e) => e.id)}::bigint[]) AND d.claimed_by = u.claimers[array_position(u.ids, d.id)]`;
    const leasedTarget = leased.length === 1 ? sql`u.target` : sql`u.targets[array_position(u.ids, d.id)]`;
    const targetHeld = sql`(left(${leasedTarget}, ${PULL_CLAIM_PREFIX.length}) = ${PULL_CLAIM_PREFIX}
      OR EXISTS (SELECT 1 FROM version_replicas r WHERE r.version_id = d.version_id AND r.replica_key = ${leasedTarget} AND r.live))`;
    const notReported = reported.length > 0 ? sql`AND d.id NOT IN (SELECT id FROM reported)` : sql``;
    const reportedRows =
      reported.length === 1
        ? sql`(SELECT ${reported[0].id}::bigint AS id, ${reported[0].grant!.orgId}::text AS org_id, ${reported[0].grant!.all}::boolean AS every,
          ${JSON.stringify(reported[0].grant!.agentIds)}::jsonb AS agent_ids, ${JSON.stringify(reported[0].grant!.namespaceIds)}::jsonb AS namespace_ids) AS g`
        : sql`unnest(${reported.map((e) => e.id)}::bigint[], ${reported.map((e) => e.grant!.orgId)}::text[], ${reported.map((e) => e.grant!.all)}::boolean[],
          ${reported.map((e) => JSON.stringify(e.grant!.agentIds))}::jsonb[], ${reported.map((e) => JSON.stringify(e.grant!.namespaceIds))}::jsonb[])
          AS g(id, org_id, every, agent_ids, namespace_ids)`;
    const writes = [
      ...(done.length > 0
        ? [
            sql`done AS (
      UPDATE deliveries d SET status = 'done', claimed_by = NULL, claimed_until = NULL, last_error = NULL, updated_at = now()
      ${doneRows} AND d.status = 'in_flight'
      RETURNING d.id, d.task_id
    )`,
          ]
        : []),
      // An agent's report: while the delivery is open (claimed but not acknowledged yet counts: a fast
      // handler can finish before the lease is written, which then finds the row done and leaves it),
      // and its key may run the task's agent (domain/conversation.ts runnableTask).
      ...(reported.length > 0
        ? [
            sql`reported AS (
      UPDATE deliveries d SET status = 'done', claimed_by = NULL, claimed_until = NULL, leased_to = NULL, last_error = NULL, updated_at = now()
      FROM ${reportedRows}
      -- The ids again as an array: joined to the unnest alone, the planners read every open delivery.
      WHERE d.id = g.id ${reported.length === 1 ? sql`` : sql`AND d.id = ANY(${reported.map((e) => e.id)}::bigint[])`}
        AND (d.status IN ('in_flight', 'leased') OR (d.status = 'pending' AND d.attempts > 0))
        -- Asked of each row's own task: as a join, the planners crossed every task with every grant
        -- first (3,200 rows for 16 completions over 200 tasks, 30 ms on PGlite).
        AND (SELECT ${runnableTaskByGrant('g')} FROM tasks WHERE tasks.id = d.task_id)
      RETURNING d.id, d.task_id, d.method, d.attempts
    )`,
          ]
        : []),
      // Leased to the replica that took it while that one is live (a pulled delivery: to its stream).
      // One that went meanwhile (the runtime marked it gone before this write, so releaseLeases did
      // not find the lease) has its delivery out again at once, as releaseLeases does.
      ...(leased.length > 0
        ? [
            sql`leased AS (
      UPDATE deliveries d SET status = 'leased', leased_to = ${leasedTarget}, lease_ms = ${leaseMs}, claimed_by = NULL,
        claimed_until = now() + ${leaseMs} * interval '1 millisecond', updated_at = now()
      ${leasedRows} AND d.status = 'in_flight' ${notReported} AND ${targetHeld}
      RETURNING d.id
    )`,
            sql`unleased AS (
      UPDATE deliveries d SET ${releasedByGoneReplica(false)}
      ${leasedRows} AND d.status = 'in_flight' ${notReported} AND NOT ${targetHeld}
      RETURNING d.task_id
    )`,
          ]
        : []),
    ];
    // The agents' completions and the tasks of leases whose replica went, read back from the
    // statement's one row (a row with or without a claim).
    const report =
      reported.length > 0 || leased.length > 0
        ? sql`json_build_object(
            'completed', ${reported.length > 0 ? sql`(SELECT json_agg(json_build_object('id', r.id::text, 'task_id', r.task_id, 'method', r.method, 'attempts', r.attempts)) FROM reported r)` : sql`NULL`},
            'unleased', ${leased.length > 0 ? sql`(SELECT json_agg(u.task_id) FROM unleased u)` : sql`NULL`})`
        : undefined;
    const outcome = (rows: { reported?: SettleReport | null }[]) => {
      const summary = rows[0]?.reported;
      // Out again: the dispatchers claim them (this one at once), and what their agent left streaming ends.
      const unleased = summary?.unleased ?? [];
      if (unleased.length > 0) {
        for (const taskId of unleased)
          announceDeliveries(this.db, taskId).catch((error) => this.options.log?.(`announcing task ${taskId}'s delivery: ${(error as Error).message}`));
        interruptStreams(this.db, unleased, WRITER_GONE_REASON).catch((error) =>
          this.options.log?.(`ending the streams of a gone replica: ${(error as Error).message}`),
        );
      }
      return new Map((summary?.completed ?? []).map((row) => [row.id, row] as const));
    };
    if (chained.length === 0 && reportedChained.length === 0) {
      const result = await executePrepared(
        this.db,
        sql<{ reported: SettleReport | null }>`WITH ${sql.join(writes)} SELECT ${report ?? sql`NULL::json`} AS reported`,
      );
      return { next: new Map(), completed: outcome(result.rows) };
    }
    // A successor must be its task's first open turn once the completed one is done; the statement's
    // snapshot still sees that one open, so what `done` (or `reported`) wrote is left out of the test.
    // Per task, the first pending row that passes (LIMIT 1: a long queue is not tested row by row).
    // One completion alone (one task: the agent's report of a lease just granted, or a flight's
    // acknowledgement), named directly: its id is the one left out, its task the one its write
    // returned (none when the claim was lost).
    const only = done.length + reported.length === 1 ? (done[0] ?? reported[0]) : undefined;
    const finished = [...(done.length > 0 ? [sql`SELECT id, task_id FROM done`] : []), ...(reported.length > 0 ? [sql`SELECT id, task_id FROM reported`] : [])];
    const all = sql`(${sql.join(finished, sql` UNION ALL `)})`;
    const finishedIds = only ? sql`${only.id}` : sql`SELECT id FROM ${all} f`;
    // The task's first open turn once the finished ones are left out, found through the task (not
    // correlated with `o`: a scan of every open row of the task, testing each, cost a long queue its
    // length on every completion), claimed when it is due. The task's row is named by the task too,
    // not only through `o`: joined on o.task_id alone, both planners hashed a scan of every task for
    // each claimed row (PGlite, 100 tasks: 101 rows x 60 loops, half of a 60-row statement's time).
    const next = (task: RawBuilder<unknown>) => sql`
      SELECT o.id, o.status AS prior_status, t.current_version_id
      FROM deliveries o
      JOIN tasks t ON t.id = o.task_id AND t.id = ${task}
      WHERE o.id = ${firstOpenTurn(task, finishedIds)}
        AND o.status = 'pending' AND o.next_attempt_at <= now() AND o.priority >= 0
        AND ${noHookPendingBefore('t', sql`o.id`)}
        AND ${this.targetOf()}
      FOR UPDATE OF o SKIP LOCKED`;
    // The tasks of the chained completions the statement wrote, read from what it wrote: one whose
    // claim was lost (or whose report was refused) wrote nothing and claims nothing. (Tested on each
    // candidate row instead, an EXISTS over the writes, the statement took 200 buffer hits per
    // claimed row at 1000 tasks on PostgreSQL; 54 so.)
    const tasks = sql`(SELECT DISTINCT f.task_id FROM ${all} f WHERE f.id = ANY(${[...chained, ...reportedChained].map((e) => e.id)}::bigint[]))`;
    const pick = only
      ? next(sql`(SELECT task_id FROM ${sql.table(only.op === 'done' ? 'done' : 'reported')})`)
      : sql`SELECT n.* FROM ${tasks} AS x(task_id) CROSS JOIN LATERAL (${next(sql`x.task_id`)}) AS n`;
    if (!report) {
      const result = await executePrepared(this.db, this.claiming(this.id, undefined, pick, sql.join(writes)));
      return { next: new Map(result.rows.map((row) => [row.task_id, row])), completed: new Map() };
    }
    // One row at least, whatever was claimed: it carries the completions.
    const result = await executePrepared(
      this.db,
      this.claiming(this.id, undefined, pick, sql.join(writes), report) as RawBuilder<Claimed & { reported: SettleReport | null }>,
    );
    return { next: new Map(result.rows.filter((row) => row.id !== null).map((row) => [row.task_id, row])), completed: outcome(result.rows) };
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
  private async release(delivery: Settling, reason: string | null, claimer = this.id): Promise<void> {
    if (reason === null) {
      await this.db
        .updateTable('deliveries')
        .set({ status: 'pending', attempts: delivery.attempts - 1, claimed_by: null, claimed_until: null, updated_at: new Date() })
        .where('id', '=', delivery.id)
        .where('claimed_by', '=', claimer)
        .execute();
      return;
    }
    const delayMs = Math.min(this.options.backoffBaseMs * 2 ** Math.min(delivery.attempts - 1, 20), this.options.backoffMaxMs) * (0.75 + Math.random() * 0.25);
    const row = await sql<{ failing_since: Date }>`
      UPDATE deliveries SET status = 'pending', claimed_by = NULL, claimed_until = NULL, last_error = ${reason},
        failing_since = COALESCE(failing_since, now()), next_attempt_at = now() + ${Math.round(delayMs)} * interval '1 millisecond', updated_at = now()
      WHERE id = ${delivery.id} AND claimed_by = ${claimer}
      RETURNING failing_since`.execute(this.db);
    const since = row.rows[0]?.failing_since;
    if (since && Date.now() - new Date(since).getTime() >= this.options.retryBudgetMs) await this.failTask(delivery, reason);
  }

  /**
   * The retry budget is spent: the task becomes FAILED naming the cause, and its open deliveries are
   * dropped. A control delivery that could not be delivered fails alone: the task's turns go on.
   */
  private async failTask(delivery: Settling, reason: string): Promise<void> {
    if (delivery.kind !== 'turn') {
      await this.db
        .updateTable('deliveries')
        .set({ status: 'failed', claimed_by: null, claimed_until: null, leased_to: null, last_error: reason, updated_at: new Date() })
        .where('id', '=', delivery.id)
        .execute();
      this.options.log?.(`delivery ${delivery.id} (${delivery.method}, task ${delivery.task_id}) failed: ${reason}`);
      return;
    }
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
    this.unsubscribeCompletions();
    this.unsubscribeInsertClaims();
    // Their routes end the streams; `agentctl dev` reconnects (to this server restarted, or another replica).
    for (const pull of this.pulls.values()) pull.end();
    if (this.timer) clearTimeout(this.timer);
    // Leases waiting for their completions go now (closed: they wait no more; a lease answered later
    // does not wait), before the flights that wait for those writes are awaited.
    clearTimeout(this.leaseTimer);
    for (const id of [...this.waitingLeases.keys()]) this.queueWaitingLease(id);
    this.flushSettles();
    await Promise.allSettled([...this.inFlight, this.sweep]);
    while (this.leaseWrites.size > 0) await Promise.allSettled([...this.leaseWrites]);
    RUNNING_HERE.delete(this.id);
    await this.listener?.end().catch(() => {});
    await this.http.close().catch(() => {});
  }
}

function toRequest(delivery: Claimed, agent: AcpAgentRef, task: Task, acpType: string, options: { leaseMs: number; interruptGraceMs: number }): AcpRequest {
  const request = methodRequest(delivery, agent, task, acpType, options);
  // A shadow task's delivery (a rehearsal): the ADK tells the handler (ctx.rehearsal).
  if (delivery.task_row.shadow_of) request.params.rehearsal = true;
  return request;
}

function methodRequest(delivery: Claimed, agent: AcpAgentRef, task: Task, acpType: string, options: { leaseMs: number; interruptGraceMs: number }): AcpRequest {
  const base = { jsonrpc: '2.0' as const, id: delivery.id };
  // The lease, and the completions of the agent's other deferred deliveries taken in the answer.
  const offer = { lease_ms: options.leaseMs, completions_in_answer: true as const };
  switch (delivery.method) {
    case 'task/create':
      return { ...base, method: 'task/create', params: { agent, task, params: delivery.payload.params ?? null, ...offer } };
    case 'event/send':
      // A sync agent answers a user's event inline: it gets message/send with the event's content.
      if (acpType === 'sync') return { ...base, method: 'message/send', params: { agent, task, content: delivery.payload.event!.content } };
      return {
        ...base,
        method: 'event/send',
        params: { agent, task, event: delivery.payload.event!, ...(delivery.payload.events ? { events: delivery.payload.events } : {}), ...offer },
      };
    case 'task/cancel':
      return { ...base, method: 'task/cancel', params: { agent, task, ...offer } };
    case 'task/interrupt':
      return {
        ...base,
        method: 'task/interrupt',
        params: { agent, task, up_to_delivery_id: delivery.payload.up_to_delivery_id ?? '0', grace_ms: options.interruptGraceMs },
      };
    case 'task/migrate':
      return { ...base, method: 'task/migrate', params: { agent, task, migration: delivery.payload.migration!, ...offer } };
    case 'message/send':
      throw new DeliveryFailure('message/send is derived from event/send, never enqueued');
  }
}

/** The well-formed completions an answer carried (`AcpResult.completed`), as many as one request may report; the rest ignored. */
function carriedCompletions(list: unknown): AcpCarriedCompletion[] {
  if (!Array.isArray(list)) return [];
  const carried: AcpCarriedCompletion[] = [];
  for (const entry of list.slice(0, MAX_COMPLETIONS_PER_REQUEST)) {
    const report = DeliveryCompletionReport.safeParse(entry);
    if (report.success) carried.push(report.data);
  }
  return carried;
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
