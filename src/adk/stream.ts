import type { Message, MessageContent } from '../contract/conversation.js';
import { STREAMED_FIELDS } from '../contract/enums.js';
import type { Adk } from './adk.js';

/** What a stream writes: text, a reasoning summary, or a tool call's arguments. */
export type StreamKind = 'text' | 'reasoning' | { type: 'tool_request'; name: string; call_id: string };

/**
 * At most one request starts per this many milliseconds: deltas written in between go together in
 * the next one. A write after a quiet spell goes at once, so the first token is not held back.
 * 120, not 100: a 100-token/s model then sends 12 tokens a request, and a two-second answer (its
 * create and finish included) about a tenth of the requests of one per token (npm run bench
 * streaming); a token of a burst waits at most this long.
 */
export const STREAM_FLUSH_INTERVAL_MS = 120;

export interface MessageStreamOptions {
  /** Default STREAM_FLUSH_INTERVAL_MS. */
  flushIntervalMs?: number;
  /**
   * The turn's signal (`ctx.signal`): when it fires the message ends INTERRUPTED with what was written
   * so far, and `write`, `done` and `from` throw its reason.
   */
  signal?: AbortSignal;
  /** Sees the finished message's content (a sync agent answers with it). */
  onSent?: (content: MessageContent) => void;
}

/**
 * A message written as it is produced (`ctx.messages.stream()`). The message is created at the first
 * flush (IN_PROGRESS, holding what was written so far); later writes are appended on the server as
 * deltas (`POST /messages/{id}/deltas`), coalesced: one request in flight, at most one started per
 * flush interval, each at the offset it expects (so a retried delta is applied once). `done()` and
 * `fail()` send what is left and finish it (DONE, FAILED). A request
 * that fails stops the stream: the next `write`, `done` or `fail` throws its error.
 */
export class MessageStream {
  private message: Message | undefined;
  /** The streamed field's length on the server (code points): the offset of the next delta. */
  private sent = 0;
  private buffer = '';
  private sending: Promise<void> | undefined;
  private timer: NodeJS.Timeout | undefined;
  private lastStartedAt = Number.NEGATIVE_INFINITY;
  private error: unknown;
  private finishing: Promise<Message> | undefined;
  /** The INTERRUPTED ending, once the signal fired (or `interrupt` was called). */
  private interrupting: Promise<Message | undefined> | undefined;
  private readonly intervalMs: number;
  private readonly signal: AbortSignal | undefined;
  /** Requests sent so far (creates, deltas and the finish). */
  requests = 0;

  constructor(
    private readonly adk: Adk,
    private readonly taskId: string,
    private readonly kind: StreamKind = 'text',
    private readonly options: MessageStreamOptions = {},
  ) {
    this.intervalMs = options.flushIntervalMs ?? STREAM_FLUSH_INTERVAL_MS;
    this.signal = options.signal;
    if (this.signal?.aborted) throw this.signal.reason;
    this.signal?.addEventListener('abort', () => void this.interrupt(), { once: true });
  }

  /** Whether the stream is finished (done, failed or interrupted). */
  get finished(): boolean {
    return this.finishing !== undefined || this.interrupting !== undefined;
  }

  /**
   * Ends the message INTERRUPTED with what was written so far (nothing is created when nothing was
   * written); resolves when the server has it. Called when the turn's signal fires.
   */
  interrupt(reason = 'interrupted'): Promise<Message | undefined> {
    if (this.interrupting) return this.interrupting;
    if (this.finishing) return (this.interrupting = this.finishing.catch(() => undefined));
    const why = (this.signal?.reason instanceof Error ? this.signal.reason.message : undefined) ?? reason;
    this.interrupting =
      this.buffer || this.message || this.sending
        ? this.finish({ streaming_status: 'INTERRUPTED', streaming_error: why.slice(0, 10_000) })
        : Promise.resolve(undefined);
    // Nobody may await it (the handler ignored the signal): a failure here is only logged.
    this.interrupting = this.interrupting.catch((error: unknown) => {
      process.stderr.write(`agentctl-adk: could not mark message ${this.message?.id ?? '(unsent)'} interrupted: ${(error as Error).message}\n`);
      return undefined;
    });
    return this.interrupting;
  }

