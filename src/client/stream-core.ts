// `GET /tasks/{id}/stream` over any way of opening an HTTP stream: Node's undici (client/stream.ts,
// the CLI and the ADK) or a browser's fetch (client/fetch-transport.ts, the web console). Records
// come in sequence order; a dropped connection reconnects with Last-Event-ID.
import { isTerminalTask } from '../contract/lifecycle.js';
import { STREAM_RECORD_KINDS } from '../contract/enums.js';
import type { StreamRecord } from '../contract/conversation.js';
import { UnreachableError } from './errors.js';
import { redactHeaders } from './redact.js';
import type { ResponseHeaders } from './transport.js';

export interface StreamTaskOptions {
  /** Start after this sequence_id (default 0: from the beginning). */
  afterSequenceId?: number;
  signal?: AbortSignal;
  /** Consecutive failed connections before giving up (default 8; Infinity: never); a received record resets the count. */
  maxReconnects?: number;
  /** First reconnect delay in milliseconds (default 250), doubling up to 5 s. */
  backoffMs?: number;
  /** A connection silent this long (no record, no heartbeat) counts as dropped (default 60 s). */
  idleTimeoutMs?: number;
  /** Told of each failed connection before the wait to reconnect: what failed, the attempt (1, 2, ...) and the wait. */
  onRetry?: (failure: string, attempt: number, delayMs: number) => void;
  /** Told when the stream answers again after failed attempts. */
  onReconnected?: () => void;
  /** Told each time the stream answers (the first connection and every reconnection), before any record. */
  onOpen?: () => void;
}

/** An open event stream: its status and headers, and its body as it arrives. */
export interface OpenedStream {
  status: number;
  headers: ResponseHeaders;
  body: AsyncIterable<Uint8Array | string>;
  text(): Promise<string>;
  /** Stops reading (the task ended). */
  close(): void;
}

/**
 * Opens `GET url` as a stream. A failure before or while reading the answer is thrown with a `code`
 * (ECONNRESET, UND_ERR_..., ...) so the reader reconnects instead of giving up.
 */
export type StreamOpener = (url: string, init: { headers: Record<string, string>; signal?: AbortSignal; idleTimeoutMs: number }) => Promise<OpenedStream>;

export interface StreamContext {
  /** How the stream is opened. */
  open: StreamOpener;
  baseUrl: string;
  apiKey?: string;
  userAgent?: string;
  debug?: (line: string) => void;
  /** Builds the error for a non-2xx answer (the client's own mapping of error bodies). */
  toError: (status: number, headers: { get(name: string): string | null }, text: string, request: { method: string; url: string }) => Error;
}

const isTerminal = (record: StreamRecord) => record.kind === 'task' && isTerminalTask(record.data.status);
const RETRY_STATUSES = new Set([429, 502, 503, 504]);

/**
 * The task's stream records in sequence order. Ends after the task's terminal status record; a
 * dropped connection reconnects with `Last-Event-ID`, so nothing is lost or repeated.
 */
export async function* streamTask(ctx: StreamContext, taskId: string, options: StreamTaskOptions = {}): AsyncGenerator<StreamRecord> {
  let lastId = options.afterSequenceId ?? 0;
  let failures = 0;
  const url = `${ctx.baseUrl}/tasks/${encodeURIComponent(taskId)}/stream`;
  for (;;) {
    options.signal?.throwIfAborted();
    const headers: Record<string, string> = { accept: 'text/event-stream', 'last-event-id': String(lastId) };
    if (ctx.apiKey) headers.authorization = `Bearer ${ctx.apiKey}`;
    if (ctx.userAgent) headers['user-agent'] = ctx.userAgent;
    ctx.debug?.(`→ GET ${url} ${JSON.stringify(redactHeaders(headers))}`);
    let failure: string;
    try {
      const response = await ctx.open(url, { headers, signal: options.signal, idleTimeoutMs: options.idleTimeoutMs ?? 60_000 });
      ctx.debug?.(`← ${response.status} GET ${url} (request ${response.headers.get('x-request-id') ?? '-'})`);
      if (response.status !== 200) {
        const text = await response.text();
        if (!RETRY_STATUSES.has(response.status)) throw ctx.toError(response.status, response.headers, text, { method: 'GET', url });
        failure = `HTTP ${response.status}`;
      } else {
        if (failures > 0) options.onReconnected?.();
        options.onOpen?.();
        for await (const record of parseSse(response.body)) {
          if (record.sequence_id <= lastId) continue;
          lastId = record.sequence_id;
          failures = 0;
          yield record;
          if (isTerminal(record)) {
            response.close();
            return;
          }
        }
        failure = 'the server closed the stream';
      }
    } catch (error) {
      if (options.signal?.aborted) throw options.signal.reason;
      if (!isConnectionFailure(error)) throw error;
      failure = (error as { code?: string }).code ?? String(error);
    }
    if (++failures > (options.maxReconnects ?? 8)) throw new UnreachableError(ctx.baseUrl, failure);
    ctx.debug?.(`stream dropped (${failure}); reconnecting after ${lastId}`);
    const base = Math.min((options.backoffMs ?? 250) * 2 ** (failures - 1), 5000);
    const delay = base / 2 + Math.random() * (base / 2);
    options.onRetry?.(failure, failures, delay);
    await sleep(delay, options.signal);
  }
}

function isConnectionFailure(error: unknown): boolean {
  const code = (error as { code?: string })?.code ?? '';
  return code.startsWith('UND_ERR') || code.startsWith('E') || (error as Error)?.name === 'SocketError';
}

function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal!.reason);
    };
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}

/** Server-Sent Events -> stream records: `id:` the sequence_id, `event:` the kind, `data:` the JSON. */
export async function* parseSse(body: AsyncIterable<Buffer | Uint8Array | string>): AsyncGenerator<StreamRecord> {
  const decoder = new TextDecoder();
  let buffer = '';
  for await (const chunk of body) {
    buffer += typeof chunk === 'string' ? chunk : decoder.decode(chunk, { stream: true });
    let end: number;
    while ((end = buffer.search(/\r?\n\r?\n/)) >= 0) {
      const block = buffer.slice(0, end);
      buffer = buffer.slice(end + (buffer[end] === '\r' ? 4 : 2));
      let id: string | undefined;
      let kind: string | undefined;
      const data: string[] = [];
      for (const line of block.split(/\r?\n/)) {
        if (line === '' || line.startsWith(':')) continue;
        const colon = line.indexOf(':');
        const field = colon < 0 ? line : line.slice(0, colon);
        const value = colon < 0 ? '' : line.slice(colon + 1).replace(/^ /, '');
        if (field === 'id') id = value;
        else if (field === 'event') kind = value;
        else if (field === 'data') data.push(value);
      }
      if (id === undefined || kind === undefined || !data.length) continue;
      if (!(STREAM_RECORD_KINDS as readonly string[]).includes(kind)) continue;
      yield { kind, sequence_id: Number(id), data: JSON.parse(data.join('\n')) } as StreamRecord;
    }
  }
}
