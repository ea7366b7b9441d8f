import type { AcpAgentRef } from '../contract/acp.js';
import type { Event, Message, MessageContent, MessageContentInput, Tracker } from '../contract/conversation.js';
import type { State, Task } from '../contract/resources.js';
import type { Adk, EventList, JsonObject, ListPage, MessageList } from './adk.js';
import { MessageStream, type StreamKind } from './stream.js';
import { logApi, traceApi, Turn, type LogApi, type TraceApi } from './trace.js';
import { TurnInterruptedError } from './errors.js';

/** What the agent server gives a context besides the task: the turn's signal and events, and who sees its streams. */
export interface TurnOptions {
  /** Fires when the turn is interrupted (default: never). */
  signal?: AbortSignal;
  /** The events this turn answers, oldest first (default: `[event]`, or none). */
  batch?: Event[];
  /** Sees every message stream the context opens (the server ends those left open). */
  onStream?: (stream: MessageStream) => void;
  /** True once the turn was cut off (interrupted, and still running after the grace): no more messages. */
  cutOff?: () => boolean;
  /** The handler's trace and spans (default: a trace of its own, for a context made by hand). */
  trace?: Turn;
  /** The task is a rehearsal's shadow (the delivery says so). */
  rehearsal?: boolean;
}

const CUT_OFF = 'This turn was cut off after its interrupt: its context takes no more messages';

/**
 * What a handler gets: the task, its agent, the event being handled (onEvent), and the toolkit's
 * calls pre-bound to this (task, agent).
 */
export class TaskContext {
  /**
   * Fires when the turn is interrupted (`agentctl tasks interrupt`, or a new event under the
   * `interrupt` double-texting policy); its reason is a TurnInterruptedError. Open message streams end
   * INTERRUPTED by themselves; pass it to anything long (`fetch(url, { signal: ctx.signal })`) and
   * return soon: a handler still running after the grace period is cut off.
   */
  readonly signal: AbortSignal;
  /**
   * The events this turn answers, oldest first: `[ctx.event]`, or under the `merge` and `interrupt`
   * policies every event that arrived while the previous turn ran (`ctx.event` is the newest). Empty
   * outside onEvent.
   */
  readonly batch: readonly Event[];
  readonly messages: {
    /** Adds an agent message to this task's transcript. */
    send(content: MessageContentInput): Promise<Message>;
    /**
     * A message written as it is produced: `write(delta)`, then `done()` or `fail(reason)`; or
     * `await ctx.messages.stream().from(llmTokens)`. Deltas are coalesced (README "Writing agents").
     */
    stream(kind?: StreamKind, options?: { flushIntervalMs?: number }): MessageStream;
    list(page?: ListPage): Promise<MessageList>;
  };
  readonly state: {
    /** This (task, agent)'s state, or null before the first create. */
    get(): Promise<State | null>;
    create(state: JsonObject): Promise<State>;
    /**
     * Merges the given top-level keys atomically on the server (`null` removes a key), into an empty
     * state when there is none yet: no `create` needed first.
     */
    update(state: JsonObject): Promise<State>;
    delete(): Promise<void>;
  };
  readonly events: { list(page?: ListPage): Promise<EventList> };
  /** Spans of the agent's own steps in this turn's trace: `ctx.trace.span('model call', { 'gen_ai.request.model': m }, fn)`. */
  readonly trace: TraceApi;
  /** Structured log lines (JSON) carrying the task, delivery and trace ids: `agentctl logs --task` finds them. */
  readonly log: LogApi;
  /**
   * True when this task is a rehearsal's shadow (`agentctl tasks migrate --rehearse`, `tasks replay`):
   * the platform replays a real task's recorded events on this version to compare the outcome.
   * Skip external side effects (emails, payments, calls to other systems) when it is set.
   */
  readonly rehearsal: boolean;
  readonly tracker: {
    get(): Promise<Tracker>;
    /** Progress 0..100 (or null) and a status message; left-out values stay. */
    update(progress?: number | null, statusMessage?: string | null): Promise<Tracker>;
  };

  constructor(
    readonly adk: Adk,
    readonly task: Task,
    readonly agent: AcpAgentRef,
    /** The event being handled: set in onEvent, null elsewhere. */
    readonly event: Event | null,
    /** A local directory for this task, synced with the task's filesystem around every handler. */
    readonly workspace: string,
    /** Sees every message this context sends (a sync agent answers with them). */
    onSent?: (content: MessageContent) => void,
    turn: TurnOptions = {},
  ) {
    this.signal = turn.signal ?? new AbortController().signal;
    this.batch = turn.batch ?? (event ? [event] : []);
    const traced = turn.trace ?? new Turn(undefined, task.id, '');
    this.trace = traceApi(traced);
    this.log = logApi(traced);
    this.rehearsal = turn.rehearsal === true;
    const taskId = task.id;
    const agentId = agent.id;
    this.messages = {
      send: async (content) => {
        if (turn.cutOff?.()) throw new TurnInterruptedError(CUT_OFF);
        const message = await adk.messages.send(taskId, content);
        onSent?.(message.content);
        return message;
      },
      stream: (kind, options) => {
        if (turn.cutOff?.()) throw new TurnInterruptedError(CUT_OFF);
        const stream = new MessageStream(adk, taskId, kind, { ...options, onSent, signal: this.signal });
        turn.onStream?.(stream);
        return stream;
      },
      list: (page) => adk.messages.list(taskId, page),
    };
    this.state = {
      get: () => adk.state.get(taskId, agentId),
      create: (state) => adk.state.create(taskId, agentId, state),
      update: (state) => adk.state.upsert(taskId, agentId, state),
      delete: () => adk.state.delete(taskId, agentId),
    };
    this.events = { list: (page) => adk.events.list(taskId, page) };
    this.tracker = {
      get: () => adk.agentTaskTracker.get(taskId, agentId),
      update: (progress, statusMessage) => adk.agentTaskTracker.update(taskId, progress, statusMessage, { agentId }),
    };
  }
}
