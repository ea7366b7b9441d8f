import type { ServerSentEvent } from './sse.js';
import type { z } from 'zod';
import type { EndpointInput, EndpointName, EndpointOutput } from '../contract/endpoints.js';
import { routes, type Route } from '../contract/routes.js';
import { parseShape } from '../contract/shape.js';
import { ApiRequestError, NotServiceAnswerError, ResponseShapeError, UnreachableError } from './errors.js';
import { redactHeaders, redactJson, redactText } from './redact.js';
import { send, TransportError, type ResponseHeaders, type Transport, type TransportResponse } from './transport.js';
import type { StreamOpener, StreamTaskOptions } from './stream-core.js';
import type { StreamRecord } from '../contract/conversation.js';
import type { VersionLogLine } from '../contract/runtime.js';

export { ApiRequestError, NotServiceAnswerError, ResponseShapeError, UnreachableError, formatValidationItem } from './errors.js';
export { redactText, redactJson } from './redact.js';
export type { Transport, TransportRequest, TransportResponse } from './transport.js';
export type { StreamTaskOptions, StreamOpener } from './stream-core.js';

export interface ClientOptions {
  baseUrl: string;
  apiKey?: string;
  /** Per attempt, in milliseconds (default 30 s). */
  timeoutMs?: number;
  /** Extra attempts for idempotent requests after 429, 503 or a connection failure (default 3). */
  retries?: number;
  /** First backoff step in milliseconds (default 250); doubles each attempt, capped at 5 s. */
  backoffMs?: number;
  /** Receives one line per request and per response, secrets redacted. */
  debug?: (line: string) => void;
  /** Cancels every request of this client (Ctrl-C). */
  signal?: AbortSignal;
  /**
   * A process that makes a request or two and exits (the CLI): answers are parsed with the
   * contract's generated shapes (contract/response-shapes.ts, no zod to load), and zod, where an
   * endpoint needs it, without compiling its fast paths. Wrong for a long-lived process.
   */
  shortLived?: boolean;
  userAgent?: string;
  /**
   * W3C trace context sent with every request (README "Traces"): the CLI's one trace per command,
   * its `tracestate` naming the command and when it started.
   */
  traceContext?: { traceparent: string; tracestate?: string };
  /**
   * How requests go out. Default: one-shot node:http, lean for the CLI. Long-lived callers (the ADK)
   * pass the keep-alive pool of `client/undici-transport.ts`.
   */
  transport?: Transport;
  /**
   * How `streamTask` opens the task's stream. Default: undici (client/stream.ts). The web console
   * passes `fetchStreamOpener()` of client/fetch-transport.ts.
   */
  streamOpener?: StreamOpener;
}

export interface CallOptions {
  headers?: Record<string, string>;
  signal?: AbortSignal;
}

export interface ApiResponse<T> {
  /** Parsed with the contract's response schema (defaults applied). */
  data: T;
  /** The JSON exactly as the server sent it: what `--json` prints. */
  raw: unknown;
  status: number;
  headers: ResponseHeaders;
}

type Args<K extends EndpointName> =
  {} extends EndpointInput<K> ? [input?: EndpointInput<K>, options?: CallOptions] : [input: EndpointInput<K>, options?: CallOptions];

/** Endpoints answering Server-Sent Events: the client streams them (`streamTask`) instead of one JSON answer. */
type SseEndpointName = { [K in EndpointName]: (typeof routes)[K] extends { sse: true } ? K : never }[EndpointName];

/** One method per endpoint of the contract's table, named as the table names it. */
export type EndpointMethods = { [K in Exclude<EndpointName, SseEndpointName>]: (...args: Args<K>) => Promise<EndpointOutput<K>> };

const RETRY_STATUSES = new Set([429, 503]);
const MAX_BACKOFF_MS = 5000;
const MAX_RETRY_AFTER_MS = 30_000;

export class AgentctlClient {
  readonly baseUrl: string;
  private schemas?: Promise<typeof import('../contract/endpoints.js')>;
  private shapes?: Promise<typeof import('../contract/response-shapes.js')>;
  constructor(readonly options: ClientOptions) {
    this.baseUrl = options.baseUrl.replace(/\/+$/, '');
  }

  /**
   * The response schemas, loaded on first use. A request goes out before they are loaded, so a
   * short-lived process evaluates zod and the contract while the server works on its answer.
   */
  private loadSchemas(): Promise<typeof import('../contract/endpoints.js')> {
    return (this.schemas ??= import('../contract/endpoints.js'));
  }

