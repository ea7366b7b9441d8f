import { createClient, type CallOptions, type Client } from '../client/index.js';
import { createUndiciTransport } from '../client/undici-transport.js';
import type { Content, ContentInput, Event, Message, MessageContent, MessageContentInput, Tracker } from '../contract/conversation.js';
import type { EndpointInput, EndpointName, EndpointOutput } from '../contract/endpoints.js';
import type { Agent, State, Task } from '../contract/resources.js';
import type { SystemFolderType } from '../contract/filesystems.js';
import type { SyncOptions, SyncResult } from '../sync/index.js';
import { readProcessConfig } from './config.js';
import { httpError, NotFoundError, toAdkError } from './errors.js';
import path from 'node:path';
import { activeTraceHeaders } from './trace.js';
import { newSpanId, TRACEPARENT_HEADER } from '../contract/trace-context.js';
import type { SpanInput } from '../contract/traces.js';
import { CompletionReporter, type CompletionReport } from './completions.js';

export type {
  Agent,
  Content,
  ContentInput,
  Event,
  Message,
  MessageContent,
  MessageContentInput,
  State,
  Task,
  Tracker,
  SyncOptions,
  SyncResult,
  SystemFolderType,
};
export type JsonObject = Record<string, unknown>;

/** How long `warmUp` waits for the server's answers. */
const WARM_REQUEST_MS = 1_000;
export type MessageList = EndpointOutput<'listMessages'>;
export type EventList = EndpointOutput<'listEvents'>;
export type TrackerList = EndpointOutput<'listTrackers'>;

export interface AdkOptions {
  /** The service's URL (default: AGENTCTL_BASE_URL, else DEFAULT_BASE_URL, http://127.0.0.1:7420). */
  baseUrl?: string;
  /** An API key (default: AGENTCTL_API_KEY). An AgentServer sets its runtime key after registering. */
  apiKey?: string;
  /** Per attempt, in milliseconds (default 30 s). */
  timeoutMs?: number;
  /** Extra attempts after 429, 503 or a connection failure, for reads and for creates (default 3). */
  retries?: number;
}

export interface ListPage {
  /** Only records after this sequence number of the task (default 0: from the start). */
  afterSequenceId?: number;
  limit?: number;
}

/**
 * The toolkit: one typed request per call, through the project's client on a keep-alive pool.
 * Every create carries a fresh Idempotency-Key (the client adds one for every endpoint that takes
 * it), so the client's retries never duplicate it.
 */
export class Adk {
  readonly messages = {
    /** Adds an agent message to the task's transcript. */
    send: (taskId: string, content: MessageContentInput, options: { author?: 'agent' | 'user' } = {}): Promise<Message> =>
      this.call('createMessage', {
        body: { task_id: taskId, content, ...(options.author ? { author: options.author } : {}) } as EndpointInput<'createMessage'>['body'],
      }),
    list: (taskId: string, page: ListPage = {}): Promise<MessageList> =>
      this.call('listMessages', {
        query: { task_id: taskId, after_sequence_id: page.afterSequenceId, limit: page.limit } as EndpointInput<'listMessages'>['query'],
      }),
  };

  readonly state = {
    /** Creates the (task, agent) state; a second create for the same pair is a ConflictError. */
    create: (taskId: string, agentId: string, state: JsonObject): Promise<State> =>
      this.call('createState', { body: { task_id: taskId, agent_id: agentId, state } }),
    /** The (task, agent) state, or null when there is none yet. */
    get: async (taskId: string, agentId: string): Promise<State | null> => {
      const { states } = await this.call('listStates', { query: { task_id: taskId, agent_id: agentId } });
      return states[0] ?? null;
    },
    /** Merges the given top-level keys atomically on the server (`null` removes a key); NotFoundError without a state. */
    update: async (taskId: string, agentId: string, state: JsonObject): Promise<State> =>
      this.withStateId(taskId, agentId, (id) => this.call('mergeState', { params: { state_id: id }, body: { state } })),
    /**
     * Merges like `update`, into an empty state when there is none yet (one atomic statement on the
     * server: concurrent first merges both land). What `TaskContext.state.update` calls.
     */
    upsert: (taskId: string, agentId: string, state: JsonObject): Promise<State> =>
      this.call('mergeOrCreateState', { body: { task_id: taskId, agent_id: agentId, state } }),
    delete: async (taskId: string, agentId: string): Promise<void> => {
      await this.withStateId(taskId, agentId, (id) => this.call('deleteState', { params: { state_id: id } }));
      this.stateIds.delete(`${taskId}\n${agentId}`);
    },
  };

