/**
 * The server's tracing as seen from code that does not hold the Tracing object: the active
 * OpenTelemetry context carries it (set by the request span and the dispatcher), so the database
 * layer and the outbox add to the right trace of the right server. Without tracing (or outside a
 * traced request) every function here does nothing.
 */
import { context, createContextKey, SpanKind, SpanStatusCode, trace, type Context } from '@opentelemetry/api';
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

/** Kysely's `log` option: each query of a traced request becomes a span (`db SELECT`, ...) under the request's. */
export function logQuery(event: { level: 'query' | 'error'; query: { sql: string }; queryDurationMillis: number; error?: unknown }): void {
  const ctx = context.active();
  const tracing = activeTracing(ctx);
  // Only under a span still open: work a request started but that outlives it is not its.
  if (!tracing || !trace.getSpan(ctx)?.isRecording()) return;
  const end = Date.now();
  // A WITH statement is named by its main statement (the verb after the CTEs), whatever parentheses its CTEs hold.
  const operation = /^\s*(?:with\b[\s\S]*?\)\s*(?=(?:select|insert|update|delete|merge)\b))?(\w+)/i.exec(event.query.sql)?.[1]?.toUpperCase() ?? 'QUERY';
  const span = tracing.tracer.startSpan(
    `db ${operation}`,
    {
      kind: SpanKind.CLIENT,
      startTime: end - event.queryDurationMillis,
      attributes: { 'db.system.name': 'postgresql', 'db.operation.name': operation, 'db.query.text': event.query.sql.slice(0, 300) },
    },
    ctx,
  );
  if (event.level === 'error') span.setStatus({ code: SpanStatusCode.ERROR, message: (event.error as Error)?.message?.slice(0, 500) });
  span.end(end);
}