  /** The message, once created (after the first flush). */
  get id(): string | undefined {
    return this.message?.id;
  }

  /** Appends `delta`; it reaches the server with the next flush. */
  write(delta: string): void {
    if (this.interrupting) throw this.signal?.reason ?? new Error('This message stream was interrupted: it takes no more writes');
    if (this.finishing) throw new Error('This message stream is finished: it takes no more writes');
    if (this.error) throw this.error;
    if (delta === '') return;
    this.buffer += delta;
    this.schedule();
  }

  /** Sends what is left and marks the message DONE. */
  done(): Promise<Message> {
    if (this.interrupting) return this.interrupted();
    return (this.finishing ??= this.finish({ streaming_status: 'DONE' }));
  }

  /** Sends what is left and marks the message FAILED with `reason`. */
  fail(reason: string): Promise<Message> {
    if (this.interrupting) return this.interrupted();
    return (this.finishing ??= this.finish({ streaming_status: 'FAILED', streaming_error: reason.slice(0, 10_000) || 'failed' }));
  }

  /**
   * Writes every chunk of `chunks`, then `done()`; when the iterable throws, `fail()` with its message
   * and rethrows. When the turn's signal fires it stops reading at once, ends the message INTERRUPTED
   * and throws the signal's reason.
   */
  async from(chunks: AsyncIterable<string> | Iterable<string>): Promise<Message> {
    const iterator: AsyncIterator<string> | Iterator<string> =
      Symbol.asyncIterator in chunks ? (chunks as AsyncIterable<string>)[Symbol.asyncIterator]() : (chunks as Iterable<string>)[Symbol.iterator]();
    const signal = this.signal;
    const aborted = signal
      ? new Promise<never>((_, reject) => {
          if (signal.aborted) reject(signal.reason);
          signal.addEventListener('abort', () => reject(signal.reason), { once: true });
        })
      : undefined;
    aborted?.catch(() => {});
    try {
      for (;;) {
        const next = await (aborted ? Promise.race([iterator.next(), aborted]) : iterator.next());
        if (next.done) break;
        this.write(next.value);
      }
    } catch (error) {
      if (this.interrupting) {
        Promise.resolve(iterator.return?.()).catch(() => {});
        return this.interrupted();
      }
      await this.fail(error instanceof Error ? error.message : String(error)).catch(() => {});
      throw error;
    }
    return this.done();
  }

  /** Waits for the INTERRUPTED ending to reach the server, then throws the signal's reason. */
  private async interrupted(): Promise<never> {
    await this.interrupting;
    throw this.signal?.reason ?? new Error('This message stream was interrupted');
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
        if (this.buffer && !this.finishing && !this.interrupting) this.schedule();
      });
  }

  private async send(delta: string): Promise<void> {
    this.requests++;
    if (!this.message) {
      this.message = await this.adk.call('createMessage', { body: { task_id: this.taskId, content: this.content(delta), streaming_status: 'IN_PROGRESS' } });
    } else {
      // At the offset this writer expects: the client's retry of a lost answer is then applied once.
      await this.adk.call('appendMessageDelta', { params: { message_id: this.message.id }, body: { delta, offset: this.sent } });
    }
    this.sent += [...delta].length;
  }

  private content(text: string): MessageContent {
    const kind = this.kind;
    if (kind === 'text') return { type: 'text', [STREAMED_FIELDS.text]: text };
    if (kind === 'reasoning') return { type: 'reasoning', [STREAMED_FIELDS.reasoning]: text };
    return { type: 'tool_request', name: kind.name, call_id: kind.call_id, [STREAMED_FIELDS.tool_request]: text };
  }

  private async finish(ending: { streaming_status: 'DONE' | 'FAILED' | 'INTERRUPTED'; streaming_error?: string }): Promise<Message> {
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
