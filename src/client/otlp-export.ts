/**
 * Spans recorded as plain records (the CLI's request, an agent's handler) exported over OTLP/HTTP
 * with OpenTelemetry's official SDK and exporter, which read the usual OTEL_EXPORTER_OTLP_* variables.
 * Loaded only where an OTLP endpoint is configured: by the server, and by an agent whose environment
 * names one.
 */
import { type SpanKind, SpanStatusCode, TraceFlags, type SpanContext } from '@opentelemetry/api';
import type { ReadableSpan, SpanProcessor } from '@opentelemetry/sdk-trace';
import type { Resource } from '@opentelemetry/resources';

export interface ExportableSpan {
  trace_id: string;
  span_id: string;
  parent_span_id: string | null;
  name: string;
  kind?: string;
  start_us: number;
  end_us: number;
  status?: string;
  status_message?: string | null;
  attributes: Record<string, string | number | boolean>;
}

const KINDS = ['internal', 'server', 'client', 'producer', 'consumer'];

const microsToHr = (us: number): [number, number] => [Math.floor(us / 1_000_000), (us % 1_000_000) * 1000];

/** A record as the SDK's ReadableSpan, what its exporters take. */
export function toReadableSpan(span: ExportableSpan, resource: Resource, scope: string): ReadableSpan {
  const spanContext: SpanContext = { traceId: span.trace_id, spanId: span.span_id, traceFlags: TraceFlags.SAMPLED };
  return {
    name: span.name,
    kind: Math.max(0, KINDS.indexOf(span.kind ?? 'internal')) as SpanKind,
    spanContext: () => spanContext,
    parentSpanContext: span.parent_span_id ? { traceId: span.trace_id, spanId: span.parent_span_id, traceFlags: TraceFlags.SAMPLED } : undefined,
    startTime: microsToHr(span.start_us),
    endTime: microsToHr(span.end_us),
    status: {
      code: span.status === 'error' ? SpanStatusCode.ERROR : span.status === 'ok' ? SpanStatusCode.OK : SpanStatusCode.UNSET,
      ...(span.status_message ? { message: span.status_message } : {}),
    },
    attributes: span.attributes,
    links: [],
    events: [],
    duration: microsToHr(Math.max(0, span.end_us - span.start_us)),
    ended: true,
    resource,
    instrumentationScope: { name: scope },
    droppedAttributesCount: 0,
    droppedEventsCount: 0,
    droppedLinksCount: 0,
  };
}

export interface OtlpSpanExporter {
  export(spans: ExportableSpan[]): void;
  flush(): Promise<void>;
  close(): Promise<void>;
}

/** A batching OTLP/HTTP exporter of records, for the service `serviceName` (OTEL_SERVICE_NAME wins). */
export async function createOtlpSpanExporter(serviceName: string, scope: string, env: NodeJS.ProcessEnv = process.env): Promise<OtlpSpanExporter> {
  const [{ BatchSpanProcessor }, { OTLPTraceExporter }, { resourceFromAttributes }] = await Promise.all([
    import('@opentelemetry/sdk-trace'),
    import('@opentelemetry/exporter-trace-otlp-http'),
    import('@opentelemetry/resources'),
  ]);
  const processor: SpanProcessor = new BatchSpanProcessor({
    exporter: new OTLPTraceExporter(),
    scheduledDelayMillis: Number(env.OTEL_BSP_SCHEDULE_DELAY ?? 1000),
  });
  const resource = resourceFromAttributes({ 'service.name': env.OTEL_SERVICE_NAME || serviceName });
  return {
    export: (spans) => {
      for (const span of spans) processor.onEnd(toReadableSpan(span, resource, scope));
    },
    flush: () => processor.forceFlush(),
    close: () => processor.shutdown(),
  };
}
