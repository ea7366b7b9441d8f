/**
 * A rehearsal's report (README "Versions and migration"): per task, the original's recorded
 * outcome next to its shadow's, event by event. Messages are matched to the delivery whose handler
 * wrote them (one delivery of a task runs at a time, so a message belongs to the first delivery that
 * finished at or after it was written), so the original is compared fairly even when its events
 * arrived faster than they were handled.
 */
import { sql, type Kysely } from 'kysely';
import type { Content, MessageContent } from '../../contract/conversation.js';
import type { MessageDifference, Regression, RehearsalTask, RehearsedEvent, StateDifference } from '../../contract/rehearsals.js';
import type { Database } from '../store/db.js';

type Executor = Kysely<Database>;

export interface RehearsalRow {
  id: string;
  from_sequence: number | null;
  max_events: number;
}

export interface RehearsalTaskRow {
  task_id: string;
  task_name: string | null;
  agent_id: string;
  shadow_task_id: string | null;
  status: 'running' | 'done';
  event_ids: string[];
  shadow_event_ids: string[];
  timed_out: number[];
  events_total: number;
  skipped_reason: string | null;
  /** The files the shadow started from: how many (0: none) and their archive's checksum; null count on rehearsals from before these were kept. */
  start_files_count: number | null;
  start_archive_checksum: string | null;
}

interface DeliveryRow {
  id: string;
  method: string;
  event_id: string | null;
  status: string;
  created_at: Date;
  updated_at: Date;
}
interface MessageRow {
  content: MessageContent;
  created_at: Date;
}

/** What one task's deliveries did: per delivery (keyed by its event id, or `create`), the messages it wrote and how long it took. */
interface Slot {
  messages: MessageContent[];
  handlerError: string | null;
  latencyMs: number | null;
  status: string;
}

async function slotsOf(db: Executor, taskId: string): Promise<Map<string, Slot>> {
  const [deliveries, messages] = await Promise.all([
    sql<DeliveryRow>`
      SELECT id::text AS id, method, event_id, status, created_at, updated_at FROM deliveries
      WHERE task_id = ${taskId} AND method IN ('task/create', 'event/send') ORDER BY deliveries.id`.execute(db),
    sql<MessageRow>`SELECT content, created_at FROM messages WHERE task_id = ${taskId} AND author = 'agent' ORDER BY sequence_id`.execute(db),
  ]);
  const slots = new Map<string, Slot>();
  const order: { key: string; finishedAt: number | null }[] = [];
  let previousDone = 0;
  for (const d of deliveries.rows) {
    const key = d.method === 'task/create' ? 'create' : (d.event_id ?? d.id);
    const finished = d.status === 'done' ? new Date(d.updated_at).getTime() : null;
    const startedAt = Math.max(new Date(d.created_at).getTime(), previousDone);
    slots.set(key, { messages: [], handlerError: null, latencyMs: finished === null ? null : Math.max(0, finished - startedAt), status: d.status });
    order.push({ key, finishedAt: finished });
    if (finished !== null) previousDone = finished;
  }
  for (const m of messages.rows) {
    const at = new Date(m.created_at).getTime();
    // The first delivery that finished at or after the message; else the one still running (the last).
    const owner = order.find((o) => o.finishedAt !== null && o.finishedAt >= at) ?? order.find((o) => o.finishedAt === null) ?? order.at(-1);
    if (!owner) continue;
    const slot = slots.get(owner.key)!;
    const failure = handlerErrorOf(m.content);
    if (failure !== null) slot.handlerError ??= failure;
    else slot.messages.push(m.content);
  }
  return slots;
}

function handlerErrorOf(content: MessageContent): string | null {
  if (content.type !== 'data') return null;
  const error = (content.data as { handler_error?: { message?: unknown; handler?: unknown } }).handler_error;
  if (!error || typeof error !== 'object') return null;
  return `${String(error.handler ?? 'handler')} threw: ${String(error.message ?? '')}`;
}

/** JSON with object keys sorted: two values compare equal when this is. */
export function stableJson(value: unknown): string {
  return JSON.stringify(value, (_key, v) =>
    v && typeof v === 'object' && !Array.isArray(v)
      ? Object.fromEntries(
          Object.keys(v)
            .sort()
            .map((k) => [k, (v as Record<string, unknown>)[k]]),
        )
      : v,
  );
}

