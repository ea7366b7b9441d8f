/**
 * A span per API request (SERVER kind), its parent the caller's `traceparent`: the CLI's command, or
 * an agent's handler calling back. Ended when the answer is sent. When the caller is the CLI (its
 * `tracestate` names the command and when its request started), the CLI's own span is recorded too,
 * from that start to the answer: the CLI loads no SDK and sends no spans of its own.
 */
import { context, SpanKind, SpanStatusCode, trace, type Span } from '@opentelemetry/api';
import type { FastifyReply, FastifyRequest } from 'fastify';
import fp from 'fastify-plugin';
import { parseClientTraceState, parseTraceparent, TRACEPARENT_HEADER, TRACESTATE_HEADER } from '../../contract/trace-context.js';
import type { ServiceContext } from '../route-host.js';
import { CLI_SERVICE, type Tracing } from './tracing.js';

const header = (request: FastifyRequest, name: string): string | undefined => {
  const value = request.headers[name];
  return Array.isArray(value) ? value[0] : value;
};

export function inRequestSpan(tracing: Tracing, request: FastifyRequest, reply: FastifyReply, serve: () => Promise<unknown>): Promise<unknown> {
  const parent = tracing.contextFrom(header(request, TRACEPARENT_HEADER), header(request, TRACESTATE_HEADER));
  const route = request.routeOptions.url ?? request.url.split('?')[0]!;
  const span = tracing.tracer.startSpan(
    `${request.method} ${route}`,
    {
      kind: SpanKind.SERVER,
      // From when the request arrived (authentication and body parsing included).
      startTime: Date.now() - reply.elapsedTime,
      attributes: { 'http.request.method': request.method, 'http.route': route, 'agentctl.request_id': request.id },
    },
    parent,
  );
  request.traceSpan = span;
  return context.with(trace.setSpan(parent, span), serve);
}

/** The request's org and task, once its key and input are known: its trace's spans are kept under them. */
export function noteTrace(service: ServiceContext, request: FastifyRequest, orgId: string, input: { params: unknown; body: unknown }): void {
  const span = request.traceSpan!;
  // A turn changes its task: reading one (`tasks get`, `tasks trace`) is a trace of its own, not one of the task's.
  const taskId = request.method === 'GET' ? undefined : (taskOf(input.params) ?? taskOf(input.body));
  if (taskId) span.setAttribute('agentctl.task_id', taskId);
  service.tracing?.note(span.spanContext().traceId, { orgId: orgId || undefined, taskId });
}

const taskOf = (value: unknown): string | undefined => {
  const id = (value as { task_id?: unknown } | null | undefined)?.task_id;
  return typeof id === 'string' && id.startsWith('task_') ? id : undefined;
};

/** Ends each request's span with its status; records the CLI's span of the command that sent it. */
export const requestSpans = fp<{ tracing: Tracing }>(
  async (app, { tracing }) => {
    app.addHook('onResponse', async (request, reply) => {
      const span = request.traceSpan;
      if (!span) return;
      const status = reply.statusCode;
      span.setAttribute('http.response.status_code', status);
      if (status >= 500) span.setStatus({ code: SpanStatusCode.ERROR, message: `HTTP ${status}` });
      span.end();
      const parent = parseTraceparent(header(request, TRACEPARENT_HEADER));
      const cli = parseClientTraceState(header(request, TRACESTATE_HEADER));
      const orgId = request.actor?.orgId;
      if (!parent || !cli || !orgId) return;
      tracing.record([
        {
          org_id: orgId,
          trace_id: parent.traceId,
          span_id: parent.spanId,
          parent_span_id: null,
          task_id: (span as unknown as { attributes?: Record<string, unknown> }).attributes?.['agentctl.task_id'] as string | null,
          name: `agentctl ${cli.command.replace(/-/g, ' ')}`,
          kind: 'client',
          service: CLI_SERVICE,
          start_us: Math.min(cli.startedAtMs * 1000, Date.now() * 1000),
          end_us: Date.now() * 1000,
          status: status >= 400 ? 'error' : 'unset',
          status_message: status >= 400 ? `HTTP ${status}` : null,
          attributes: { 'http.request.method': request.method, 'http.route': request.routeOptions.url ?? '', 'http.response.status_code': status },
        },
      ]);
    });
  },
  { name: 'agentctl-request-spans' },
);

declare module 'fastify' {
  interface FastifyRequest {
    /** The request's span, while tracing is on. */
    traceSpan?: Span;
  }
}
