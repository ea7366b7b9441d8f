/**
 * Traces and logs of a handler's turn (README "Traces"). Each delivery carries the W3C trace context
 * of the request that caused it; the handler runs in a span of that trace, `ctx.trace.span` adds the
 * agent's own steps (a model call, a tool), and every ADK call made meanwhile carries the active span
 * as its `traceparent`. The finished spans go back with the delivery's completion, or over OTLP when
 * the agent's environment configures an endpoint (OTEL_EXPORTER_OTLP_ENDPOINT).
 */
import { AsyncLocalStorage } from 'node:async_hooks';
import { formatTraceparent, newSpanId, newTraceId, parseTraceparent, TRACEPARENT_HEADER } from '../contract/trace-context.js';
import type { SpanInput } from '../contract/traces.js';

export type SpanAttributeValue = string | number | boolean;
export type SpanAttributes = Record<string, SpanAttributeValue>;

/** What `ctx.trace.span`'s function gets: the span, to add what it learns (tokens once the model answered). */
export interface SpanHandle {
  readonly traceId: string;
  readonly spanId: string;
  setAttribute(key: string, value: SpanAttributeValue): void;
  setAttributes(attributes: SpanAttributes): void;
  /** Marks the span failed (a throw out of the function does this too). */
  setError(message: string): void;
}

type Kind = NonNullable<SpanInput['kind']>;

/** The most spans one turn keeps (the completion's limit). */
const MAX_SPANS = 1000;

const nowMicros = () => Math.round((performance.timeOrigin + performance.now()) * 1000);

/** The spans of one delivery's handler: a trace of its own when the delivery came without one. */
export class Turn {
  readonly traceId: string;
  readonly spans: SpanInput[] = [];
  /** The span the delivery was sent in (the platform's), the handler's parent. */
  readonly parentSpanId: string | null;

  constructor(
    traceparent: string | undefined,
    readonly taskId: string,
    readonly deliveryId: string,
  ) {
    const parent = parseTraceparent(traceparent);
    this.traceId = parent?.traceId ?? newTraceId();
    this.parentSpanId = parent?.spanId ?? null;
  }

  /** The delivery's trace context (the platform's span), for the calls about the delivery itself (renew, complete). */
  traceparent(): string | undefined {
    return this.parentSpanId ? formatTraceparent({ traceId: this.traceId, spanId: this.parentSpanId, sampled: true }) : undefined;
  }

  /** Runs `fn` in a new span under the active one (or under the delivery's); ends it with fn's outcome. */
  async run<T>(name: string, kind: Kind, attributes: SpanAttributes, fn: (span: SpanHandle) => T | Promise<T>): Promise<T> {
    const parentSpanId = active.getStore()?.turn === this ? active.getStore()!.spanId : this.parentSpanId;
    const spanId = newSpanId();
    const record: SpanInput & { attributes: SpanAttributes } = {
      trace_id: this.traceId,
      span_id: spanId,
      parent_span_id: parentSpanId,
      name: String(name).slice(0, 200) || 'span',
      kind,
      start_time_us: nowMicros(),
      end_time_us: 0,
      status: 'unset',
      status_message: null,
      attributes: { ...cleanAttributes(attributes) },
    };
    const handle: SpanHandle = {
      traceId: this.traceId,
      spanId,
      setAttribute: (key, value) => Object.assign(record.attributes, cleanAttributes({ [key]: value })),
      setAttributes: (more) => Object.assign(record.attributes, cleanAttributes(more)),
      setError: (message) => {
        record.status = 'error';
        record.status_message = String(message).slice(0, 2000);
      },
    };
    try {
      return await active.run({ turn: this, spanId }, () => fn(handle));
    } catch (error) {
      handle.setError(error instanceof Error ? error.message || error.name : String(error));
      throw error;
    } finally {
      record.end_time_us = Math.max(record.start_time_us, nowMicros());
      if (this.spans.length < MAX_SPANS) this.spans.push(record);
    }
  }
}

const active = new AsyncLocalStorage<{ turn: Turn; spanId: string }>();