  readonly tasks = {
    /** By `task_...` id or by name. */
    get: (idOrName: string): Promise<Task> =>
      idOrName.startsWith('task_') ? this.call('getTask', { params: { task_id: idOrName } }) : this.call('getTaskByName', { params: { task_name: idOrName } }),
    delete: (taskId: string): Promise<Task> => this.call('deleteTask', { params: { task_id: taskId } }),
  };

  readonly events = {
    list: (taskId: string, page: ListPage = {}): Promise<EventList> =>
      this.call('listEvents', {
        query: { task_id: taskId, after_sequence_id: page.afterSequenceId, limit: page.limit } as EndpointInput<'listEvents'>['query'],
      }),
    get: (eventId: string): Promise<Event> => this.call('getEvent', { params: { event_id: eventId } }),
  };

  readonly agents = {
    /** By `agt_...` id or by `namespace/name` (a bare name is in `default`). */
    get: (idOrName: string): Promise<Agent> => {
      if (idOrName.startsWith('agt_')) return this.call('getAgent', { params: { agent_id: idOrName } });
      const [namespace, name] = idOrName.includes('/') ? idOrName.split('/', 2) : ['default', idOrName];
      return this.call('getAgentByName', { params: { namespace_slug: namespace!, agent_name: name! } });
    },
    list: (options: { namespace?: string; limit?: number; pageNumber?: number } = {}): Promise<{ agents: Agent[]; total: number }> =>
      this.call('listAgents', {
        query: { namespace: options.namespace, limit: options.limit, page_number: options.pageNumber } as EndpointInput<'listAgents'>['query'],
      }),
  };

  readonly acp = {
    /** A new task of an agent (`agt_...` id or `namespace/name`); the platform delivers `task/create` to it. */
    createTask: (agent: string, params: JsonObject | null = null, options: { name?: string; branch?: string } = {}): Promise<Task> =>
      this.call('createTask', { body: { ...(agent.startsWith('agt_') ? { agent_id: agent } : { agent_name: agent }), params, ...options } }),
    sendEvent: (taskId: string, content: ContentInput): Promise<Event> => this.call('createEvent', { params: { task_id: taskId }, body: { content } }),
    cancelTask: (taskId: string): Promise<Task> => this.call('cancelTask', { params: { task_id: taskId } }),
  };

  readonly agentTaskTracker = {
    /** The tracker of (task, agent); the agent defaults to the one this key belongs to when the key is a runtime key. */
    get: async (taskId: string, agentId?: string): Promise<Tracker> => {
      const { trackers } = await this.call('listTrackers', { query: { task_id: taskId, agent_id: agentId } });
      const tracker = trackers[0];
      if (!tracker) throw new NotFoundError(`No tracker for task ${taskId}${agentId ? ` and agent ${agentId}` : ''}`, 404, 'not_found');
      this.trackerIds.set(`${taskId}\n${agentId ?? ''}`, tracker.id);
      return tracker;
    },
    list: (filter: { taskId?: string; agentId?: string } = {}): Promise<TrackerList> =>
      this.call('listTrackers', { query: { task_id: filter.taskId, agent_id: filter.agentId } }),
    /** Sets progress (0..100, or null) and the status message; left-out fields stay. */
    update: async (
      taskId: string,
      progress?: number | null,
      statusMessage?: string | null,
      options: { agentId?: string; status?: string; lastProcessedEventId?: string } = {},
    ): Promise<Tracker> => {
      const key = `${taskId}\n${options.agentId ?? ''}`;
      const id = this.trackerIds.get(key) ?? (await this.agentTaskTracker.get(taskId, options.agentId)).id;
      const body: EndpointInput<'updateTracker'>['body'] = {};
      if (progress !== undefined) body.progress = progress;
      if (statusMessage !== undefined) body.status_message = statusMessage;
      if (options.status !== undefined) body.status = options.status;
      if (options.lastProcessedEventId !== undefined) body.last_processed_event_id = options.lastProcessedEventId;
      return this.call('updateTracker', { params: { tracker_id: id }, body });
    },
  };

  readonly filesystem = {
    /** Makes `dir` equal to the filesystem (only changed files move; nothing when they match). */
    syncDown: async (filesystemId: string, dir: string, options: SyncOptions = {}): Promise<SyncResult> =>
      this.sync((sync) => sync.syncDown(this.syncTransport(), filesystemId, dir, options)),
    /** Uploads `dir` when its tree differs from the last synced one, conditional on that base (a ConflictError when the remote moved on). */
    syncUp: async (filesystemId: string, dir: string, options: SyncOptions = {}): Promise<SyncResult> =>
      this.sync((sync) => sync.syncUp(this.syncTransport(), filesystemId, dir, options)),
  };