/** A line diff (longest common subsequence): `- ` only in `a`, `+ ` only in `b`, `  ` in both. */
export function lineDiff(a: string, b: string): string[] {
  const x = a.split('\n');
  const y = b.split('\n');
  // Long texts: too big for the table; say what changed at the ends.
  if (x.length * y.length > 250_000) return [...x.map((l) => `- ${l}`), ...y.map((l) => `+ ${l}`)];
  const lcs: number[][] = Array.from({ length: x.length + 1 }, () => new Array<number>(y.length + 1).fill(0));
  for (let i = x.length - 1; i >= 0; i--)
    for (let j = y.length - 1; j >= 0; j--) lcs[i][j] = x[i] === y[j] ? lcs[i + 1][j + 1] + 1 : Math.max(lcs[i + 1][j], lcs[i][j + 1]);
  const out: string[] = [];
  let i = 0;
  let j = 0;
  while (i < x.length && j < y.length) {
    if (x[i] === y[j]) {
      out.push(`  ${x[i]}`);
      i++;
      j++;
    } else if (lcs[i + 1][j] >= lcs[i][j + 1]) out.push(`- ${x[i++]}`);
    else out.push(`+ ${y[j++]}`);
  }
  while (i < x.length) out.push(`- ${x[i++]}`);
  while (j < y.length) out.push(`+ ${y[j++]}`);
  return out;
}

/** Message by message: text parts as a line diff, structured parts (data, tool_request, ...) compared as JSON. */
export function messageDifferences(original: MessageContent[], rehearsal: MessageContent[]): MessageDifference[] {
  const out: MessageDifference[] = [];
  for (let index = 0; index < Math.max(original.length, rehearsal.length); index++) {
    const a = original[index] ?? null;
    const b = rehearsal[index] ?? null;
    if (a && b && stableJson(a) === stableJson(b)) continue;
    out.push({ index, original: a, rehearsal: b, text_diff: a?.type === 'text' && b?.type === 'text' ? lineDiff(a.text, b.text) : null });
  }
  return out;
}

/** Where two JSON values differ, by path (`$.items[2].price`); arrays compare whole unless of one length. */
export function jsonDifferences(a: unknown, b: unknown, path = '$'): StateDifference[] {
  if (stableJson(a) === stableJson(b)) return [];
  const isObject = (v: unknown): v is Record<string, unknown> => v !== null && typeof v === 'object' && !Array.isArray(v);
  if (isObject(a) && isObject(b)) {
    const keys = [...new Set([...Object.keys(a), ...Object.keys(b)])].sort();
    return keys.flatMap((k) => jsonDifferences(a[k], b[k], `${path}.${k}`));
  }
  if (Array.isArray(a) && Array.isArray(b) && a.length === b.length) return a.flatMap((v, i) => jsonDifferences(v, b[i], `${path}[${i}]`));
  return [{ path, original: a ?? null, rehearsal: b ?? null }];
}

function summary(content: Content | undefined): string {
  if (!content) return '(event not found)';
  const text = content.type === 'text' ? content.text : stableJson(content.data);
  const line = text.replace(/\s+/g, ' ').trim();
  return line.length > 60 ? `${line.slice(0, 57)}...` : line;
}

/** The files a shadow started from, for the report's start line. */
function filesAtStart(rt: RehearsalTaskRow, when: string): string {
  if (rt.start_files_count === null) return 'a copy of its files as they were when the rehearsal started (earlier file contents were not recorded then)';
  if (rt.start_files_count === 0) return `no files (it had none ${when})`;
  const count = rt.start_files_count === 1 ? '1 file' : `${rt.start_files_count} files`;
  return `a copy of its files as they were ${when} (${count}, archive ${rt.start_archive_checksum})`;
}

