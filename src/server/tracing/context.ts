/**
 * The server's tracing as seen from code that does not hold the Tracing object: the active
 * OpenTelemetry context carries it (set by the request span and the dispatcher), so the database
 * driver (db-spans.ts) and the outbox add to the right trace of the right server. Without tracing (or outside a
 * traced request) every function here does nothing.
 */
import { context, createContextKey, trace, type Context } from '@opentelemetry/api';
import { formatTraceparent } from '../../contract/trace-context.js';
import type { Tracing } from './tracing.js';

export const TRACING_KEY = createContextKey('agentctl.tracing');

export function activeTracing(ctx: Context = context.active()): Tracing | undefined {
  return ctx.getValue(TRACING_KEY) as Tracing | undefined;
}

/**
 * The active span's context as W3C text, for what outlives the request (the delivery row), and
 * notes that the trace concerns the task.
 */
export function currentTraceContext(taskId?: string): { traceparent: string; tracestate: string | null } | null {
  const ctx = context.active();
  const tracing = activeTracing(ctx);
  const span = trace.getSpan(ctx);
  if (!tracing || !span) return null;
  const spanContext = span.spanContext();
  if (taskId) tracing.note(spanContext.traceId, { taskId });
  return {
    traceparent: formatTraceparent({ traceId: spanContext.traceId, spanId: spanContext.spanId, sampled: (spanContext.traceFlags & 1) === 1 }),
    tracestate: spanContext.traceState?.serialize() || null,
  };
}