  readonly task = {
    /** A task's SDK config folder (`dot_alpha` -> `.alpha`), by default into `<AGENTCTL_DATA_ROOT or cwd>/tasks/<task>/.alpha`. */
    syncDownSystemFolder: async (taskId: string, folderType: SystemFolderType, dir?: string, options: SyncOptions = {}): Promise<SyncResult> => {
      const target = dir ?? (await this.systemFolderDir(taskId, folderType));
      return this.sync((sync) => sync.syncDownSystemFolder(this.syncTransport(), taskId, folderType, target, options));
    },
    syncUpSystemFolder: async (taskId: string, folderType: SystemFolderType, dir?: string, options: SyncOptions = {}): Promise<SyncResult> => {
      const target = dir ?? (await this.systemFolderDir(taskId, folderType));
      return this.sync((sync) => sync.syncUpSystemFolder(this.syncTransport(), taskId, folderType, target, options));
    },
  };

  /** @internal for AgentServer: reports a handler that threw. */
  reportHandlerError(
    taskId: string,
    handler: 'onCreate' | 'onEvent' | 'onCancel' | 'onMessage' | 'onMigrate',
    message: string,
    eventId: string | null,
  ): Promise<Message> {
    return this.call('reportHandlerError', { params: { task_id: taskId }, body: { handler, message: message.slice(0, 10_000) || 'Error', event_id: eventId } });
  }

  /**
   * @internal for AgentServer: the handler of a deferred delivery finished (a failure was reported
   * first). Sent at once unless another report is on its way; then with the others that came
   * meanwhile, in one request when that one is answered (CompletionReporter).
   */
  completeDelivery(deliveryId: string, spans?: SpanInput[], traceparent?: string): Promise<void> {
    return this.completions.report({ deliveryId, ...(spans?.length ? { spans } : {}), ...(traceparent ? { traceparent } : {}) });
  }

  private readonly completions = new CompletionReporter({
    one: (report) => this.completeOne(report),
    many: async (reports) => {
      if (!this.batchCompletions) return this.completeOneByOne(reports);
      let answer: EndpointOutput<'completeDeliveries'>;
      try {
        answer = await this.call('completeDeliveries', {
          body: { deliveries: reports.map((r) => ({ id: r.deliveryId, ...(r.spans ? { spans: r.spans } : {}) })) },
        });
      } catch (error) {
        // A server from before the batch endpoint: each on its own, from now on.
        if (!(error instanceof NotFoundError)) throw error;
        this.batchCompletions = false;
        return this.completeOneByOne(reports);
      }
      return answer.results.map((r) => (r.error ? httpError(r.status, r.error.code, r.error.detail) : undefined));
    },
  });
  /** False once the server answered that it has no `POST /deliveries/complete`. */
  private batchCompletions = true;

  private async completeOne({ deliveryId, spans, traceparent }: CompletionReport): Promise<void> {
    await this.call(
      'completeDelivery',
      { params: { delivery_id: deliveryId }, body: spans ? { spans } : undefined },
      traceparent ? { headers: { [TRACEPARENT_HEADER]: traceparent } } : undefined,
    );
  }

  private completeOneByOne(reports: CompletionReport[]): Promise<(Error | undefined)[]> {
    return Promise.all(
      reports.map((r) =>
        this.completeOne(r).then(
          () => undefined,
          (error: unknown) => (error instanceof Error ? error : new Error(String(error))),
        ),
      ),
    );
  }

  /** @internal for AgentServer: the handler of a deferred delivery still runs; its lease starts over. */
  async renewDeliveryLease(deliveryId: string, traceparent?: string): Promise<void> {
    await this.call(
      'renewDeliveryLease',
      { params: { delivery_id: deliveryId } },
      traceparent ? { headers: { [TRACEPARENT_HEADER]: traceparent } } : undefined,
    );
  }

  private client?: Client;
  private readonly stateIds = new Map<string, string>();
  private readonly trackerIds = new Map<string, string>();

  constructor(private options: AdkOptions = {}) {}

  /** Uses another key from now on (the AgentServer's runtime key after registration). */
  useApiKey(apiKey: string): void {
    this.options = { ...this.options, apiKey };
    this.client = undefined;
  }

