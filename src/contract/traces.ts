import { z } from 'zod';
import { JsonObject, Timestamp } from './common.js';

/** OpenTelemetry's span kinds and statuses, lower-cased. */
export const SPAN_KINDS = ['internal', 'server', 'client', 'producer', 'consumer'] as const;
export const SPAN_STATUSES = ['unset', 'ok', 'error'] as const;
/** The most spans one completion may carry (an agent's handler with more keeps the first ones). */
export const MAX_REPORTED_SPANS = 1000;

const TraceId = z.string().regex(/^[0-9a-f]{32}$/, 'must be 32 lower-case hex digits');
const SpanId = z.string().regex(/^[0-9a-f]{16}$/, 'must be 16 lower-case hex digits');
/** Unix time in microseconds. */
const Micros = z.number().int().min(0).max(8_640_000_000_000_000);

export const SpanAttributes = z.record(z.string(), z.union([z.string().max(4000), z.number(), z.boolean()]));

/** A finished span as an agent reports it (with its delivery's completion). */
export const SpanInput = z.object({
  trace_id: TraceId,
  span_id: SpanId,
  parent_span_id: SpanId.nullable(),
  name: z.string().min(1).max(200),
  kind: z.enum(SPAN_KINDS).default('internal'),
  start_time_us: Micros,
  end_time_us: Micros,
  status: z.enum(SPAN_STATUSES).default('unset'),
  status_message: z.string().max(2000).nullable().default(null),
  attributes: SpanAttributes.default({}),
});
export type SpanInput = z.input<typeof SpanInput>;

/** `POST /deliveries/{id}/complete`: the spans of the handler that finished, if the agent records any. */
export const CompleteDeliveryRequest = z.object({ spans: z.array(SpanInput).max(MAX_REPORTED_SPANS).optional() }).nullish();

export const TraceSpan = z
  .object({
    trace_id: z.string(),
    span_id: z.string(),
    parent_span_id: z.string().nullable(),
    name: z.string(),
    kind: z.enum(SPAN_KINDS),
    /** Who recorded it: `agentctl-cli` (recorded by the server from the CLI's trace context), `agentctl-server`, or the agent (`namespace/name`). */
    service: z.string(),
    task_id: z.string().nullable(),
    start_time: Timestamp,
    start_time_us: z.number().int(),
    end_time_us: z.number().int(),
    duration_ms: z.number(),
    status: z.enum(SPAN_STATUSES),
    status_message: z.string().nullable(),
    /** String, number and boolean values, as the span was given them. */
    attributes: JsonObject,
  })
  .meta({ id: 'TraceSpan' });
export type TraceSpan = z.infer<typeof TraceSpan>;

export const Trace = z
  .object({
    trace_id: z.string(),
    /** The task it belongs to, when a span names one. */
    task_id: z.string().nullable(),
    start_time: Timestamp,
    duration_ms: z.number(),
    /** Spans ordered by start; parents link by `parent_span_id`. */
    spans: z.array(TraceSpan),
  })
  .meta({ id: 'Trace' });
export type Trace = z.infer<typeof Trace>;

/** The traces of a task the server still keeps, oldest first: one per turn (a command, a delivery). */
export const TaskTraces = z
  .object({
    traces: z.array(Trace),
    /** How many traces of the task the server keeps (more than `traces` holds when `limit` or `turn` picked some). */
    total: z.number().int(),
  })
  .meta({ id: 'TaskTraces' });
export type TaskTraces = z.infer<typeof TaskTraces>;

export const TraceQuery = z.object({
  /** Only the Nth trace of the task (1 = the first kept; -1 = the last). */
  turn: z.coerce.number().int().optional(),
  /** Only the last N traces (a long task's page: the console shows its recent turns first). */
  limit: z.coerce.number().int().min(1).max(1000).optional(),
});