/** One task of a rehearsal, as far as it has got. */
export async function taskReport(db: Executor, rehearsal: RehearsalRow, rt: RehearsalTaskRow): Promise<RehearsalTask> {
  const fromStart = rehearsal.from_sequence === null;
  const start = fromStart
    ? `from its creation: no state, the task’s params (onCreate runs), ${filesAtStart(rt, 'when it was created')}`
    : `from sequence ${rehearsal.from_sequence}: the task’s state as it was before sequence ${rehearsal.from_sequence} (its last write before it; none if it had none yet), ${filesAtStart(rt, `before sequence ${rehearsal.from_sequence}`)}`;
  const truncated =
    rt.events_total > rt.event_ids.length
      ? `The task has ${rt.events_total} events${fromStart ? '' : ` from sequence ${rehearsal.from_sequence}`}; the first ${rt.event_ids.length} were replayed (max_events ${rehearsal.max_events}).`
      : null;
  const base = {
    task_id: rt.task_id,
    task_name: rt.task_name,
    shadow_task_id: rt.shadow_task_id,
    status: rt.status,
    start,
    events_total: rt.events_total,
    events_planned: rt.skipped_reason ? 0 : rt.event_ids.length,
    truncated,
    skipped: rt.skipped_reason,
  };
  if (rt.skipped_reason || !rt.shadow_task_id) return { ...base, events_replayed: 0, events: [], state_diff: [], regressions: [] };

  const [originalSlots, shadowSlots, events, states] = await Promise.all([
    slotsOf(db, rt.task_id),
    slotsOf(db, rt.shadow_task_id),
    rt.event_ids.length
      ? db.selectFrom('events').select(['id', 'sequence_id', 'content']).where('id', 'in', rt.event_ids).execute()
      : Promise.resolve([] as { id: string; sequence_id: number; content: unknown }[]),
    db.selectFrom('states').select(['task_id', 'state']).where('task_id', 'in', [rt.task_id, rt.shadow_task_id]).where('agent_id', '=', rt.agent_id).execute(),
  ]);
  const eventById = new Map(events.map((e) => [e.id, e]));
  const timedOut = new Set(rt.timed_out);
  const rows: RehearsedEvent[] = [];
  const regressions: Regression[] = [];
  const positions: { position: number; originalKey: string; shadowKey: string | undefined; eventId: string | null }[] = [];
  if (fromStart) positions.push({ position: 0, originalKey: 'create', shadowKey: 'create', eventId: null });
  for (const [i, id] of rt.event_ids.entries()) positions.push({ position: i + 1, originalKey: id, shadowKey: rt.shadow_event_ids[i], eventId: id });
  let replayed = 0;
  for (const p of positions) {
    const original = originalSlots.get(p.originalKey);
    const shadow = p.shadowKey === undefined ? undefined : shadowSlots.get(p.shadowKey);
    if (p.shadowKey === undefined || !shadow) continue; // not delivered yet
    const isTimedOut = timedOut.has(p.position);
    const finished = shadow.status === 'done' || shadow.status === 'failed' || isTimedOut;
    if (!finished) continue;
    if (p.eventId) replayed++;
    const event = p.eventId ? eventById.get(p.eventId) : undefined;
    const row: RehearsedEvent = {
      position: p.position,
      event_id: p.eventId,
      sequence_id: event ? Number(event.sequence_id) : null,
      summary: p.eventId ? summary(event?.content as Content | undefined) : 'task created (onCreate)',
      original: { latency_ms: original?.latencyMs ?? null, handler_error: original?.handlerError ?? null },
      rehearsal: { latency_ms: isTimedOut ? null : shadow.latencyMs, handler_error: shadow.handlerError, timed_out: isTimedOut },
      differences: messageDifferences(original?.messages ?? [], shadow.messages),
    };
    rows.push(row);
    const what = p.eventId ? `event ${p.position} (${p.eventId}, "${row.summary}")` : 'the task’s creation';
    if (isTimedOut) regressions.push({ kind: 'timeout', position: p.position, event_id: p.eventId, detail: `${what} did not finish within the event timeout` });
    else if (shadow.handlerError && !original?.handlerError)
      regressions.push({ kind: 'handler_error', position: p.position, event_id: p.eventId, detail: `${what}: ${shadow.handlerError}` });
    else if (shadow.status === 'failed')
      regressions.push({ kind: 'failed', position: p.position, event_id: p.eventId, detail: `${what} could not be delivered to the target` });
  }
  const stateOf = (taskId: string) => states.find((s) => s.task_id === taskId)?.state ?? null;
  const state_diff = jsonDifferences(stateOf(rt.task_id), stateOf(rt.shadow_task_id));
  return { ...base, events_replayed: replayed, events: rows, state_diff, regressions };
}
