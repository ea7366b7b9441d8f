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

/**
 * `GET /tasks/{id}/traces`: the kept traces of the task, oldest first; `turn` picks one (1 = first,
 * -1 = last), `limit` the last N. The task's traces are listed first (ids and starts only), then the
 * spans of those picked: a task of 10,000 turns is not read whole for its last ten.
 */
export async function taskTraces(
  db: Db,
  perms: Permissions,
  taskId: string,
  pick: { turn?: number; limit?: number } = {},
): Promise<{ traces: Trace[]; total: number }> {
  await taskById(db, perms, 'read', taskId);
  const orgId = perms.actor.orgId;
  // A trace's place is its first span's start (any span of it, the CLI's too), as groupTraces orders them.
  const listed = await sql<{ trace_id: string }>`
    SELECT trace_id FROM trace_spans
    WHERE org_id = ${orgId} AND trace_id IN (SELECT DISTINCT trace_id FROM trace_spans WHERE task_id = ${taskId} AND org_id = ${orgId})
    GROUP BY trace_id
    ORDER BY min(start_us), trace_id`.execute(db);
  const ids = listed.rows.map((r) => r.trace_id);
  const total = ids.length;
  let picked = ids;
  const { turn, limit } = pick;
  if (turn !== undefined && turn !== 0) {
    const one = turn > 0 ? ids[turn - 1] : ids[total + turn];
    if (!one) throw missing(`Task ${taskId} has no turn ${turn}: the server keeps ${total} of its traces`);
    picked = [one];
  }
  if (limit !== undefined) picked = picked.slice(-limit);
  if (picked.length === 0) return { traces: [], total };
  const rows = await sql<SpanRow>`
    SELECT trace_id, span_id, parent_span_id, task_id, name, kind, service, start_us, end_us, status, status_message, attributes
    FROM trace_spans
    WHERE org_id = ${orgId} AND trace_id IN (${sql.join(picked)})
    ORDER BY start_us, id`.execute(db);
  const byId = new Map(groupTraces(rows.rows, taskId).map((t) => [t.trace_id, t]));
  // Spans pruned between the two reads: that trace is gone.
  return { traces: picked.flatMap((id) => byId.get(id) ?? []), total };
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
