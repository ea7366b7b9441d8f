import { mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { mkdir } from 'node:fs/promises';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import {
  ACP_ERRORS,
  ACP_METHODS,
  ACP_PATH,
  SIGNATURE_HEADER,
  verifySignature,
  type AcpLeaseOffer,
  type AcpMethod,
  type AcpParams,
  type AcpRequest,
  type AcpResponse,
  type AcpResult,
} from '../contract/acp.js';
import type { Content, Event, MessageContent, MessageContentInput } from '../contract/conversation.js';
import { UnreachableError } from '../client/index.js';
import { adk as defaultAdk, type Adk, type JsonObject } from './adk.js';
import { readProcessConfig } from './config.js';
import { TaskContext } from './context.js';
import { AdkError, TurnInterruptedError } from './errors.js';
import { otlpConfigured, Turn } from './trace.js';
import { CompletionCarriage } from './completions.js';
import type { SpanInput } from '../contract/traces.js';
import type { MessageStream } from './stream.js';

type Awaitable<T> = T | Promise<T>;
type HandlerName = 'onCreate' | 'onEvent' | 'onCancel' | 'onMessage' | 'onMigrate';

/** A version as onMigrate is told it: its id and number (`v2` is number 2). */
export interface MigrationVersion {
  id: string;
  number: number;
}

export interface AgentHandlers {
  /** A new task: `params` as the task was created with. */
  onCreate?(ctx: TaskContext, params: JsonObject | null): Awaitable<void>;
  /** An event sent to the task (`ctx.event` is it too). */
  onEvent?(ctx: TaskContext, event: Event): Awaitable<void>;
  onCancel?(ctx: TaskContext): Awaitable<void>;
  /**
   * Sync agents (`acp_type: sync`): answers a message inline. What it returns, and what it sends
   * with `ctx.messages.send`, is recorded as agent messages and returned to the caller.
   */
  onMessage?(ctx: TaskContext, content: Content): Awaitable<MessageContentInput | MessageContentInput[] | undefined>;
  /**
   * The task moved to this version (a migration; a rollback, where `from` is the newer): runs before
   * any later event of the task, and may rewrite its state (`ctx.state`) to this version's shape. If
   * it throws, the task goes back to `from` and the error is kept on the task (`tasks get`).
   */
  onMigrate?(ctx: TaskContext, migration: { from: MigrationVersion; to: MigrationVersion }): Awaitable<void>;
}

/** The handler names an agent declares at registration (a rehearsal and a migration read them). */
const HANDLER_NAMES = ['onCreate', 'onEvent', 'onCancel', 'onMessage', 'onMigrate'] as const satisfies readonly HandlerName[];

export interface AgentServerOptions extends AgentHandlers {
  /** Handlers of different tasks that may run at once (default 32); one task's run one at a time. */
  concurrency?: number;
  /** Default: PORT, else a free port. */
  port?: number;
  /** Default: HOST, else 127.0.0.1 (a pod sets 0.0.0.0). */
  host?: string;
  /** Where the platform reaches this process (default: AGENTCTL_ACP_URL, else http://127.0.0.1:<port>). */
  acpUrl?: string;
  /** Default: AGENTCTL_SIGNING_SECRET. */
  signingSecret?: string;
  /** How long SIGTERM waits for running and queued handlers (default 25 s). */
  gracePeriodMs?: number;
  /** The toolkit handlers use (default: `adk`, which gets the runtime key on registration). */
  adk?: Adk;
  /** On a fatal start error print it and exit 1 (default), or let listen() reject. */
  exitOnFatal?: boolean;
  /** Registration attempts on 5xx and connection errors (default 5), and the first backoff step (default 500 ms). */
  registerAttempts?: number;
  registerBackoffMs?: number;
  /**
   * How long an interrupted handler may run on after its signal fired before its turn is cut off and
   * its delivery completed (default: what the platform sends with the interrupt, AGENTCTL_INTERRUPT_GRACE_MS
   * on the server, else 10 s).
   */
  interruptGraceMs?: number;
}

/** A handler running here: its signal, and how it is cut off once the grace after an interrupt is over. */
interface RunningTurn {
  controller: AbortController;
  cutOff: () => void;
  cutOffTimer?: NodeJS.Timeout;
}

/** listen() could not start: what went wrong, in a sentence that names the cause. */
export class AgentStartError extends Error {
  override name = 'AgentStartError';
}

const MAX_BODY_BYTES = 2 * 1024 * 1024;
const REMEMBERED_DELIVERIES = 10_000;

/** A delivery this process took: its handler's outcome; for one taken under the platform's lease, whether it is over (handler run, completion reported). */
interface Taken {
  outcome: Promise<MessageContent[]>;
  leased: boolean;
  settled: boolean;
  /** The handler's spans (README "Traces"), reported with the completion. */
  turn?: Turn;
}

/**
 * The agent's side of the protocol (README "Writing agents: the ADK"): serves `GET /healthz` and signed JSON-RPC on
 * `POST /api`, registers with the one-time token, runs handlers per task in delivery order.
 */
export class AgentServer {
  private server?: Server;
  private draining = false;
  private readonly queues: TaskQueues;
  private readonly seen = new Map<string, Taken>();
  /** Completions waiting for an answer to carry them (else they go by request). */
  private readonly carriage = new CompletionCarriage((report) => this.adk.completeDelivery(report.deliveryId, report.spans, report.traceparent));
  /** Completions being reported: a SIGTERM waits for them as for the handlers (else the delivery waits out its lease). */
  private readonly reporting = new Set<Promise<unknown>>();
  /** Handlers running now, by task and delivery id. */
  private readonly turns = new Map<string, Map<string, RunningTurn>>();
  /** Per task, the newest delivery an interrupt was for: one that arrives after its interrupt stops at once. */
  private readonly interruptedUpTo = new Map<string, string>();
  private readonly adk: Adk;
  private signingSecret = '';
  private dataRoot = '';
  private agentName?: string;
  private otlp?: Promise<import('../client/otlp-export.js').OtlpSpanExporter>;

  constructor(private readonly options: AgentServerOptions) {
    this.queues = new TaskQueues(Math.max(1, options.concurrency ?? 32));
    this.adk = options.adk ?? defaultAdk;
  }

  /** Starts serving, then registers; resolves with where it listens. */
  async listen(): Promise<{ port: number; url: string }> {
    try {
      return await this.start();
    } catch (error) {
      if (this.options.exitOnFatal === false) throw error;
      log(`cannot start: ${(error as Error).message}`);
      process.exit(1);
    }
  }

  /** Stops taking work, waits for handlers (up to the grace period), closes the port. Resolves true when every handler finished. */
  async close(gracePeriodMs = this.options.gracePeriodMs ?? 25_000): Promise<boolean> {
    this.draining = true;
    const closed = new Promise<void>((resolve) => (this.server ? this.server.close(() => resolve()) : resolve()));
    this.server?.closeIdleConnections();
    let timer: NodeJS.Timeout | undefined;
    const finished = await Promise.race([
      this.queues.idle().then(async () => {
        // The handlers are done; their completions go out before the process does.
        while (this.reporting.size) await Promise.allSettled([...this.reporting]);
        return true;
      }),
      new Promise<boolean>((resolve) => (timer = setTimeout(() => resolve(false), gracePeriodMs))),
    ]);
    clearTimeout(timer);
    this.server?.closeAllConnections();
    await closed;
    return finished;
  }

  private async start(): Promise<{ port: number; url: string }> {
    const config = readProcessConfig();
    const secret = this.options.signingSecret ?? config.signingSecret;
    if (!secret)
      throw new AgentStartError(
        'no signing secret: set AGENTCTL_SIGNING_SECRET (a runtime sets it; for a hand-started agent read it with `GET /versions/{id}/signing-secret`)',
      );
    this.signingSecret = secret;
    this.dataRoot = path.resolve(config.dataRoot ?? path.join(tmpdir(), `agentctl-agent-${process.pid}`));
    const server = (this.server = createServer((req, res) => void this.route(req, res)));
    server.keepAliveTimeout = 65_000;
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(this.options.port ?? config.port ?? 0, this.options.host ?? process.env.HOST ?? '127.0.0.1', () => resolve());
    });
    const port = (server.address() as AddressInfo).port;
    const url = (this.options.acpUrl ?? process.env.AGENTCTL_ACP_URL ?? `http://127.0.0.1:${port}`).replace(/\/+$/, '');
    try {
      await this.register(config, url);
    } catch (error) {
      server.close();
      throw error;
    }
    process.once('SIGTERM', () => void this.shutdown('SIGTERM'));
    process.once('SIGINT', () => void this.shutdown('SIGINT'));
    log(`listening on ${url}${this.agentName ? ` as ${this.agentName}` : ''}`);
    return { port, url };
  }

  private async register(config: ReturnType<typeof readProcessConfig>, acpUrl: string): Promise<void> {
    if (!config.registrationToken) return; // started by hand with AGENTCTL_API_KEY: nothing to register
    if (!config.versionId) throw new AgentStartError('AGENTCTL_REGISTRATION_TOKEN is set but AGENTCTL_VERSION_ID is not');
    const attempts = this.options.registerAttempts ?? 5;
    for (let attempt = 1; ; attempt++) {
      try {
        const registered = await this.adk.call('registerVersion', {
          body: {
            version_id: config.versionId,
            branch_id: config.branchId,
            acp_url: acpUrl,
            registration_token: config.registrationToken,
            registration_metadata: { handlers: HANDLER_NAMES.filter((name) => typeof this.options[name] === 'function') },
          } as never,
        });
        if (!registered.agent_api_key) throw new AgentStartError(`the service at ${this.adk.baseUrl} registered the version but returned no runtime key`);
        this.adk.useApiKey(registered.agent_api_key);
        this.agentName = registered.agent_name;
        return;
      } catch (error) {
        const transient = error instanceof UnreachableError || (error instanceof AdkError && error.status >= 500);
        if (error instanceof AdkError && !transient) {
          throw new AgentStartError(`registration refused by ${this.adk.baseUrl} (${error.status} ${error.code}): ${error.message}`);
        }
        if (!transient) throw error;
        if (attempt >= attempts) throw new AgentStartError(`could not register with ${this.adk.baseUrl} after ${attempts} attempts: ${error.message}`);
        const delay = (this.options.registerBackoffMs ?? 500) * 2 ** (attempt - 1);
        log(`registration attempt ${attempt} of ${attempts} failed (${error.message}); retrying in ${delay} ms`);
        await new Promise((resolve) => setTimeout(resolve, delay));
      }
    }
  }

  private async shutdown(signal: string): Promise<void> {
    log(`${signal}: finishing running handlers, taking no new work`);
    const finished = await this.close();
    if (!finished) log('grace period over with handlers still running');
    process.exit(finished ? 0 : 1);
  }

  private async route(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const url = req.url?.split('?')[0];
    if (req.method === 'GET' && url === '/healthz') return json(res, this.draining ? 503 : 200, { status: this.draining ? 'draining' : 'ok' });
    if (url !== ACP_PATH) return json(res, 404, { detail: 'Not found', code: 'not_found' });
    if (req.method !== 'POST') return json(res, 405, { detail: 'Use POST', code: 'method_not_allowed' });
    let body: string;
    try {
      body = await readBody(req);
    } catch {
      return rpcError(res, 413, null, ACP_ERRORS.invalidRequest, 'request body too large');
    }
    const check = verifySignature(this.signingSecret, body, req.headers[SIGNATURE_HEADER] as string | undefined);
    if (!check.ok) return rpcError(res, 401, null, ACP_ERRORS.unauthorized, `signature ${check.reason}`);
    let request: AcpRequest;
    try {
      request = JSON.parse(body);
    } catch {
      return rpcError(res, 400, null, ACP_ERRORS.parseError, 'body is not JSON');
    }
    if (request?.jsonrpc !== '2.0' || typeof request.id !== 'string' || !request.params?.task?.id || !request.params.agent?.id) {
      return rpcError(res, 400, request?.id ?? null, ACP_ERRORS.invalidRequest, 'not a JSON-RPC 2.0 delivery');
    }
    if (!(ACP_METHODS as readonly string[]).includes(request.method))
      return rpcError(res, 400, request.id, ACP_ERRORS.methodNotFound, `unknown method ${request.method}`);
    if (request.method === 'message/send' && !this.options.onMessage)
      return rpcError(res, 400, request.id, ACP_ERRORS.methodNotFound, 'this agent has no onMessage handler (an async agent)');
    // A control delivery: acted on at once, beside the task's running turn (also while draining).
    if (request.method === 'task/interrupt') {
      const params = request.params as AcpParams['task/interrupt'];
      this.interrupt(params.task.id, String(params.up_to_delivery_id), this.options.interruptGraceMs ?? params.grace_ms ?? 10_000);
      return rpcResult(res, request.id, { accepted: true });
    }
    if (this.draining) return rpcError(res, 503, request.id, ACP_ERRORS.internal, 'shutting down');

    // Deliveries are at least once: a repeat is acknowledged (or answered) without running again,
    // also one this replica's previous process finished but could not report (the server died).
    let taken = this.seen.get(request.id);
    if (!taken && request.method !== 'message/send' && this.handledBefore(request.params.task.id, request.id)) {
      taken = { outcome: Promise.resolve([]), leased: false, settled: true };
      this.remember(request.id, taken);
    }
    if (!taken) {
      const turn = new Turn(request.params.traceparent, request.params.task.id, request.id);
      const outcome = this.queues.run(request.params.task.id, async () => {
        // Settled: the handler finished, or its failure reached the platform. One that could not be
        // reported (the server is gone) is not: it runs again when the delivery comes again.
        let settled = true;
        try {
          return await this.handle(request, turn, () => (settled = false));
        } finally {
          // Recorded before the handler's turn ends: a SIGTERM waits for it (close() waits for the queues).
          if (settled && request.method !== 'message/send') this.recordHandled(request.params.task.id, request.id);
        }
      });
      outcome.catch(() => {});
      const leaseMs = request.method === 'message/send' ? undefined : (request.params as AcpLeaseOffer).lease_ms;
      taken = { outcome, leased: typeof leaseMs === 'number' && leaseMs > 0, settled: false, turn };
      this.remember(request.id, taken);
      if (taken.leased) this.holdLease(request.id, taken, leaseMs!);
    }
    // Async: the handler runs after this answer. Taking the platform's lease (deferred) keeps the
    // delivery ours until the handler finished, so a process killed mid-handler gets it again; a
    // repeat of one already finished (its completion report was lost) is done with this answer.
    if (request.method !== 'message/send') {
      const answer: AcpResult = taken.leased && !taken.settled ? { accepted: true, deferred: true } : { accepted: true };
      // The answer carries the completions of this task's or other tasks' handlers that finished this turn.
      const carried = (request.params as AcpLeaseOffer).completions_in_answer === true ? this.carriage.take() : undefined;
      if (!carried) return rpcResult(res, request.id, answer);
      // Closed once written (finished) or cut off (not): what it carried goes by request then.
      res.once('close', () => carried.settle(res.writableFinished));
      return rpcResult(res, request.id, { ...answer, completed: carried.completed });
    }
    try {
      const messages = await taken.outcome;
      rpcResult(res, request.id, { accepted: true, messages, ...(await this.spansToReport(taken)) });
    } catch (error) {
      rpcError(res, 500, request.id, ACP_ERRORS.internal, (error as Error).message);
    }
  }

  /**
   * The last delivery of a task whose handler finished here, kept under the data root: a process
   * started again (the server was killed, and its agents with it) knows what its predecessor ran.
   * One task's deliveries come one at a time in increasing id order, so any id up to it is a repeat.
   */
  private handledFile(taskId: string): string {
    return path.join(this.dataRoot, 'tasks', taskId, 'handled-delivery');
  }

  private handledBefore(taskId: string, deliveryId: string): boolean {
    let last: string;
    try {
      last = readFileSync(this.handledFile(taskId), 'utf8').trim();
    } catch {
      return false;
    }
    if (last === deliveryId) return true;
    return /^\d+$/.test(last) && /^\d+$/.test(deliveryId) && BigInt(deliveryId) <= BigInt(last);
  }

  private recordHandled(taskId: string, deliveryId: string): void {
    const file = this.handledFile(taskId);
    try {
      mkdirSync(path.dirname(file), { recursive: true });
      // Written beside and renamed: a kill mid-write leaves the previous record, never half of one.
      writeFileSync(`${file}.tmp`, deliveryId);
      renameSync(`${file}.tmp`, file);
    } catch (error) {
      log(`could not record delivery ${deliveryId} as handled: ${(error as Error).message}`);
    }
  }

  private remember(id: string, taken: Taken): void {
    this.seen.set(id, taken);
    if (this.seen.size > REMEMBERED_DELIVERIES) this.seen.delete(this.seen.keys().next().value!);
  }

  /**
   * Keeps a deferred delivery's lease alive while its handler waits and runs (renewed every third
   * of the lease), then reports that it finished, whether it succeeded or threw (a throw was
   * reported as a handler error first). A report that fails is logged: the platform sends the
   * delivery again when the lease runs out, and this process answers that repeat as done.
   */
  private holdLease(deliveryId: string, taken: Taken, leaseMs: number): void {
    const renew = setInterval(
      () => {
        this.adk
          .renewDeliveryLease(deliveryId, taken.turn?.traceparent())
          .catch((error) => log(`could not renew the lease of delivery ${deliveryId}: ${(error as Error).message}`));
      },
      Math.max(250, Math.floor(leaseMs / 3)),
    );
    renew.unref();
    const reported = taken.outcome
      .catch(() => {})
      .then(async () => {
        clearInterval(renew);
        const { spans } = await this.spansToReport(taken);
        // A server away for longer than the client's retries (stopped and started again) still holds
        // the delivery leased to this process: reported once it is back, not when the lease runs out.
        const until = Date.now() + leaseMs;
        const report = { deliveryId, ...(spans?.length ? { spans } : {}), traceparent: taken.turn?.traceparent() };
        for (let attempt = 1; ; attempt++) {
          try {
            // First in the answer to a later delivery when one goes this turn (else by request), then by request.
            return await (attempt === 1 ? this.carriage.report(report) : this.adk.completeDelivery(deliveryId, spans, report.traceparent));
          } catch (error) {
            const transient = error instanceof UnreachableError || (error instanceof AdkError && error.status >= 500);
            if (!transient || Date.now() >= until) throw error;
            await new Promise((resolve) => setTimeout(resolve, Math.min(500 * 2 ** (attempt - 1), 2_000)));
          }
        }
      })
      .catch((error) => log(`could not report delivery ${deliveryId} finished: ${(error as Error).message}`))
      .finally(() => {
        taken.settled = true;
        this.reporting.delete(reported);
      });
    this.reporting.add(reported);
  }

  /**
   * The handler's spans go with its completion (or its sync answer); over OTLP instead when the
   * agent's environment names an endpoint. Each turn's spans are reported once.
   */
  private async spansToReport(taken: Taken): Promise<{ spans?: SpanInput[] }> {
    const spans = taken.turn?.spans.splice(0);
    if (!spans?.length) return {};
    if (!otlpConfigured()) return { spans };
    try {
      this.otlp ??= import('../client/otlp-export.js').then((m) => m.createOtlpSpanExporter(this.agentName ?? 'agent', 'agentctl-adk'));
      (await this.otlp).export(spans.map((s) => ({ ...s, start_us: s.start_time_us, end_us: s.end_time_us, attributes: s.attributes ?? {} })));
    } catch (error) {
      log(`could not export spans over OTLP: ${(error as Error).message}`);
    }
    return {};
  }

  /**
   * Interrupts the task's handlers of deliveries up to `upTo`: their signal fires (their open message
   * streams end INTERRUPTED); one still running `graceMs` later is cut off (its turn ends, its
   * delivery is completed; the code itself cannot be stopped, but its context takes no more writes).
   */
  private interrupt(taskId: string, upTo: string, graceMs: number): void {
    const previous = this.interruptedUpTo.get(taskId);
    if (previous === undefined || !deliveryAfter(previous, upTo)) this.interruptedUpTo.set(taskId, upTo);
    for (const [deliveryId, turn] of this.turns.get(taskId) ?? []) {
      if (deliveryAfter(deliveryId, upTo) || turn.controller.signal.aborted) continue;
      log(`interrupting the handler of delivery ${deliveryId} (task ${taskId}); cut off in ${graceMs} ms unless it returns`);
      turn.controller.abort(new TurnInterruptedError());
      turn.cutOffTimer = setTimeout(() => turn.cutOff(), graceMs);
      turn.cutOffTimer.unref();
    }
  }

  /** Runs one delivery's handler in its span; a throw is reported to the platform (and rethrown for a sync answer), `unreported` called when that fails. */
  private handle(request: AcpRequest, traced: Turn, unreported: () => void): Promise<MessageContent[]> {
    const method = request.method as Exclude<AcpMethod, 'task/interrupt'>;
    const attributes = { 'agentctl.task_id': request.params.task.id, 'agentctl.delivery_id': request.id, 'agentctl.handler': HANDLERS[method] };
    return traced.run(HANDLERS[method], 'server', attributes, () => this.runHandler(request, traced, unreported));
  }

  private async runHandler(request: AcpRequest, traced: Turn, unreported: () => void): Promise<MessageContent[]> {
    const method = request.method as Exclude<AcpMethod, 'task/interrupt'>;
    const { task } = request.params;
    const event = method === 'event/send' ? (request.params as AcpParams['event/send']).event : null;
    const batch = method === 'event/send' ? ((request.params as AcpParams['event/send']).events ?? [event!]) : [];
    const handlerName = HANDLERS[method];
    // The turn's signal: an interrupt that came before the delivery (it travels beside it) applies at once.
    let cutOff!: () => void;
    const cutOffReached = new Promise<'cut off'>((resolve) => (cutOff = () => resolve('cut off')));
    const turn: RunningTurn = { controller: new AbortController(), cutOff };
    const interruptedUpTo = this.interruptedUpTo.get(task.id);
    if (interruptedUpTo !== undefined && !deliveryAfter(request.id, interruptedUpTo)) {
      log(`delivery ${request.id} (task ${task.id}) was interrupted before its handler started: not run`);
      return [];
    }
    const running = this.turns.get(task.id) ?? new Map<string, RunningTurn>();
    this.turns.set(task.id, running.set(request.id, turn));
    try {
      return await this.runTurn(request, method, handlerName, event, batch, turn, cutOffReached, unreported, traced);
    } finally {
      clearTimeout(turn.cutOffTimer);
      running.delete(request.id);
      if (running.size === 0 && this.turns.get(task.id) === running) this.turns.delete(task.id);
    }
  }

  private async runTurn(
    request: AcpRequest,
    method: Exclude<AcpMethod, 'task/interrupt'>,
    handlerName: HandlerName,
    event: Event | null,
    batch: Event[],
    turn: RunningTurn,
    cutOffReached: Promise<'cut off'>,
    unreported: () => void,
    traced: Turn,
  ): Promise<MessageContent[]> {
    const { task, agent } = request.params;
    const signal = turn.controller.signal;
    const streams: MessageStream[] = [];
    let cutOff = false;
    const sent: MessageContent[] = [];
    const taskDir = path.join(this.dataRoot, 'tasks', task.id);
    const workspace = path.join(taskDir, 'workspace');
    const syncOptions = { stateFile: path.join(taskDir, 'workspace.sync.json') };
    let failure: unknown;
    let syncedDown = false;
    try {
      await mkdir(workspace, { recursive: true });
      await traced.run('workspace sync down', 'internal', {}, () =>
        this.adk.filesystem.syncDown(task.filesystem_id, workspace, syncOptions).catch((error) => {
          throw new WorkspaceSyncError('down', task.filesystem_id, error);
        }),
      );
      syncedDown = true;
      const ctx = new TaskContext(this.adk, task, agent, event, workspace, (content) => sent.push(content), {
        signal,
        batch,
        onStream: (stream) => streams.push(stream),
        cutOff: () => cutOff,
        trace: traced,
        rehearsal: request.params.rehearsal === true,
      });
      const handler = (async () => {
        switch (method) {
          case 'task/create':
            await this.options.onCreate?.(ctx, (request.params as AcpParams['task/create']).params ?? null);
            break;
          case 'event/send':
            await this.options.onEvent?.(ctx, event!);
            break;
          case 'task/cancel':
            await this.options.onCancel?.(ctx);
            break;
          case 'task/migrate': {
            const m = (request.params as AcpParams['task/migrate']).migration;
            await this.options.onMigrate?.(ctx, {
              from: { id: m.from_version_id, number: m.from_version_number },
              to: { id: m.to_version_id, number: m.to_version_number },
            });
            break;
          }
          case 'message/send': {
            const reply = await this.options.onMessage!(ctx, (request.params as AcpParams['message/send']).content);
            for (const content of reply === undefined ? [] : Array.isArray(reply) ? reply : [reply]) await ctx.messages.send(content);
            break;
          }
        }
      })();
      handler.catch(() => {});
      // An interrupted handler that ignores its signal is cut off after the grace: the turn ends here.
      if ((await Promise.race([handler, cutOffReached])) === 'cut off') {
        cutOff = true;
        log(`the handler of delivery ${request.id} (task ${task.id}) ignored the interrupt; cut off, its delivery completed`);
      }
    } catch (error) {
      failure = error;
    }
    // Streams the handler left open end now: INTERRUPTED (with the interrupt's reason, or because
    // the handler returned or threw without finishing them), never stuck IN_PROGRESS.
    const unfinished = streams.filter((stream) => !stream.finished);
    await Promise.all(unfinished.map((stream) => stream.interrupt(failure === undefined ? 'the handler ended without finishing it' : 'the handler failed')));
    // An interrupted turn that ends by throwing (the signal's reason, or what the abort caused) is not a failure.
    if (failure !== undefined && signal.aborted) {
      log(`${handlerName} of ${task.id} stopped after its interrupt: ${failure instanceof Error ? failure.message : String(failure)}`);
      failure = undefined;
    }
    // Up after the handler even when it threw: what it wrote before failing is kept, not lost.
    if (syncedDown) {
      await traced
        .run('workspace sync up', 'internal', {}, () => this.adk.filesystem.syncUp(task.filesystem_id, workspace, syncOptions))
        .catch((error) => {
          failure ??= new WorkspaceSyncError('up', task.filesystem_id, error);
        });
    }
    if (failure === undefined) return sent;
    const message = failure instanceof Error ? failure.message || failure.name : String(failure);
    log(`${handlerName} of ${task.id} failed: ${failure instanceof Error && failure.stack ? failure.stack : message}`);
    try {
      await this.adk.reportHandlerError(task.id, handlerName, message, event?.id ?? null);
    } catch (reportError) {
      unreported();
      log(`could not report the failure of ${handlerName} of ${task.id}: ${(reportError as Error).message}`);
    }
    throw failure;
  }
}

