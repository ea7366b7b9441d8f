import { type Message, type MessageContent, STREAMED_FIELDS } from '../contract/conversation.js';
import type { Adk } from './adk.js';

/** What a stream writes: text, a reasoning summary, or a tool call's arguments. */
export type StreamKind = 'text' | 'reasoning' | { type: 'tool_request'; name: string; call_id: string };

/**
 * At most one request starts per this many milliseconds: deltas written in between go together in
 * the next one. A write after a quiet spell goes at once, so the first token is not held back.
 */
export const STREAM_FLUSH_INTERVAL_MS = 100;

export interface MessageStreamOptions {
  /** Default STREAM_FLUSH_INTERVAL_MS. */
  flushIntervalMs?: number;
  /** Sees the finished message's content (a sync agent answers with it). */
  onSent?: (content: MessageContent) => void;
}

/**
 * A message written as it is produced (`ctx.messages.stream()`). The message is created at the first
 * flush (IN_PROGRESS, holding what was written so far); later writes are appended on the server as
 * deltas (`POST /messages/{id}/deltas`), coalesced: one request in flight, at most one started per
 * flush interval. `done()` and `fail()` send what is left and finish it (DONE, FAILED). A request
 * that fails stops the stream: the next `write`, `done` or `fail` throws its error.
 */
export class MessageStream {
  private message: Message | undefined;
  private buffer = '';
  private sending: Promise<void> | undefined;
  private timer: NodeJS.Timeout | undefined;
  private lastStartedAt = Number.NEGATIVE_INFINITY;
  private error: unknown;
  private finishing: Promise<Message> | undefined;
  private readonly intervalMs: number;
  /** Requests sent so far (creates, deltas and the finish). */
  requests = 0;

  constructor(
    private readonly adk: Adk,
    private readonly taskId: string,
    private readonly kind: StreamKind = 'text',
    private readonly options: MessageStreamOptions = {},
  ) {
    this.intervalMs = options.flushIntervalMs ?? STREAM_FLUSH_INTERVAL_MS;
  }

  /** The message, once created (after the first flush). */
  get id(): string | undefined {
    return this.message?.id;
  }

  /** Appends `delta`; it reaches the server with the next flush. */
  write(delta: string): void {
    if (this.finishing) throw new Error('This message stream is finished: it takes no more writes');
    if (this.error) throw this.error;
    if (delta === '') return;
    this.buffer += delta;
    this.schedule();
  }

  /** Sends what is left and marks the message DONE. */
  done(): Promise<Message> {
    return (this.finishing ??= this.finish({ streaming_status: 'DONE' }));
  }

  /** Sends what is left and marks the message FAILED with `reason`. */
  fail(reason: string): Promise<Message> {
    return (this.finishing ??= this.finish({ streaming_status: 'FAILED', streaming_error: reason.slice(0, 10_000) || 'failed' }));
  }

  /** Writes every chunk of `chunks`, then `done()`; when the iterable throws, `fail()` with its message and rethrows. */
  async from(chunks: AsyncIterable<string> | Iterable<string>): Promise<Message> {
    try {
      for await (const chunk of chunks) this.write(chunk);
    } catch (error) {
      await this.fail(error instanceof Error ? error.message : String(error)).catch(() => {});
      throw error;
    }
    return this.done();
  }

  private schedule(): void {
    if (this.sending || this.timer) return;
    const wait = this.lastStartedAt + this.intervalMs - Date.now();
    if (wait <= 0) this.pump();
    else
      this.timer = setTimeout(() => {
        this.timer = undefined;
        this.pump();
      }, wait);
  }

  private pump(): void {
    if (!this.buffer || this.error) return;
    const delta = this.buffer;
    this.buffer = '';
    this.lastStartedAt = Date.now();
    this.sending = this.send(delta)
      .catch((error: unknown) => {
        this.error = error;
      })
      .finally(() => {
        this.sending = undefined;
        if (this.buffer && !this.finishing) this.schedule();
      });
  }

  private async send(delta: string): Promise<void> {
    this.requests++;
    if (!this.message) {
      this.message = await this.adk.call('createMessage', { body: { task_id: this.taskId, content: this.content(delta), streaming_status: 'IN_PROGRESS' } });
    } else {
      await this.adk.call('appendMessageDelta', { params: { message_id: this.message.id }, body: { delta } });
    }
  }

  private content(text: string): MessageContent {
    const kind = this.kind;
    if (kind === 'text') return { type: 'text', [STREAMED_FIELDS.text]: text };
    if (kind === 'reasoning') return { type: 'reasoning', [STREAMED_FIELDS.reasoning]: text };
    return { type: 'tool_request', name: kind.name, call_id: kind.call_id, [STREAMED_FIELDS.tool_request]: text };
  }

  private async finish(ending: { streaming_status: 'DONE' | 'FAILED'; streaming_error?: string }): Promise<Message> {
    clearTimeout(this.timer);
    this.timer = undefined;
    while (this.sending) await this.sending;
    if (this.error) throw this.error;
    const rest = this.buffer;
    this.buffer = '';
    let finished: Message;
    this.requests++;
    if (!this.message && ending.streaming_status === 'DONE') {
      // Everything fits in one request: the message is created finished.
      finished = await this.adk.call('createMessage', { body: { task_id: this.taskId, content: this.content(rest), streaming_status: 'DONE' } });
    } else {
      if (rest || !this.message) await this.send(rest);
      finished = await this.adk.call('updateMessage', { params: { message_id: this.message!.id }, body: ending });
    }
    this.message = finished;
    this.options.onSent?.(finished.content);
    return finished;
  }
}
