/**
 * Traces (README "Traces"): the server's spans, made with OpenTelemetry's API and its official SDK.
 * Every span of a trace that concerns an org is kept in the in-server span store (span-store.ts, a
 * bounded table); with OTEL_EXPORTER_OTLP_ENDPOINT (or ..._TRACES_ENDPOINT) set, every span is also
 * exported over OTLP/HTTP (loaded only then). Spans the server did not make itself (the CLI's request,
 * an agent's handler) arrive as records and take the same two ways.
 */
import {
  context,
  ROOT_CONTEXT,
  type SpanKind,
  SpanStatusCode,
  trace,
  TraceFlags,
  type Attributes,
  type Context,
  type Span,
  type SpanContext,
  type Tracer,
} from '@opentelemetry/api';
import type { ReadableSpan, SpanProcessor } from '@opentelemetry/sdk-trace';
import type { Resource } from '@opentelemetry/resources';
import { GEN_AI_INPUT_TOKENS, GEN_AI_OUTPUT_TOKENS, parseTraceparent } from '../../contract/trace-context.js';
import type { Db } from '../store/db.js';
import { TRACING_KEY } from './context.js';
import { toReadableSpan } from '../../client/otlp-export.js';
import { SpanStore, type SpanRecord, type StoreLimits } from './span-store.js';

export const SERVER_SERVICE = 'agentctl-server';
export const CLI_SERVICE = 'agentctl-cli';

/** What a trace concerns, learnt as its spans are made: spans are stored under the org, found by the task. */
interface TraceInfo {
  orgId?: string;
  taskId?: string;
}

const KINDS = ['internal', 'server', 'client', 'producer', 'consumer'] as const;
/** Traces noted per generation (`Tracing.note`): the newest this many at least are remembered, twice this at most. */
const REMEMBERED_TRACES = 20_000;

export interface TracingOptions {
  /** The store's limits (AGENTCTL_TRACE_MAX_SPANS, AGENTCTL_TRACE_MAX_AGE_HOURS). */
  limits?: Partial<StoreLimits>;
  env?: NodeJS.ProcessEnv;
}

/** Tracing is on unless AGENTCTL_TRACING=off (the benchmark's baseline). */
export const tracingEnabled = (env: NodeJS.ProcessEnv = process.env) => !/^(off|false|0|no)$/i.test(env.AGENTCTL_TRACING ?? '');

let contextManagerSet = false;

export class Tracing {
  readonly tracer: Tracer;
  /**
   * Noted traces in two generations: `current` fills, then replaces `previous`, which goes whole.
   * Evicting the oldest trace one by one cost each new trace a walk over the map's deleted entries
   * (a Map's first key is found by iterating past them).
   */
  private current = new Map<string, TraceInfo>();
  private previous = new Map<string, TraceInfo>();
  private closed = false;

  private constructor(
    private readonly provider: { shutdown(): Promise<void>; forceFlush(): Promise<void> },
    tracer: Tracer,
    readonly store: SpanStore,
    private readonly exporter: SpanProcessor | undefined,
    private readonly resource: Resource,
    private readonly agentResource: (service: string) => Resource,
  ) {
    this.tracer = tracer;
  }

  static async start(db: Db, options: TracingOptions = {}): Promise<Tracing> {
    const env = options.env ?? process.env;
    const [{ TracerProvider, BatchSpanProcessor }, { resourceFromAttributes }, { AsyncLocalStorageContextManager }] = await Promise.all([
      import('@opentelemetry/sdk-trace'),
      import('@opentelemetry/resources'),
      import('@opentelemetry/context-async-hooks'),
    ]);
    if (!contextManagerSet) {
      contextManagerSet = context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
    }
    const endpoint = env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT || env.OTEL_EXPORTER_OTLP_ENDPOINT;
    let exporter: SpanProcessor | undefined;
    if (endpoint && env.OTEL_TRACES_EXPORTER !== 'none') {
      // The official OTLP/HTTP exporter reads the OTEL_EXPORTER_OTLP_* variables itself (endpoint, headers, timeout).
      const { OTLPTraceExporter } = await import('@opentelemetry/exporter-trace-otlp-http');
      exporter = new BatchSpanProcessor({ exporter: new OTLPTraceExporter(), scheduledDelayMillis: Number(env.OTEL_BSP_SCHEDULE_DELAY ?? 1000) });
    }
    const resource = resourceFromAttributes({ 'service.name': env.OTEL_SERVICE_NAME || SERVER_SERVICE });
    const store = new SpanStore(db, {
      maxSpans: Number(env.AGENTCTL_TRACE_MAX_SPANS ?? options.limits?.maxSpans ?? 100_000),
      maxAgeMs: Number(env.AGENTCTL_TRACE_MAX_AGE_HOURS ?? 24) * 3_600_000,
      ...options.limits,
    });
    let tracing: Tracing | undefined;
    const toStore: SpanProcessor = {
      onStart: () => {},
      onEnd: (span) => tracing?.keep(span),
      forceFlush: async () => {},
      shutdown: async () => {},
    };
    const provider = new TracerProvider({ resource, spanProcessors: exporter ? [toStore, exporter] : [toStore] });
    const agentResources = new Map<string, Resource>();
    tracing = new Tracing(provider, provider.getTracer('agentctl-server'), store, exporter, resource, (service) => {
      let r = agentResources.get(service);
      if (!r) {
        r = resourceFromAttributes({ 'service.name': service });
        if (agentResources.size < 1000) agentResources.set(service, r);
      }
      return r;
    });
    return tracing;
  }

