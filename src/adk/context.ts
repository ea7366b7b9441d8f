import type { AcpAgentRef } from '../contract/acp.js';
import type { Event, Message, MessageContent, MessageContentInput, Tracker } from '../contract/conversation.js';
import type { State, Task } from '../contract/resources.js';
import type { Adk, EventList, JsonObject, ListPage, MessageList } from './adk.js';
import { MessageStream, type StreamKind } from './stream.js';

/**
 * What a handler gets: the task, its agent, the event being handled (onEvent), and the toolkit's
 * calls pre-bound to this (task, agent).
 */
export class TaskContext {
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
    options: { rehearsal?: boolean } = {},
  ) {
    this.rehearsal = options.rehearsal === true;
    const taskId = task.id;
    const agentId = agent.id;
    this.messages = {
      send: async (content) => {
        const message = await adk.messages.send(taskId, content);
        onSent?.(message.content);
        return message;
      },
      stream: (kind, options) => new MessageStream(adk, taskId, kind, { ...options, onSent }),
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