  get baseUrl(): string {
    return (this.options.baseUrl ?? readProcessConfig().baseUrl).replace(/\/+$/, '');
  }

  /** @internal the typed client, created on first use so configuration may come from the environment late. */
  rawClient(): Client {
    return (this.client ??= createClient({
      baseUrl: this.baseUrl,
      apiKey: this.options.apiKey ?? readProcessConfig().apiKey,
      timeoutMs: this.options.timeoutMs,
      retries: this.options.retries,
      transport: sharedTransport(),
      userAgent: 'agentctl-adk',
    }));
  }

  /** @internal one endpoint of the contract's table, errors mapped to the ADK's. */
  async call<K extends EndpointName>(name: K, input: EndpointInput<K>, options?: CallOptions): Promise<EndpointOutput<K>> {
    // Inside a handler: the call continues its trace (W3C traceparent of the active span).
    const trace = activeTraceHeaders();
    if (trace) options = { ...options, headers: { ...trace, ...options?.headers } };
    try {
      return (await this.rawClient().request(name, input, options)).data;
    } catch (error) {
      throw toAdkError(error);
    }
  }

  /**
   * Loads now what the toolkit otherwise loads on first use: the contract's schemas that parse the
   * server's answers, the HTTP pool (undici) and the sync library. For a process started ahead of its
   * work (`agentctl dev` starts the next process before the save that needs it); never needed otherwise.
   */
  async warmUp(): Promise<void> {
    const [, , sync] = await Promise.all([
      import('../contract/endpoints.js'),
      import('../contract/filesystems.js'),
      import('../sync/index.js'),
      sharedTransport().warm(),
    ]);
    // A turn's first requests go out on two HTTP stacks (this toolkit's pool, the sync library's
    // archives): one GET /healthz on each compiles their parsers and runs their first-request code
    // now. Trace ids come from Web Crypto, which Node loads on first use. Bounded: a server that is
    // away leaves the first turn to connect as it would have.
    newSpanId();
    const signal = AbortSignal.timeout(WARM_REQUEST_MS);
    await Promise.allSettled([this.call('healthz', {}, { signal }), sync.warmUp(this.syncTransport(), signal)]);
  }

  private syncTransport() {
    return { baseUrl: this.baseUrl, apiKey: this.options.apiKey ?? readProcessConfig().apiKey, userAgent: 'agentctl-adk' };
  }

  /** The contract's folder names come with zod: loaded on first use, like the sync library. */
  private async systemFolderDir(taskId: string, folderType: SystemFolderType): Promise<string> {
    const { SYSTEM_FOLDER_DIRS } = await import('../contract/filesystems.js');
    return path.join(readProcessConfig().dataRoot ?? process.cwd(), 'tasks', taskId, SYSTEM_FOLDER_DIRS[folderType]);
  }

  /** The sync library loads on first use (tar, zstd and ignore rules cost an agent's start-up otherwise); its HTTP errors become the ADK's. */
  private async sync<T>(run: (sync: typeof import('../sync/index.js')) => Promise<T>): Promise<T> {
    const sync = await import('../sync/index.js');
    try {
      return await run(sync);
    } catch (error) {
      if (error instanceof sync.SyncHttpError) throw httpError(error.status, error.code, error.message);
      throw error;
    }
  }

  private async withStateId<T>(taskId: string, agentId: string, use: (id: string) => Promise<T>): Promise<T> {
    const key = `${taskId}\n${agentId}`;
    const cached = this.stateIds.get(key);
    if (cached) {
      try {
        return await use(cached);
      } catch (error) {
        // Deleted and created again elsewhere: look the id up once more.
        if (!(error instanceof NotFoundError)) throw error;
        this.stateIds.delete(key);
      }
    }
    const state = await this.state.get(taskId, agentId);
    if (!state) throw new NotFoundError(`No state for task ${taskId} and agent ${agentId}`, 404, 'not_found');
    this.stateIds.set(key, state.id);
    return use(state.id);
  }
}

let transport: ReturnType<typeof createUndiciTransport> | undefined;
/** One keep-alive pool per process, shared by every Adk instance. */
function sharedTransport() {
  return (transport ??= createUndiciTransport());
}

/** A toolkit with its own configuration, for scripts outside a runtime or a second service. */
export function createAdk(options: AdkOptions = {}): Adk {
  return new Adk(options);
}

/** The default toolkit: configured from the process environment; an AgentServer gives it its runtime key. */
export const adk: Adk = new Adk();