/** The `traceparent` header of the active span, for the ADK's calls back to the platform. */
export function activeTraceHeaders(): Record<string, string> | undefined {
  const store = active.getStore();
  if (!store) return undefined;
  return { [TRACEPARENT_HEADER]: formatTraceparent({ traceId: store.turn.traceId, spanId: store.spanId, sampled: true }) };
}

/** The active turn and span, for log lines. */
export function activeSpan(): { traceId: string; spanId: string } | undefined {
  const store = active.getStore();
  return store ? { traceId: store.turn.traceId, spanId: store.spanId } : undefined;
}

function cleanAttributes(attributes: SpanAttributes | undefined): SpanAttributes {
  const clean: SpanAttributes = {};
  for (const [key, value] of Object.entries(attributes ?? {})) {
    if (typeof value === 'string') clean[key.slice(0, 200)] = value.slice(0, 4000);
    else if ((typeof value === 'number' && Number.isFinite(value)) || typeof value === 'boolean') clean[key.slice(0, 200)] = value;
  }
  return clean;
}

/** `ctx.trace`: spans of the agent's own steps. */
export interface TraceApi {
  /** The trace of this turn (paste it into `agentctl trace`). */
  readonly traceId: string;
  /**
   * Runs `fn` in a span named `name`; GenAI attributes (`gen_ai.request.model`,
   * `gen_ai.usage.input_tokens`, `gen_ai.usage.output_tokens`) pass through, and the platform sums
   * the tokens per task.
   */
  span<T>(name: string, attributes: SpanAttributes, fn: (span: SpanHandle) => T | Promise<T>): Promise<T>;
  span<T>(name: string, fn: (span: SpanHandle) => T | Promise<T>): Promise<T>;
}

export function traceApi(turn: Turn): TraceApi {
  return {
    traceId: turn.traceId,
    span<T>(name: string, attributesOrFn: SpanAttributes | ((span: SpanHandle) => T | Promise<T>), maybeFn?: (span: SpanHandle) => T | Promise<T>) {
      const fn = typeof attributesOrFn === 'function' ? attributesOrFn : maybeFn;
      if (typeof fn !== 'function') throw new TypeError('ctx.trace.span(name, attributes, fn): fn must be a function');
      return turn.run(name, 'internal', typeof attributesOrFn === 'function' ? {} : attributesOrFn, fn);
    },
  };
}

export type LogFields = Record<string, unknown>;

/** `ctx.log`: structured lines (JSON) tied to the turn: task, delivery, trace and span ids. */
export interface LogApi {
  info(message: string, fields?: LogFields): void;
  warn(message: string, fields?: LogFields): void;
  error(message: string, fields?: LogFields): void;
}

export function logApi(turn: Turn, out: { stdout: (line: string) => void; stderr: (line: string) => void } = defaultOut): LogApi {
  const write = (level: 'info' | 'warn' | 'error', message: string, fields?: LogFields) => {
    const span = activeSpan();
    const line = JSON.stringify({
      ...fields,
      time: new Date().toISOString(),
      level,
      msg: String(message),
      task_id: turn.taskId,
      delivery_id: turn.deliveryId,
      trace_id: turn.traceId,
      ...(span?.traceId === turn.traceId ? { span_id: span.spanId } : {}),
    });
    (level === 'info' ? out.stdout : out.stderr)(`${line}\n`);
  };
  return {
    info: (message, fields) => write('info', message, fields),
    warn: (message, fields) => write('warn', message, fields),
    error: (message, fields) => write('error', message, fields),
  };
}

const defaultOut = {
  stdout: (line: string) => void process.stdout.write(line),
  stderr: (line: string) => void process.stderr.write(line),
};

/** The agent's environment names an OTLP endpoint: its spans go there, not with the completion. */
export const otlpConfigured = (env: NodeJS.ProcessEnv = process.env) =>
  Boolean(env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT || env.OTEL_EXPORTER_OTLP_ENDPOINT) && env.OTEL_TRACES_EXPORTER !== 'none';