/** The task's workspace could not be synced: the handler fails visibly rather than lose work. */
export class WorkspaceSyncError extends Error {
  override name = 'WorkspaceSyncError';
  constructor(direction: 'down' | 'up', filesystemId: string, cause: unknown) {
    super(`workspace sync ${direction} (${filesystemId}) failed: ${cause instanceof Error ? cause.message : String(cause)}`, { cause });
  }
}

/** Whether delivery `a` came after delivery `b` (ids are increasing integers; others compare as text). */
function deliveryAfter(a: string, b: string): boolean {
  return /^\d+$/.test(a) && /^\d+$/.test(b) ? BigInt(a) > BigInt(b) : a > b;
}

const HANDLERS: Record<Exclude<AcpMethod, 'task/interrupt'>, HandlerName> = {
  'task/create': 'onCreate',
  'event/send': 'onEvent',
  'task/cancel': 'onCancel',
  'message/send': 'onMessage',
  'task/migrate': 'onMigrate',
};

/** One FIFO per task, and at most `limit` jobs running across tasks. */
class TaskQueues {
  private readonly tails = new Map<string, Promise<void>>();
  private running = 0;
  private readonly waiting: (() => void)[] = [];
  constructor(private readonly limit: number) {}

  run<T>(taskId: string, job: () => Promise<T>): Promise<T> {
    const result = (this.tails.get(taskId) ?? Promise.resolve()).then(() => this.withSlot(job));
    const tail = result.then(
      () => {},
      () => {},
    );
    this.tails.set(taskId, tail);
    void tail.then(() => {
      if (this.tails.get(taskId) === tail) this.tails.delete(taskId);
    });
    return result;
  }