  /** A context under which this server's spans are made, with the caller's span (W3C `traceparent`) as parent. */
  contextFrom(traceparent: string | undefined | null, tracestate?: string | null): Context {
    const base = ROOT_CONTEXT.setValue(TRACING_KEY, this);
    const parent = parseTraceparent(traceparent);
    if (!parent) return base;
    const spanContext: SpanContext = {
      traceId: parent.traceId,
      spanId: parent.spanId,
      traceFlags: parent.sampled ? TraceFlags.SAMPLED : TraceFlags.NONE,
      isRemote: true,
      ...(tracestate ? { traceState: new SimpleTraceState(tracestate) } : {}),
    };
    return trace.setSpanContext(base, spanContext);
  }

  /** Runs `fn` in a new span (ended with its outcome; a throw marks it failed). */
  async inSpan<T>(
    parent: Context,
    name: string,
    options: { kind?: SpanKind; attributes?: Attributes; startTime?: number },
    fn: (span: Span) => Promise<T>,
  ): Promise<T> {
    const span = this.tracer.startSpan(name, options, parent);
    try {
      return await context.with(trace.setSpan(parent, span), () => fn(span));
    } catch (error) {
      span.setStatus({ code: SpanStatusCode.ERROR, message: (error as Error)?.message?.slice(0, 500) });
      throw error;
    } finally {
      span.end();
    }
  }

  /** What the trace concerns: its spans are kept under the org and found by the task. */
  note(traceId: string, info: TraceInfo): void {
    const known = this.infoOf(traceId);
    if (known) {
      known.orgId ??= info.orgId;
      known.taskId ??= info.taskId;
      return;
    }
    if (this.current.size >= REMEMBERED_TRACES) {
      this.previous = this.current;
      this.current = new Map();
    }
    this.current.set(traceId, { ...info });
  }

  private infoOf(traceId: string): TraceInfo | undefined {
    return this.current.get(traceId) ?? this.previous.get(traceId);
  }

  /** A span the SDK ended: to the store when its trace is known to concern an org. */
  private keep(span: ReadableSpan): void {
    if (this.closed) return;
    const spanContext = span.spanContext();
    const info = this.infoOf(spanContext.traceId);
    const attributes = span.attributes as SpanRecord['attributes'];
    const orgId = info?.orgId ?? (attributes['agentctl.org_id'] as string | undefined);
    if (!orgId) return;
    this.store.add({
      org_id: orgId,
      trace_id: spanContext.traceId,
      span_id: spanContext.spanId,
      parent_span_id: span.parentSpanContext?.spanId ?? null,
      task_id: (attributes['agentctl.task_id'] as string | undefined) ?? info?.taskId ?? null,
      name: span.name,
      kind: KINDS[span.kind] ?? 'internal',
      service: SERVER_SERVICE,
      start_us: hrToMicros(span.startTime),
      end_us: hrToMicros(span.endTime),
      status: span.status.code === SpanStatusCode.ERROR ? 'error' : span.status.code === SpanStatusCode.OK ? 'ok' : 'unset',
      status_message: span.status.message ?? null,
      attributes,
    });
  }

  /**
   * Spans the server did not make (the CLI's request, an agent's handler): kept like its own, and
   * exported over OTLP when that is configured.
   */
  record(records: SpanRecord[]): void {
    if (this.closed || records.length === 0) return;
    for (const record of records) {
      const info = this.infoOf(record.trace_id);
      this.store.add({ ...record, task_id: record.task_id ?? info?.taskId ?? null });
    }
    if (this.exporter) for (const record of records) this.exporter.onEnd(this.toReadable(record));
  }

  /** GenAI token counts among an agent's spans (`gen_ai.usage.*`), summed. */
  static tokens(records: Pick<SpanRecord, 'attributes'>[]): { input: number; output: number } {
    let input = 0;
    let output = 0;
    for (const { attributes } of records) {
      const i = Number(attributes[GEN_AI_INPUT_TOKENS]);
      const o = Number(attributes[GEN_AI_OUTPUT_TOKENS]);
      if (Number.isFinite(i) && i > 0) input += Math.floor(i);
      if (Number.isFinite(o) && o > 0) output += Math.floor(o);
    }
    return { input, output };
  }

  private toReadable(record: SpanRecord): ReadableSpan {
    const span = { ...record, attributes: { ...record.attributes, ...(record.task_id ? { 'agentctl.task_id': record.task_id } : {}) } };
    return toReadableSpan(
      span,
      record.service === SERVER_SERVICE ? this.resource : this.agentResource(record.service),
      record.service === CLI_SERVICE ? 'agentctl-cli' : 'agentctl-adk',
    );
  }

  /** Writes what is buffered (the store, the OTLP exporter). */
  async flush(): Promise<void> {
    await spansEnded();
    await this.provider.forceFlush();
    await this.store.flush();
  }

  async close(): Promise<void> {
    await spansEnded();
    await this.provider.forceFlush().catch(() => {});
    this.closed = true;
    await this.store.close();
    await this.provider.shutdown().catch(() => {});
  }
}

/** The database spans of statements that already ended are made in the next check phase (db-spans.ts `endSpan`): after it. */
const spansEnded = () => new Promise<void>((resolve) => setImmediate(resolve));

export type { SpanRecord };

export function hrToMicros(time: [number, number]): number {
  return time[0] * 1_000_000 + Math.floor(time[1] / 1000);
}

/** A received `tracestate`, passed on as it came (the API's TraceState interface, without the SDK's parser). */
class SimpleTraceState {
  constructor(private readonly text: string) {}
  set(): this {
    return this;
  }
  unset(): this {
    return this;
  }
  get(key: string): string | undefined {
    for (const member of this.text.split(',')) {
      const [k, v] = member.trim().split('=', 2);
      if (k === key) return v;
    }
    return undefined;
  }
  serialize(): string {
    return this.text;
  }
}
