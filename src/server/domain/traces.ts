/**
 * Traces (README "Traces"): what the server keeps of them (tracing/span-store.ts), read per task and
 * per trace id, and the spans an agent reports with a delivery's completion.
 */
import { sql, type Kysely } from 'kysely';
import { SpanInput, type Trace, type TraceSpan } from '../../contract/traces.js';
import type { Permissions } from '../auth/policy.js';
import type { Database, Db } from '../store/db.js';
import type { SpanRecord } from '../tracing/span-store.js';
import { Tracing } from '../tracing/tracing.js';
import { missing, notFound } from './errors.js';
import { taskById } from './lookup.js';

type Executor = Kysely<Database>;

/**
 * An agent's spans of one delivery: kept with the trace (and exported over OTLP when the server
 * does), and their GenAI token counts added to the task. Spans that do not parse are dropped, not
 * refused: the completion they came with counts more.
 */
export async function recordAgentSpans(
  db: Executor,
  tracing: Tracing | undefined,
  owner: { orgId: string; taskId: string; service: string },
  spans: readonly unknown[],
): Promise<void> {
  const records: SpanRecord[] = [];
  for (const input of spans.slice(0, 1000)) {
    const parsed = SpanInput.safeParse(input);
    if (!parsed.success) continue;
    const span = parsed.data;
    records.push({
      org_id: owner.orgId,
      trace_id: span.trace_id,
      span_id: span.span_id,
      parent_span_id: span.parent_span_id,
      task_id: owner.taskId,
      name: span.name,
      kind: span.kind,
      service: owner.service,
      start_us: span.start_time_us,
      end_us: Math.max(span.start_time_us, span.end_time_us),
      status: span.status,
      status_message: span.status_message,
      attributes: span.attributes,
    });
  }
  tracing?.record(records);
  const tokens = Tracing.tokens(records);
  if (tokens.input > 0 || tokens.output > 0) {
    await sql`UPDATE tasks SET input_tokens = input_tokens + ${tokens.input}, output_tokens = output_tokens + ${tokens.output} WHERE id = ${owner.taskId}`.execute(
      db,
    );
  }
}

/** The agent (`namespace/name`) of a task: the service its spans are shown under. */
export async function agentServiceOf(db: Executor, taskId: string): Promise<string> {
  const row = await db
    .selectFrom('tasks')
    .innerJoin('agents', 'agents.id', 'tasks.agent_id')
    .innerJoin('namespaces', 'namespaces.id', 'agents.namespace_id')
    .select(['agents.name', 'namespaces.slug'])
    .where('tasks.id', '=', taskId)
    .executeTakeFirst();
  return row ? `${row.slug}/${row.name}` : 'agent';
}

interface SpanRow {
  trace_id: string;
  span_id: string;
  parent_span_id: string | null;
  task_id: string | null;
  name: string;
  kind: string;
  service: string;
  start_us: string | number;
  end_us: string | number;
  status: string;
  status_message: string | null;
  attributes: unknown;
}

/** `GET /tasks/{id}/traces`: the kept traces of the task, oldest first; `turn` picks one (1 = first, -1 = last). */
export async function taskTraces(db: Db, perms: Permissions, taskId: string, turn?: number): Promise<{ traces: Trace[] }> {
  await taskById(db, perms, 'read', taskId);
  const rows = await sql<SpanRow>`
    SELECT trace_id, span_id, parent_span_id, task_id, name, kind, service, start_us, end_us, status, status_message, attributes
    FROM trace_spans
    WHERE org_id = ${perms.actor.orgId}
      AND trace_id IN (SELECT DISTINCT trace_id FROM trace_spans WHERE task_id = ${taskId} AND org_id = ${perms.actor.orgId})
    ORDER BY start_us, id`.execute(db);
  const traces = groupTraces(rows.rows, taskId);
  if (turn === undefined || turn === 0) return { traces };
  const picked = turn > 0 ? traces[turn - 1] : traces[traces.length + turn];
  if (!picked) throw missing(`Task ${taskId} has no turn ${turn}: the server keeps ${traces.length} of its traces`);
  return { traces: [picked] };
}

/** `GET /traces/{id}`: one trace of the caller's org; one that concerns a task the caller may not read is not found. */
export async function traceById(db: Db, perms: Permissions, traceId: string): Promise<Trace> {
  const rows = await sql<SpanRow>`
    SELECT trace_id, span_id, parent_span_id, task_id, name, kind, service, start_us, end_us, status, status_message, attributes
    FROM trace_spans WHERE trace_id = ${traceId} AND org_id = ${perms.actor.orgId} ORDER BY start_us, id`.execute(db);
  const [trace] = groupTraces(rows.rows);
  if (!trace) throw notFound(`Trace ${traceId}`);
  const tasks = new Set(rows.rows.map((r) => r.task_id).filter((id): id is string => id !== null));
  for (const taskId of tasks) {
    try {
      await taskById(db, perms, 'read', taskId);
    } catch {
      throw notFound(`Trace ${traceId}`);
    }
  }
  return trace;
}

function groupTraces(rows: SpanRow[], taskId?: string): Trace[] {
  const byTrace = new Map<string, Map<string, TraceSpan>>();
  for (const row of rows) {
    let spans = byTrace.get(row.trace_id);
    if (!spans) byTrace.set(row.trace_id, (spans = new Map()));
    const start = Number(row.start_us);
    const end = Number(row.end_us);
    const seen = spans.get(row.span_id);
    // A CLI command's span is recorded by each of its requests: one span, from the first start to the last end.
    if (seen) {
      seen.start_time_us = Math.min(seen.start_time_us, start);
      seen.end_time_us = Math.max(seen.end_time_us, end);
      seen.start_time = new Date(seen.start_time_us / 1000).toISOString();
      seen.duration_ms = (seen.end_time_us - seen.start_time_us) / 1000;
      seen.task_id ??= row.task_id;
      if (row.status === 'error') seen.status = 'error';
      continue;
    }
    spans.set(row.span_id, {
      trace_id: row.trace_id,
      span_id: row.span_id,
      parent_span_id: row.parent_span_id,
      name: row.name,
      kind: row.kind as TraceSpan['kind'],
      service: row.service,
      task_id: row.task_id,
      start_time: new Date(start / 1000).toISOString(),
      start_time_us: start,
      end_time_us: end,
      duration_ms: (end - start) / 1000,
      status: row.status as TraceSpan['status'],
      status_message: row.status_message,
      attributes: (typeof row.attributes === 'string' ? JSON.parse(row.attributes) : row.attributes) as TraceSpan['attributes'],
    });
  }
  const traces: Trace[] = [];
  for (const [traceId, spanMap] of byTrace) {
    const spans = [...spanMap.values()].sort((a, b) => a.start_time_us - b.start_time_us);
    const start = Math.min(...spans.map((s) => s.start_time_us));
    const end = Math.max(...spans.map((s) => s.end_time_us));
    traces.push({
      trace_id: traceId,
      task_id: taskId ?? spans.find((s) => s.task_id)?.task_id ?? null,
      start_time: new Date(start / 1000).toISOString(),
      duration_ms: (end - start) / 1000,
      spans,
    });
  }
  return traces.sort((a, b) => a.start_time.localeCompare(b.start_time));
}