  /** Resolves when every job queued so far (and any queued meanwhile) has finished. */
  async idle(): Promise<void> {
    while (this.tails.size) await Promise.all(this.tails.values());
  }

  private async withSlot<T>(job: () => Promise<T>): Promise<T> {
    if (this.running >= this.limit) await new Promise<void>((resolve) => this.waiting.push(resolve));
    this.running++;
    try {
      return await job();
    } finally {
      this.running--;
      this.waiting.shift()?.();
    }
  }
}

function readBody(req: IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    req.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size > MAX_BODY_BYTES) {
        reject(new Error('too large'));
        req.destroy();
      } else chunks.push(chunk);
    });
    req.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    req.on('error', reject);
  });
}

function json(res: ServerResponse, status: number, body: unknown): void {
  const text = JSON.stringify(body);
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) });
  res.end(text);
}

function rpcResult(res: ServerResponse, id: string, result: AcpResponse['result']): void {
  json(res, 200, { jsonrpc: '2.0', id, result } satisfies AcpResponse);
}

function rpcError(res: ServerResponse, status: number, id: string | null, code: number, message: string): void {
  json(res, status, { jsonrpc: '2.0', id, error: { code, message } });
}

function log(line: string): void {
  process.stderr.write(`agentctl-adk: ${line}\n`);
}