  /** What parses the answers: the generated shapes for a short-lived process, else zod. */
  private loadParser(): Promise<unknown> {
    return this.options.shortLived ? (this.shapes ??= import('../contract/response-shapes.js')) : this.loadSchemas();
  }

  private async parse(name: EndpointName, raw: unknown): Promise<{ success: true; data: unknown } | { success: false; issues: string }> {
    if (this.options.shortLived) {
      const { RESPONSE_SHAPES } = await (this.shapes ??= import('../contract/response-shapes.js'));
      const shape = RESPONSE_SHAPES.responses[name];
      if (shape) {
        const parsed = parseShape(RESPONSE_SHAPES, shape, raw);
        return parsed.success ? parsed : { success: false, issues: parsed.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; ') };
      }
    }
    const schema = (await this.loadSchemas()).endpoints[name].response as z.ZodType;
    const parsed = schema.safeParse(raw, this.options.shortLived ? { jitless: true } : undefined);
    return parsed.success ? parsed : { success: false, issues: parsed.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; ') };
  }

  /** Calls one endpoint by its table name; the typed methods below are thin wrappers of this. */
  async request<K extends EndpointName>(
    name: K,
    input: EndpointInput<K> = {} as EndpointInput<K>,
    call: CallOptions = {},
  ): Promise<ApiResponse<EndpointOutput<K>>> {
    const endpoint: Route = routes[name];
    const { params, query, body } = input as { params?: Record<string, string>; query?: Record<string, unknown>; body?: unknown };
    const url = this.baseUrl + buildPath(endpoint.path, params ?? {}) + buildQuery(query);
    const headers: Record<string, string> = {
      accept: 'application/json',
      ...(this.options.userAgent ? { 'user-agent': this.options.userAgent } : {}),
      ...call.headers,
    };
    if (endpoint.auth !== false && this.options.apiKey) headers.authorization = `Bearer ${this.options.apiKey}`;
    const trace = this.options.traceContext;
    if (trace && !('traceparent' in headers)) {
      headers.traceparent = trace.traceparent;
      if (trace.tracestate) headers.tracestate = trace.tracestate;
    }
    const payload = body === undefined ? undefined : JSON.stringify(body);
    if (payload !== undefined) headers['content-type'] = 'application/json';

    // An endpoint that takes an Idempotency-Key gets one per call (the caller's, else a fresh one),
    // the same on every attempt: such a create is then as safe to retry as a GET, since the server
    // answers a repeat with the first response.
    if (endpoint.idempotencyKey && !Object.keys(headers).some((h) => h.toLowerCase() === 'idempotency-key')) headers['idempotency-key'] = randomKey();
    const retriable = endpoint.idempotent || endpoint.idempotencyKey === true;
    const attempts = retriable ? 1 + (this.options.retries ?? 3) : 1;
    const transport = this.options.transport ?? send;
    for (let attempt = 1; ; attempt++) {
      // Date.now, not performance.now: the global `performance` loads perf_hooks on first touch.
      const started = Date.now();
      this.trace(
        () => `→ ${endpoint.method} ${url} ${JSON.stringify(redactHeaders(headers))}${payload ? ` ${JSON.stringify(redactJson(body, endpoint.redact))}` : ''}`,
      );
      let response: TransportResponse;
      try {
        response = await transport(url, {
          method: endpoint.method,
          headers,
          body: payload,
          signal: this.signalFor(call),
          onSent: () => void this.loadParser(),
        });
      } catch (error) {
        if (this.options.signal?.aborted || call.signal?.aborted) throw error;
        const reason = failureReason(error);
        this.trace(() => `← ${reason} after ${Date.now() - started} ms`);
        if (attempt < attempts) {
          await this.pause(this.backoff(attempt), call);
          continue;
        }
        throw new UnreachableError(this.baseUrl, reason);
      }
      const raw = parseJson(response.text);
      this.trace(
        () =>
          `← ${response.status} ${endpoint.method} ${url} (${Date.now() - started} ms, request ${response.headers.get('x-request-id') ?? '-'}) ${raw === undefined ? '(empty body)' : typeof raw === 'string' ? redactText(raw).slice(0, 4000) : JSON.stringify(redactJson(raw)).slice(0, 4000)}`,
      );
      // Every answer of the service is a JSON body; anything else came from something in between, or from another program.
      if (raw === undefined || typeof raw === 'string') {
        if (RETRY_STATUSES.has(response.status) && attempt < attempts) {
          await this.pause(this.backoff(attempt), call);
          continue;
        }
        throw new NotServiceAnswerError(this.baseUrl, response.status, notJsonKind(response), { method: endpoint.method, url });
      }
      if (response.status >= 200 && response.status < 300) {
        const parsed = await this.parse(name, raw);
        if (!parsed.success) throw new ResponseShapeError(`${endpoint.method} ${endpoint.path}`, parsed.issues);
        return { data: parsed.data as EndpointOutput<K>, raw, status: response.status, headers: response.headers };
      }
      const retryAfter = parseRetryAfter(response.headers.get('retry-after'));
      if (RETRY_STATUSES.has(response.status) && attempt < attempts) {
        await this.pause(retryAfter !== undefined ? Math.min(retryAfter * 1000, MAX_RETRY_AFTER_MS) : this.backoff(attempt), call);
        continue;
      }
      throw toApiError(response, raw, { method: endpoint.method, url }, retryAfter);
    }
  }

  /**
   * `GET /tasks/{id}/stream`: the task's records as they happen, in sequence order, ending after
   * its terminal status; reconnects with Last-Event-ID after a dropped connection. Uses undici
   * (loaded on first call), not the one-shot transport, unless `streamOpener` says otherwise.
   */
  async *streamTask(taskId: string, options: StreamTaskOptions = {}): AsyncGenerator<StreamRecord> {
    const context = {
      baseUrl: this.baseUrl,
      apiKey: this.options.apiKey,
      userAgent: this.options.userAgent,
      debug: this.options.debug,
      toError: (status: number, headers: ResponseHeaders, text: string, request: { method: string; url: string }) =>
        toApiError({ status, statusText: '', headers, text }, parseJson(text), request),
    };
    const signal = options.signal && this.options.signal ? AbortSignal.any([options.signal, this.options.signal]) : (options.signal ?? this.options.signal);
    const opener = this.options.streamOpener;
    if (opener) {
      const core = await import('./stream-core.js');
      yield* core.streamTask({ ...context, open: opener }, taskId, { ...options, signal });
    } else {
      const { streamTask } = await import('./stream.js');
      yield* streamTask(context, taskId, { ...options, signal });
    }
  }

  /**
   * `GET /versions/{id}/deliveries/stream`: a dev version's deliveries as Server-Sent Events
   * (`agentctl dev` holds it open and reconnects itself), until the server ends it or `signal` aborts.
   */
  async *streamVersionDeliveries(versionId: string, options: { signal?: AbortSignal } = {}): AsyncGenerator<ServerSentEvent> {
    const { readEventStream } = await import('./sse.js');
    yield* readEventStream(this, `/versions/${encodeURIComponent(versionId)}/deliveries/stream`, {}, options.signal);
  }

  /**
   * `GET /versions/{id}/logs?follow=true`: a version's lines as its processes write them (the last
   * `tail` stored ones first), until the server ends the stream or `signal` aborts.
   */
  async *followVersionLogs(
    versionId: string,
    query: { tail?: number; since?: string; task_id?: string; trace_id?: string } = {},
    options: { signal?: AbortSignal } = {},
  ): AsyncGenerator<VersionLogLine> {
    const [{ readEventStream }, { LOG_SSE_EVENT }] = await Promise.all([import('./sse.js'), import('../contract/enums.js')]);
    for await (const event of readEventStream(this, `/versions/${encodeURIComponent(versionId)}/logs`, { ...query, follow: true }, options.signal))
      if (event.event === LOG_SSE_EVENT) yield JSON.parse(event.data) as VersionLogLine;
  }

  private signalFor(call: CallOptions): AbortSignal {
    const timeout = AbortSignal.timeout(this.options.timeoutMs ?? 30_000);
    // The timeout alone (the ADK's every call, a streamed delta's too) needs no combined signal.
    if (!this.options.signal && !call.signal) return timeout;
    const signals = [timeout];
    if (this.options.signal) signals.push(this.options.signal);
    if (call.signal) signals.push(call.signal);
    return AbortSignal.any(signals);
  }

  private backoff(attempt: number): number {
    const base = Math.min((this.options.backoffMs ?? 250) * 2 ** (attempt - 1), MAX_BACKOFF_MS);
    return base / 2 + Math.random() * (base / 2);
  }

  private pause(ms: number, call: CallOptions): Promise<void> {
    const signals = [this.options.signal, call.signal].filter((s): s is AbortSignal => !!s);
    return new Promise((resolve, reject) => {
      const abort = () => {
        clearTimeout(timer);
        reject(signals.find((s) => s.aborted)?.reason ?? new Error('aborted'));
      };
      const timer = setTimeout(() => {
        for (const s of signals) s.removeEventListener('abort', abort);
        resolve();
      }, ms);
      for (const s of signals) {
        if (s.aborted) return abort();
        s.addEventListener('abort', abort, { once: true });
      }
    });
  }

  /** A `--debug` line, built only when someone reads it (redacting a whole answer is not free). */
  private trace(line: () => string): void {
    this.options.debug?.(line());
  }
}

/** A client with one typed method per endpoint, e.g. `client.migrateTasks({ body })`. */
export type Client = AgentctlClient & EndpointMethods;

export function createClient(options: ClientOptions): Client {
  const client = new AgentctlClient(options) as Client;
  for (const name of Object.keys(routes) as EndpointName[]) {
    if ((routes[name] as Route).sse) continue;
    (client as unknown as Record<string, unknown>)[name] = async (input?: unknown, call?: CallOptions) =>
      (await client.request(name, input as never, call)).data;
  }
  return client;
}

/**
 * A fresh Idempotency-Key. crypto.randomUUID exists in Node and in a browser's secure contexts only;
 * the console served over plain http from a host other than localhost has getRandomValues alone.
 */
function randomKey(): string {
  const crypto = globalThis.crypto;
  if (typeof crypto.randomUUID === 'function') return crypto.randomUUID();
  return Array.from(crypto.getRandomValues(new Uint8Array(16)), (b) => b.toString(16).padStart(2, '0')).join('');
}

function buildPath(template: string, params: Record<string, string>): string {
  return template.replace(/:([a-z_]+)/g, (_match, name: string) => {
    const value = params[name];
    if (value === undefined || value === '') throw new TypeError(`Missing path parameter ${name} for ${template}`);
    return encodeURIComponent(value);
  });
}

function buildQuery(query: Record<string, unknown> | undefined): string {
  if (!query) return '';
  const search = new URLSearchParams();
  for (const [name, value] of Object.entries(query)) {
    if (value === undefined || value === null) continue;
    // A list goes as the parameter repeated (`relationships=agents&relationships=...`).
    if (Array.isArray(value)) for (const item of value) search.append(name, String(item));
    else search.set(name, String(value));
  }
  const text = search.toString();
  return text ? `?${text}` : '';
}

function notJsonKind(response: TransportResponse): NotServiceAnswerError['body'] {
  if (!response.text.trim()) return 'empty';
  const type = response.headers.get('content-type') ?? '';
  if (/\bjson\b/i.test(type)) return 'truncated_json';
  if (/html/i.test(type) || /^\s*<(!doctype|html|head|body)/i.test(response.text)) return 'html';
  return 'text';
}

function parseJson(text: string): unknown {
  if (!text) return undefined;
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
}

/** Seconds from a `Retry-After` header: a number of seconds or an HTTP date. */
export function parseRetryAfter(value: string | null): number | undefined {
  if (!value) return undefined;
  const seconds = Number(value);
  if (Number.isFinite(seconds) && seconds >= 0) return seconds;
  const date = Date.parse(value);
  return Number.isNaN(date) ? undefined : Math.max(0, (date - Date.now()) / 1000);
}

function failureReason(error: unknown): string {
  if ((error as Error)?.name === 'TimeoutError') return 'timed out';
  if (error instanceof TransportError) return error.code;
  return String(error);
}

function toApiError(response: TransportResponse, raw: unknown, request: { method: string; url: string }, retryAfter?: number): ApiRequestError {
  const requestInfo = { ...request, requestId: response.headers.get('x-request-id') ?? undefined };
  const body = raw as { detail?: unknown; code?: unknown } | undefined;
  if (body && Array.isArray(body.detail)) return new ApiRequestError(response.status, 'validation_error', body.detail, requestInfo, retryAfter);
  if (body && typeof body.detail === 'string') {
    return new ApiRequestError(response.status, typeof body.code === 'string' ? body.code : `http_${response.status}`, body.detail, requestInfo, retryAfter);
  }
  const text = typeof raw === 'string' && raw ? raw.slice(0, 200) : response.statusText || `HTTP ${response.status}`;
  return new ApiRequestError(response.status, `http_${response.status}`, text, requestInfo, retryAfter);
}
