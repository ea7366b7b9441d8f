import { sql, type Kysely, type RawBuilder, type Selectable } from 'kysely';
import { isTerminalTask, TERMINAL_TASK_STATUSES } from '../../contract/lifecycle.js';
import {
  type Content,
  type MessageContent,
  type Event,
  type Message,
  type MessageDelta,
  type StreamRecord,
  type StreamRecordKind,
  type Tracker,
  STREAMED_FIELDS,
} from '../../contract/conversation.js';
import { MESSAGE_DELTA_MAX, MESSAGE_TEXT_MAX } from '../../contract/enums.js';
import type { Task } from '../../contract/resources.js';
import type { Database, Db, EventsTable, MessagesTable, TrackersTable } from '../store/db.js';
import { newId } from '../store/ids.js';
import { iso, toTask } from '../store/mappers.js';
import { revertFailedMigration } from './migration-hooks.js';
import { type DomainError, conflict, invalid, isNotFound, notFound, named, tooLarge } from './errors.js';
import type { Permissions } from '../auth/policy.js';
import { inCallerOrg, taskById } from './lookup.js';
import {
  DELIVERY_CHANNEL,
  deliveryCommitted,
  insertClaim,
  insertEventDeliveries,
  insertEventDeliveryValues,
  wakeDispatchers,
  type RunGrant,
} from '../store/outbox.js';
import { statusList } from '../store/sql.js';
import { notifyAfterCommit, notifyOnCommit } from '../store/notifier.js';
import { statementShapes } from '../store/prepared.js';
import { admitEvent, deliverEvent } from './turns.js';

type Trx = Kysely<Database>;

/** The channel every writer NOTIFYs (payload: `taskNotice`'s) and every stream hub LISTENs on. */
export const TASK_CHANNEL = 'agentctl_task';

/**
 * The NOTIFY of a committed stream record: its task id and sequence number ("task_x 42"), so a hub
 * that already holds the record (a write in its own process handed it over) reads nothing.
 */
const taskNotice = (taskId: string, sequenceId: number | string) => `${taskId} ${sequenceId}`;

/** A TASK_CHANNEL payload; a bare task id (no sequence number) means "something changed". */
export function parseTaskNotice(payload: string): { taskId: string; sequenceId?: number } {
  const [taskId = '', sequence] = payload.split(' ');
  const sequenceId = Number(sequence);
  return Number.isSafeInteger(sequenceId) && sequence !== undefined ? { taskId, sequenceId } : { taskId };
}

type CommittedListener = (taskId: string, record: StreamRecord) => void;
const committedListeners = new WeakMap<Db, Set<CommittedListener>>();

/**
 * Calls `listener` with each stream record a one-statement write on `db` committed in this process,
 * as the statement RETURNed it (the stored record, byte for byte): this process's stream hubs hand it
 * to their watchers with no NOTIFY round trip and no re-read. Other processes learn from the NOTIFY.
 * Returns the function that stops it.
 */
export function onCommitted(db: Db, listener: CommittedListener): () => void {
  let listeners = committedListeners.get(db);
  if (!listeners) committedListeners.set(db, (listeners = new Set()));
  listeners.add(listener);
  return () => listeners.delete(listener);
}

const writesInFlight = new WeakMap<Db, Set<Promise<unknown>>>();

/**
 * Runs a one-statement write on `db`, counted in flight until it settled: until it handed its
 * committed record to the `onCommitted` listeners, or wrote nothing, or failed.
 */
async function inFlight<T>(db: Db, write: () => Promise<T>): Promise<T> {
  let writes = writesInFlight.get(db);
  if (!writes) writesInFlight.set(db, (writes = new Set()));
  const writing = write();
  writes.add(writing);
  try {
    return await writing;
  } finally {
    writes.delete(writing);
  }
}

/**
 * Settles once every one-statement write on `db` in flight now has settled; undefined when none is.
 * A stream hub told of a record (NOTIFY) while one is in flight waits for it: when the record is
 * that write's, it arrives through `onCommitted`, and reading it from the table would be a second
 * round trip for nothing.
 */
export function writesSettled(db: Db): Promise<unknown> | undefined {
  const writes = writesInFlight.get(db);
  return writes?.size ? Promise.allSettled(writes) : undefined;
}

function committed(db: Db, taskId: string, kind: StreamRecordKind, sequenceId: number, record: unknown): void {
  const listeners = committedListeners.get(db);
  if (!listeners?.size) return;
  const streamRecord = { kind, sequence_id: sequenceId, data: record } as StreamRecord;
  for (const listener of listeners) listener(taskId, streamRecord);
}

// ---- mappers ------------------------------------------------------------------------------------

export const toEvent = (r: Selectable<EventsTable>): Event => ({
  id: r.id,
  task_id: r.task_id,
  agent_id: r.agent_id,
  sequence_id: Number(r.sequence_id),
  content: r.content as Content,
  created_at: iso(r.created_at)!,
});

export const toMessage = (r: Selectable<MessagesTable>): Message => ({
  id: r.id,
  task_id: r.task_id,
  author: r.author as Message['author'],
  content: r.content as MessageContent,
  streaming_status: r.streaming_status as Message['streaming_status'],
  streaming_error: r.streaming_error,
  sequence_id: Number(r.sequence_id),
  updated_sequence_id: Number(r.updated_sequence_id),
  created_at: iso(r.created_at)!,
  updated_at: iso(r.updated_at)!,
});

export const toTracker = (r: Selectable<TrackersTable>): Tracker => ({
  id: r.id,
  task_id: r.task_id,
  agent_id: r.agent_id,
  status: r.status,
  status_message: r.status_message,
  progress: r.progress == null ? null : Number(r.progress),
  last_processed_event_id: r.last_processed_event_id,
  created_at: iso(r.created_at)!,
  updated_at: iso(r.updated_at)!,
});

// ---- the per-task order -------------------------------------------------------------------------

/**
 * Takes the task's next sequence number. The UPDATE row-locks the task until the transaction ends,
 * so writers of one task commit in sequence order and a reader never sees a gap filled later.
 */
export async function nextSequence(trx: Trx, taskId: string, refuseTerminal: boolean): Promise<number> {
  const row = await trx
    .updateTable('tasks')
    .set({ last_sequence_id: sql`last_sequence_id + 1` })
    .where('id', '=', taskId)
    .returning(['last_sequence_id', 'status', 'name'])
    .executeTakeFirst();
  if (!row) throw notFound('Task', taskId);
  if (refuseTerminal && isTerminalTask(row.status))
    throw conflict('task_terminal', `Task ${named(row.name, taskId)} is ${row.status}; a finished task takes no new events or messages`);
  return Number(row.last_sequence_id);
}

/** Appends one record to the task's stream and tells the stream hubs (a NOTIFY at commit). */
export async function appendToStream(trx: Trx, taskId: string, sequenceId: number, kind: StreamRecordKind, record: unknown): Promise<void> {
  await trx
    .insertInto('task_stream')
    .values({ task_id: taskId, sequence_id: sequenceId, kind, record: JSON.stringify(record) })
    .execute();
  await notifyOnCommit(trx, TASK_CHANNEL, taskNotice(taskId, sequenceId));
}

/**
 * Records the current state of each task as a `task` stream record with its own sequence number.
 * Every change of a task's status goes through here, in the transaction that made it (cancel,
 * update, delete, agent delete, branch retire, and the dispatcher when it fails a task).
 */
export async function recordTaskChange(trx: Trx, taskIds: readonly string[]): Promise<void> {
  // Sorted: concurrent callers lock task rows in one order.
  for (const taskId of [...new Set(taskIds)].sort()) {
    const sequenceId = await nextSequence(trx, taskId, false);
    const row = await trx.selectFrom('tasks').selectAll().where('id', '=', taskId).executeTakeFirstOrThrow();
    await appendToStream(trx, taskId, sequenceId, 'task', toTask(row));
  }
}

/** The task as the contract's Task, with no access check: for in-process callers (the dispatcher). */
export async function readTask(db: Db | Trx, taskId: string): Promise<Task | undefined> {
  const row = await db.selectFrom('tasks').selectAll().where('id', '=', taskId).executeTakeFirst();
  return row ? toTask(row) : undefined;
}

/** Creates a task's tracker for its agent; called by createTask in the task's transaction. */
export async function createTracker(trx: Trx, taskId: string, agentId: string): Promise<void> {
  await trx
    .insertInto('trackers')
    .values({ id: newId('tracker'), task_id: taskId, agent_id: agentId, created_at: new Date(), updated_at: new Date() })
    .execute();
}

// ---- one-statement writes ----------------------------------------------------------------------

/*
 * The common writes (an event, a message, a delta) go as one data-modifying statement, committed on
 * its own: no BEGIN/COMMIT round trips, and the task's row is locked only while that statement runs.
 * Its first CTE takes the task's next sequence number (UPDATE ... RETURNING, which locks the row as
 * nextSequence does), so the order per task is the same as the transactional path's. It writes
 * nothing unless every condition of the common case holds (the task is the caller's to run, is live,
 * ...); when one does not, the caller runs the transactional path, which decides and explains (404,
 * 403, 409). So each rule has one home, the transactional path, and the statement only narrows it.
 */

/** `tasks` rows the caller may `run` (taskById's check, as SQL: its org, and an agent it holds `run` on). */
export function runnableTask(perms: Permissions) {
  const visible = perms.visible('agent', 'run');
  const org = sql`tasks.namespace_id IN (SELECT id FROM namespaces WHERE org_id = ${perms.actor.orgId})`;
  if (visible.all) return org;
  return sql`${org} AND (tasks.agent_id = ANY(${visible.ids}) OR tasks.namespace_id = ANY(${visible.namespaceIds}))`;
}

/**
 * `runnableTask`'s form for a statement shape (store/prepared.ts StatementShapes): which of its two
 * texts the caller gets, and its parameters in order.
 */
export function runnableTaskShape(perms: Permissions): { shape: string; values: unknown[] } {
  const visible = perms.visible('agent', 'run');
  return visible.all ? { shape: 'all', values: [perms.actor.orgId] } : { shape: 'some', values: [perms.actor.orgId, visible.ids, visible.namespaceIds] };
}

/** The rule of `runnableTask` as data, for a statement that checks several callers' rows (the dispatcher's settle batch). */
export function runGrant(perms: Permissions): RunGrant {
  const visible = perms.visible('agent', 'run');
  return { orgId: perms.actor.orgId, all: visible.all, agentIds: visible.all ? [] : visible.ids, namespaceIds: visible.all ? [] : visible.namespaceIds };
}

/** `runnableTask` over grants in columns: `org_id` text, `every` boolean, `agent_ids` and `namespace_ids` jsonb arrays. */
export function runnableTaskByGrant(grant: string) {
  const g = sql.ref(grant);
  return sql`tasks.namespace_id IN (SELECT id FROM namespaces WHERE org_id = ${g}.org_id)
    AND (${g}.every OR tasks.agent_id IN (SELECT jsonb_array_elements_text(${g}.agent_ids)) OR tasks.namespace_id IN (SELECT jsonb_array_elements_text(${g}.namespace_ids)))`;
}

/** The first CTE of a one-statement write: the next sequence number of a live task the caller may run. */
function takeSequence(perms: Permissions, taskId: RawBuilder<unknown>, also: RawBuilder<unknown> = sql`true`, returning: RawBuilder<unknown> = sql``) {
  return sql`UPDATE tasks SET last_sequence_id = tasks.last_sequence_id + 1
    WHERE tasks.id = ${taskId} AND ${runnableTask(perms)} AND tasks.status NOT IN (${statusList(TERMINAL_TASK_STATUSES)}) AND ${also}
    RETURNING tasks.id, tasks.agent_id, tasks.last_sequence_id${returning}`;
}

// ---- events -------------------------------------------------------------------------------------

/**
 * `POST /tasks/{id}/events`: needs `run` on the task's agent; a terminal task refuses (409), and so
 * does a busy one whose version's double-texting policy is `reject` (409 task_busy).
 */
export async function createEvent(db: Db, perms: Permissions, taskId: string, content: Content): Promise<Event> {
  return (
    (await inFlight(db, () => appendEventAlone(db, perms, taskId, content))) ?? db.transaction().execute((trx) => insertEvent(trx, perms, taskId, content))
  );
}

/**
 * The task's version's policy is `enqueue`. A scalar lookup by id, not EXISTS: as a semi-join the
 * cached plan (PGlite keeps no table statistics) read every version on every event.
 */
const enqueues = sql`(SELECT v.double_texting FROM versions v WHERE v.id = tasks.current_version_id) = 'enqueue'`;

/**
 * An event to a task whose version's policy is `enqueue` (the default), in one statement: sequence
 * number, event, stream record and its turn delivery; both NOTIFYs after it (store/notifier.ts).
 * Undefined when it wrote nothing (not the common case: see above).
 */
async function appendEventAlone(db: Db, perms: Permissions, taskId: string, content: Content): Promise<Event | undefined> {
  const id = newId('event');
  const createdAt = new Date();
  const partial = { id, task_id: taskId, content, created_at: createdAt.toISOString() };
  // A dispatcher here with room claims the delivery in this statement when nothing of the task is
  // open before it (outbox.ts InsertClaim): sent right after the commit, no claim round trip.
  const claim = await insertClaim(db, taskId);
  const grant = runnableTaskShape(perms);
  const contentJson = JSON.stringify(content);
  const partialJson = JSON.stringify(partial);
  // In the order of the text below.
  const values = [
    taskId,
    ...grant.values,
    id,
    contentJson,
    createdAt,
    partialJson,
    ...(claim ? claim.values : []),
    ...insertEventDeliveryValues(taskId, claim),
  ];
  let claimed: unknown;
  try {
    const result = await statementShapes.execute(
      db,
      `event ${grant.shape} ${claim ? `claim ${claim.shape}` : 'unclaimed'}`,
      values,
      () =>
        sql<{ agent_id: string; sequence_id: number; record: unknown; claimed: unknown }>`
    WITH t AS (${takeSequence(perms, sql`${taskId}`, enqueues, claim ? sql`, tasks.current_version_id, tasks.status, tasks.updated_at` : sql``)}),
    e AS (
      INSERT INTO events (id, task_id, agent_id, sequence_id, content, created_at)
      SELECT ${id}, t.id, t.agent_id, t.last_sequence_id, ${contentJson}::jsonb, ${createdAt} FROM t
      RETURNING id, task_id, agent_id, sequence_id,
        ${partialJson}::jsonb || jsonb_build_object('agent_id', agent_id, 'sequence_id', sequence_id) AS record
    ),
    s AS (INSERT INTO task_stream (task_id, sequence_id, kind, record) SELECT task_id, sequence_id, 'event', record FROM e),
    ${
      claim
        ? // The snapshot's view of the task must be the row this statement locked (on PostgreSQL a
          // statement that waited for the lock sees the deliveries as they were before it waited):
          // the task unchanged but for this sequence number, else the delivery goes in pending.
          // MATERIALIZED: read once. Inlined, its `ok` was copied into each of the delivery's five
          // CASEs, each running the claim's subqueries again (auto_explain: five of each scan); the
          // statement's round trip in bench/delivery row (1) fell 0.35-0.5 ms on both engines.
          sql`k AS MATERIALIZED (
      SELECT (seq.last_sequence_id = t.last_sequence_id + 1 AND seq.current_version_id = t.current_version_id AND seq.status = t.status
        AND seq.updated_at IS NOT DISTINCT FROM t.updated_at AND ${claim.claimable()}) AS ok, t.current_version_id AS version_id
      FROM t AS seq JOIN tasks t ON t.id = seq.id
    ),
    d AS (${insertEventDeliveries('e', taskId, { claim, cte: 'k' })})
    SELECT e.agent_id, e.sequence_id, e.record,
      (SELECT row_to_json(c) FROM (${claim.read(sql`(SELECT * FROM d WHERE d.status = 'in_flight')`)}) c) AS claimed
    FROM e`
        : sql`d AS (${insertEventDeliveries('e', taskId)})
    SELECT e.agent_id, e.sequence_id, e.record, NULL::json AS claimed FROM e`
    }`,
    );
    const row = result.rows[0];
    if (!row) return undefined;
    claimed = row.claimed ?? undefined;
    committed(db, taskId, 'event', Number(row.sequence_id), row.record);
    notifyAfterCommit(db, TASK_CHANNEL, taskNotice(taskId, row.sequence_id));
    if (!claimed) {
      notifyAfterCommit(db, DELIVERY_CHANNEL, taskId);
      // Only this task's turn came due: a claim over every task would be a heavier statement for it.
      wakeDispatchers(taskId);
      deliveryCommitted(taskId, true);
    }
    return { id, task_id: taskId, agent_id: row.agent_id, sequence_id: Number(row.sequence_id), content, created_at: partial.created_at };
  } finally {
    claim?.settle(claimed);
  }
}

/** Sends an event in the caller's transaction (`POST /tasks/{id}/events`, a schedule's tick). */
export async function insertEvent(trx: Trx, perms: Permissions, taskId: string, content: Content): Promise<Event> {
  const task = await taskById(trx, perms, 'run', taskId);
  const sequenceId = await nextSequence(trx, taskId, true);
  const policy = await admitEvent(trx, taskId);
  const row = await trx
    .insertInto('events')
    .values({
      id: newId('event'),
      task_id: taskId,
      agent_id: task.agent_id,
      sequence_id: sequenceId,
      content: JSON.stringify(content),
      created_at: new Date(),
    })
    .returningAll()
    .executeTakeFirstOrThrow();
  const event = toEvent(row);
  await appendToStream(trx, taskId, sequenceId, 'event', event);
  await deliverEvent(trx, taskId, event, policy);
  return event;
}

export interface AfterQuery {
  task_id: string;
  after_sequence_id: number;
  limit: number;
}

/** One page of a task's events or messages after a sequence_id, ascending, and whether more follow. */
async function pageAfter<T extends 'events' | 'messages'>(db: Db, perms: Permissions, table: T, q: AfterQuery) {
  await taskById(db, perms, 'run', q.task_id);
  const rows = await db
    .selectFrom(table as 'events')
    .selectAll()
    .where('task_id', '=', q.task_id)
    .where('sequence_id', '>', q.after_sequence_id)
    .orderBy('sequence_id')
    .limit(q.limit + 1)
    .execute();
  return { rows: rows.slice(0, q.limit) as Selectable<T extends 'events' ? EventsTable : MessagesTable>[], has_more: rows.length > q.limit };
}

export async function listEvents(db: Db, perms: Permissions, q: AfterQuery): Promise<{ events: Event[]; has_more: boolean }> {
  const { rows, has_more } = await pageAfter(db, perms, 'events', q);
  return { events: rows.map(toEvent), has_more };
}

export async function getEvent(db: Db, perms: Permissions, eventId: string): Promise<Event> {
  const row = await db.selectFrom('events').selectAll().where('id', '=', eventId).executeTakeFirst();
  if (!row) throw notFound('Event', eventId);
  await taskById(db, perms, 'run', row.task_id).catch(hideAs(notFound('Event', eventId)));
  return toEvent(row);
}

/** A 404 about the task would name it: answer about the record asked for instead. */
const hideAs = (replacement: DomainError) => (error: unknown) => {
  throw isNotFound(error) ? replacement : error;
};

// ---- messages -----------------------------------------------------------------------------------

export interface NewMessage {
  task_id: string;
  content: MessageContent;
  author: Message['author'];
  streaming_status: Message['streaming_status'];
}

/** `POST /messages`: needs `run` on the task's agent; a terminal task refuses (409). */
export async function createMessage(db: Db, perms: Permissions, input: NewMessage): Promise<Message> {
  return (
    (await inFlight(db, () => insertMessageAlone(db, perms, input))) ??
    db.transaction().execute(async (trx) => {
      await taskById(trx, perms, 'run', input.task_id).catch(hideAs(notFound('Task', input.task_id)));
      return insertMessage(trx, input);
    })
  );
}

/** A message in one statement (sequence number, message, stream record; the NOTIFY after it); undefined when it wrote nothing. */
async function insertMessageAlone(db: Db, perms: Permissions, input: NewMessage): Promise<Message | undefined> {
  const id = newId('message');
  const now = new Date();
  const at = now.toISOString();
  const partial = { id, task_id: input.task_id, author: input.author, content: input.content, streaming_status: input.streaming_status, streaming_error: null };
  const grant = runnableTaskShape(perms);
  const contentJson = JSON.stringify(input.content);
  const recordJson = JSON.stringify({ ...partial, created_at: at, updated_at: at });
  // In the order of the text below.
  const values = [input.task_id, ...grant.values, id, input.author, contentJson, input.streaming_status, now, now, recordJson];
  const result = await statementShapes.execute(
    db,
    `message ${grant.shape}`,
    values,
    () =>
      sql<{ sequence_id: number; record: unknown }>`
    WITH t AS (${takeSequence(perms, sql`${input.task_id}`)}),
    m AS (
      INSERT INTO messages (id, task_id, author, content, streaming_status, sequence_id, updated_sequence_id, created_at, updated_at)
      SELECT ${id}, t.id, ${input.author}, ${contentJson}::jsonb, ${input.streaming_status}, t.last_sequence_id, t.last_sequence_id, ${now}, ${now} FROM t
      RETURNING task_id, sequence_id,
        ${recordJson}::jsonb || jsonb_build_object('sequence_id', sequence_id, 'updated_sequence_id', sequence_id) AS record
    ),
    s AS (INSERT INTO task_stream (task_id, sequence_id, kind, record) SELECT task_id, sequence_id, 'message', record FROM m)
    SELECT m.sequence_id, m.record FROM m`,
  );
  const row = result.rows[0];
  if (!row) return undefined;
  const sequenceId = Number(row.sequence_id);
  committed(db, input.task_id, 'message', sequenceId, row.record);
  notifyAfterCommit(db, TASK_CHANNEL, taskNotice(input.task_id, sequenceId));
  return { ...partial, sequence_id: sequenceId, updated_sequence_id: sequenceId, created_at: at, updated_at: at };
}

async function insertMessage(trx: Trx, input: NewMessage): Promise<Message> {
  const sequenceId = await nextSequence(trx, input.task_id, true);
  const now = new Date();
  const row = await trx
    .insertInto('messages')
    .values({
      id: newId('message'),
      task_id: input.task_id,
      author: input.author,
      content: JSON.stringify(input.content),
      streaming_status: input.streaming_status,
      sequence_id: sequenceId,
      updated_sequence_id: sequenceId,
      created_at: now,
      updated_at: now,
    })
    .returningAll()
    .executeTakeFirstOrThrow();
  const message = toMessage(row);
  await appendToStream(trx, input.task_id, sequenceId, 'message', message);
  return message;
}

/** `PUT /messages/{id}`: replaces content and/or streaming status; the update takes a new sequence number. */
export async function updateMessage(
  db: Db,
  perms: Permissions,
  messageId: string,
  update: { content?: MessageContent; streaming_status?: Message['streaming_status']; streaming_error?: string },
): Promise<Message> {
  if (update.streaming_error !== undefined && update.streaming_status !== 'FAILED' && update.streaming_status !== 'INTERRUPTED')
    throw invalid(['body', 'streaming_error'], 'streaming_error goes with streaming_status FAILED or INTERRUPTED');
  return db.transaction().execute(async (trx) => {
    const found = await trx.selectFrom('messages').select('task_id').where('id', '=', messageId).executeTakeFirst();
    if (!found) throw notFound('Message', messageId);
    await taskById(trx, perms, 'run', found.task_id).catch(hideAs(notFound('Message', messageId)));
    const sequenceId = await nextSequence(trx, found.task_id, true);
    const row = await trx
      .updateTable('messages')
      .set({
        updated_sequence_id: sequenceId,
        updated_at: new Date(),
        ...(update.content !== undefined ? { content: JSON.stringify(update.content) } : {}),
        ...(update.streaming_status !== undefined ? { streaming_status: update.streaming_status, streaming_error: update.streaming_error ?? null } : {}),
      })
      .where('id', '=', messageId)
      .returningAll()
      .executeTakeFirstOrThrow();
    const message = toMessage(row);
    await appendToStream(trx, found.task_id, sequenceId, 'message_update', message);
    return message;
  });
}

/**
 * The tasks' messages still streaming end INTERRUPTED with `reason`: their writer is gone (its agent
 * process exited, or its delivery's lease ran out unrenewed), so no reader waits on them for ever.
 * Each is a `message_update` on the task's stream. One transaction per task, its row locked first.
 */
export async function interruptStreams(db: Db, taskIds: readonly string[], reason: string): Promise<number> {
  let ended = 0;
  for (const taskId of [...new Set(taskIds)].sort()) {
    const any = await db.selectFrom('messages').select('id').where('task_id', '=', taskId).where('streaming_status', '=', 'IN_PROGRESS').executeTakeFirst();
    if (!any) continue;
    ended += await db.transaction().execute(async (trx) => {
      await trx.selectFrom('tasks').select('id').where('id', '=', taskId).forNoKeyUpdate().execute();
      const open = await trx
        .selectFrom('messages')
        .select('id')
        .where('task_id', '=', taskId)
        .where('streaming_status', '=', 'IN_PROGRESS')
        .orderBy('sequence_id')
        .execute();
      for (const { id } of open) {
        const sequenceId = await nextSequence(trx, taskId, false);
        const row = await trx
          .updateTable('messages')
          .set({ streaming_status: 'INTERRUPTED', streaming_error: reason, updated_sequence_id: sequenceId, updated_at: new Date() })
          .where('id', '=', id)
          .returningAll()
          .executeTakeFirstOrThrow();
        await appendToStream(trx, taskId, sequenceId, 'message_update', toMessage(row));
      }
      return open.length;
    });
  }
  return ended;
}

/** The SQL that names a content's streamed field (`text`, `summary`, `arguments`) by its type; null when it has none. */
const streamedField = sql.raw(
  `(CASE content->>'type' ${Object.entries(STREAMED_FIELDS)
    .map(([type, field]) => `WHEN '${type}' THEN '${field}'`)
    .join(' ')} END)`,
);

/**
 * `POST /messages/{id}/deltas`: appends to the streamed field of an IN_PROGRESS message in one
 * statement (no read-modify-write of the content), records the delta on the task stream with its
 * offset (in code points, as PostgreSQL counts characters) and moves the message's
 * `updated_sequence_id` to it, so the record always holds what the stream has delivered so far.
 * `offset` is where the writer expects the field to end: the delta is appended only there, so a
 * retry (the same delta, already at that offset) answers its first record and writes nothing, and
 * the endpoint needs no Idempotency-Key claim.
 */
export async function appendMessageDelta(db: Db, perms: Permissions, messageId: string, delta: string, offset: number): Promise<MessageDelta> {
  const length = [...delta].length;
  if (length > MESSAGE_DELTA_MAX) throw tooLarge('delta_too_large', `A delta may be at most ${MESSAGE_DELTA_MAX} characters; this one has ${length}`);
  return (
    (await inFlight(db, () => appendDeltaAlone(db, perms, messageId, delta, offset, length))) ??
    appendDeltaInTransaction(db, perms, messageId, delta, offset, length)
  );
}

/** PostgreSQL's division_by_zero: how the one-statement delta undoes itself (below). */
const UNDO = '22012';

/**
 * A delta in one statement: sequence number, the append, the stream record (the NOTIFY after it).
 * Undefined when it wrote nothing (a retry, a wrong offset, a finished message: the transactional path answers).
 * The task's row is locked by the first CTE; should the message have changed between the
 * statement's snapshot and that lock (a concurrent writer took the offset, a PUT finished it), the
 * append finds nothing, and the statement fails on purpose (a division by zero) rather than commit
 * a sequence number without its record.
 */
async function appendDeltaAlone(
  db: Db,
  perms: Permissions,
  messageId: string,
  delta: string,
  offset: number,
  length: number,
): Promise<MessageDelta | undefined> {
  const grant = runnableTaskShape(perms);
  const takesValues = [offset, offset, length, MESSAGE_TEXT_MAX];
  // In the order of the text below.
  const values = [messageId, ...grant.values, messageId, ...takesValues, delta, messageId, ...takesValues, messageId, offset, delta];
  try {
    const result = await statementShapes.execute(db, `delta ${grant.shape}`, values, () => {
      const takes = sql`streaming_status = 'IN_PROGRESS' AND ${streamedField} IS NOT NULL
          AND char_length(coalesce(content->>${streamedField}, '')) = ${offset}::int AND ${offset}::int + ${length}::int <= ${MESSAGE_TEXT_MAX}::int`;
      return sql<{ task_id: string; sequence_id: number; record: unknown }>`
      WITH t AS (${takeSequence(
        perms,
        sql`(SELECT task_id FROM messages WHERE id = ${messageId})`,
        sql`EXISTS (SELECT 1 FROM messages WHERE id = ${messageId} AND ${takes})`,
      )}),
      u AS (
        UPDATE messages
        SET content = jsonb_set(content, ARRAY[${streamedField}], to_jsonb(coalesce(content->>${streamedField}, '') || ${delta}::text)),
            updated_sequence_id = t.last_sequence_id, updated_at = now()
        FROM t WHERE messages.id = ${messageId} AND ${takes}
        RETURNING messages.task_id, t.last_sequence_id AS sequence_id,
          jsonb_build_object('message_id', ${messageId}::text, 'task_id', messages.task_id, 'sequence_id', t.last_sequence_id,
            'offset', ${offset}::int, 'delta', ${delta}::text) AS record
      ),
      s AS (INSERT INTO task_stream (task_id, sequence_id, kind, record) SELECT task_id, sequence_id, 'message_delta', record FROM u)
      SELECT u.task_id, u.sequence_id, u.record FROM u
      UNION ALL
      SELECT t.id, t.last_sequence_id / (SELECT count(*) FROM u)::int, NULL FROM t WHERE NOT EXISTS (SELECT 1 FROM u)`;
    });
    const row = result.rows[0];
    if (!row) return undefined;
    committed(db, row.task_id, 'message_delta', Number(row.sequence_id), row.record);
    notifyAfterCommit(db, TASK_CHANNEL, taskNotice(row.task_id, row.sequence_id));
    return { message_id: messageId, task_id: row.task_id, sequence_id: Number(row.sequence_id), offset, delta };
  } catch (error) {
    if ((error as { code?: string }).code === UNDO) return undefined;
    throw error;
  }
}

/** Decides what the one statement did not do: a retry answers its first record; anything else appends, or says why not. */
async function appendDeltaInTransaction(db: Db, perms: Permissions, messageId: string, delta: string, offset: number, length: number): Promise<MessageDelta> {
  return db.transaction().execute(async (trx) => {
    const found = await trx.selectFrom('messages').select('task_id').where('id', '=', messageId).executeTakeFirst();
    if (!found) throw notFound('Message', messageId);
    await taskById(trx, perms, 'run', found.task_id).catch(hideAs(notFound('Message', messageId)));
    // Locks the task row before reading the message: every write to the task's messages takes it,
    // so the text read here is the text the append extends, and no sequence number is spent on a retry.
    await trx.selectFrom('tasks').select('id').where('id', '=', found.task_id).forNoKeyUpdate().execute();
    const message = toMessage(await trx.selectFrom('messages').selectAll().where('id', '=', messageId).executeTakeFirstOrThrow());
    const field = Object.hasOwn(STREAMED_FIELDS, message.content.type) ? STREAMED_FIELDS[message.content.type as keyof typeof STREAMED_FIELDS] : undefined;
    const text = field === undefined ? undefined : [...(((message.content as Record<string, unknown>)[field] as string | undefined) ?? '')];
    if (text !== undefined && offset < text.length && text.slice(offset, offset + length).join('') === delta) {
      const first = await deltaRecordAt(trx, found.task_id, messageId, offset);
      // Built as the first answer was (the stored jsonb has its own key order).
      if (first?.delta === delta) return { message_id: messageId, task_id: found.task_id, sequence_id: Number(first.sequence_id), offset, delta };
    }
    if (message.streaming_status !== 'IN_PROGRESS' || text === undefined) throw notStreaming(message);
    if (offset !== text.length) {
      throw conflict(
        'delta_offset_mismatch',
        `Message ${messageId} has ${text.length} characters in its ${field}; a delta at offset ${offset} ${offset < text.length ? 'would overwrite what is there' : 'would leave a gap'}`,
      );
    }
    if (offset + length > MESSAGE_TEXT_MAX) throw tooLarge('message_too_large', `Message ${messageId} would grow past ${MESSAGE_TEXT_MAX} characters`);
    const sequenceId = await nextSequence(trx, found.task_id, true);
    await sql`
      UPDATE messages
      SET content = jsonb_set(content, ARRAY[${streamedField}], to_jsonb(coalesce(content->>${streamedField}, '') || ${delta}::text)),
          updated_sequence_id = ${sequenceId}, updated_at = now()
      WHERE id = ${messageId}`.execute(trx);
    const record: MessageDelta = { message_id: messageId, task_id: found.task_id, sequence_id: sequenceId, offset, delta };
    await appendToStream(trx, found.task_id, sequenceId, 'message_delta', record);
    return record;
  });
}

/** The stream record of the message's latest delta at `offset` (a PUT that replaced the content may have made offsets repeat). */
async function deltaRecordAt(trx: Trx, taskId: string, messageId: string, offset: number): Promise<MessageDelta | undefined> {
  const row = await sql<{ record: MessageDelta }>`
    SELECT record FROM task_stream
    WHERE task_id = ${taskId} AND kind = 'message_delta' AND record->>'message_id' = ${messageId} AND (record->>'offset')::int = ${offset}::int
    ORDER BY sequence_id DESC LIMIT 1`.execute(trx);
  return row.rows[0]?.record;
}

function notStreaming(message: Message): DomainError {
  if (message.streaming_status !== 'IN_PROGRESS') {
    return conflict(
      'message_not_streaming',
      message.streaming_status === null
        ? `Message ${message.id} was not created streaming (streaming_status IN_PROGRESS); it takes no deltas`
        : `Message ${message.id} finished streaming (${message.streaming_status}); it takes no more deltas`,
    );
  }
  return conflict('message_not_streamable', `Message ${message.id} is a ${message.content.type} part; deltas extend text, reasoning and tool_request parts`);
}

export async function listMessages(db: Db, perms: Permissions, q: AfterQuery): Promise<{ messages: Message[]; has_more: boolean }> {
  const { rows, has_more } = await pageAfter(db, perms, 'messages', q);
  return { messages: rows.map(toMessage), has_more };
}

export async function getMessage(db: Db, perms: Permissions, messageId: string): Promise<Message> {
  const row = await db.selectFrom('messages').selectAll().where('id', '=', messageId).executeTakeFirst();
  if (!row) throw notFound('Message', messageId);
  await taskById(db, perms, 'run', row.task_id).catch(hideAs(notFound('Message', messageId)));
  return toMessage(row);
}

/** `POST /tasks/{id}/handler-errors`: an agent message with a DataPart `{handler_error: {...}}`. */
export async function reportHandlerError(
  db: Db,
  perms: Permissions,
  taskId: string,
  report: { handler: string; message: string; event_id: string | null },
): Promise<Message> {
  return db.transaction().execute(async (trx) => {
    await taskById(trx, perms, 'run', taskId);
    // A failed onMigrate sends the task back to the version it came from (domain/migration-hooks.ts).
    if (report.handler === 'onMigrate') await revertFailedMigration(trx, taskId, report.message);
    if (report.event_id) {
      const event = await trx.selectFrom('events').select('id').where('id', '=', report.event_id).where('task_id', '=', taskId).executeTakeFirst();
      if (!event) throw notFound('Event', report.event_id);
    }
    return insertMessage(trx, {
      task_id: taskId,
      author: 'agent',
      streaming_status: null,
      content: { type: 'data', data: { handler_error: { handler: report.handler, message: report.message, event_id: report.event_id } } },
    });
  });
}

// ---- trackers -----------------------------------------------------------------------------------

export async function listTrackers(db: Db, perms: Permissions, q: { task_id?: string; agent_id?: string }): Promise<{ trackers: Tracker[]; total: number }> {
  if (!q.task_id && !q.agent_id) throw invalid(['query', 'task_id'], 'Give task_id, agent_id or both');
  let query = db.selectFrom('trackers').selectAll();
  if (q.task_id) {
    await taskById(db, perms, 'run', q.task_id);
    query = query.where('task_id', '=', q.task_id);
  }
  if (q.agent_id) {
    const agent = await db
      .selectFrom('agents')
      .select(['agents.id', 'agents.namespace_id'])
      .where('agents.id', '=', q.agent_id)
      .where(inCallerOrg(perms, 'agents.namespace_id'))
      .executeTakeFirst();
    if (!agent) throw notFound('Agent', q.agent_id);
    perms.require('run', { type: 'agent', id: agent.id, namespaceId: agent.namespace_id }, `Agent ${q.agent_id}`);
    query = query.where('agent_id', '=', q.agent_id);
  }
  const rows = await query.orderBy('created_at').orderBy('id').limit(1000).execute();
  return { trackers: rows.map(toTracker), total: rows.length };
}

async function trackerForAccess(db: Db | Trx, perms: Permissions, trackerId: string) {
  const row = await db.selectFrom('trackers').selectAll().where('id', '=', trackerId).executeTakeFirst();
  if (!row) throw notFound('Tracker', trackerId);
  await taskById(db, perms, 'run', row.task_id).catch(hideAs(notFound('Tracker', trackerId)));
  return row;
}

export async function getTracker(db: Db, perms: Permissions, trackerId: string): Promise<Tracker> {
  return toTracker(await trackerForAccess(db, perms, trackerId));
}

export interface TrackerUpdate {
  status?: string;
  status_message?: string | null;
  progress?: number | null;
  last_processed_event_id?: string;
}

/** `PATCH /tracker/{id}`: left-out fields stay; the cursor only moves forward (409), to an event of the task (404). */
export async function updateTracker(db: Db, perms: Permissions, trackerId: string, update: TrackerUpdate): Promise<Tracker> {
  return db.transaction().execute(async (trx) => {
    const found = await trackerForAccess(trx, perms, trackerId);
    // The sequence number first: it locks the task, so concurrent cursor moves serialize.
    const sequenceId = await nextSequence(trx, found.task_id, false);
    const current = await trx.selectFrom('trackers').selectAll().where('id', '=', trackerId).executeTakeFirstOrThrow();
    if (update.last_processed_event_id !== undefined) {
      const target = await trx
        .selectFrom('events')
        .select('sequence_id')
        .where('id', '=', update.last_processed_event_id)
        .where('task_id', '=', found.task_id)
        .executeTakeFirst();
      if (!target) throw notFound('Event', update.last_processed_event_id);
      if (current.last_processed_event_id) {
        const at = await trx.selectFrom('events').select('sequence_id').where('id', '=', current.last_processed_event_id).executeTakeFirstOrThrow();
        if (Number(target.sequence_id) < Number(at.sequence_id)) {
          throw conflict(
            'cursor_backwards',
            `Tracker ${trackerId} has processed up to event ${current.last_processed_event_id}; the cursor only moves forward`,
          );
        }
      }
    }
    const row = await trx
      .updateTable('trackers')
      .set({
        updated_at: new Date(),
        ...(update.status !== undefined ? { status: update.status } : {}),
        ...(update.status_message !== undefined ? { status_message: update.status_message } : {}),
        ...(update.progress !== undefined ? { progress: update.progress } : {}),
        ...(update.last_processed_event_id !== undefined ? { last_processed_event_id: update.last_processed_event_id } : {}),
      })
      .where('id', '=', trackerId)
      .returningAll()
      .executeTakeFirstOrThrow();
    const tracker = toTracker(row);
    await appendToStream(trx, found.task_id, sequenceId, 'tracker', tracker);
    return tracker;
  });
}

// ---- the stream's reads -------------------------------------------------------------------------

/** Stream records of a task after a sequence number, ascending. */
export async function readStream(db: Db, taskId: string, afterSequenceId: number, limit: number): Promise<StreamRecord[]> {
  const rows = await db
    .selectFrom('task_stream')
    .select(['sequence_id', 'kind', 'record'])
    .where('task_id', '=', taskId)
    .where('sequence_id', '>', afterSequenceId)
    .orderBy('sequence_id')
    .limit(limit)
    .execute();
  return rows.map((r) => ({ kind: r.kind, sequence_id: Number(r.sequence_id), data: r.record }) as StreamRecord);
}

type PageItem =
  | { kind: 'event'; sequence_id: number; data: Event }
  | { kind: 'message'; sequence_id: number; data: Message }
  | { kind: 'task'; sequence_id: number; data: Task };

/**
 * `GET /tasks/{id}/conversation`: the newest `limit` items before `before_sequence_id`, oldest first
 * (ConversationPage in the contract). Everything is bounded by the task's sequence when read, so a
 * stream resumed after it misses nothing; a message may show text streamed since, which the stream's
 * deltas then repeat at their offsets (a reader skips what it has).
 */
export async function readConversationPage(
  db: Db,
  perms: Permissions,
  taskId: string,
  q: { before_sequence_id?: number; limit: number },
): Promise<{ items: PageItem[]; has_more: boolean; total: number; last_sequence_id: number; status: NonNullable<Task['status']> | null }> {
  const task = await taskById(db, perms, 'run', taskId);
  const last = Number(task.last_sequence_id);
  const before = Math.min(q.before_sequence_id ?? last + 1, last + 1);
  const take = q.limit + 1;
  // A status change: a task record whose status differs from the task record before it.
  const changes = sql<{ sequence_id: number; record: Task; changed: boolean }>`
    SELECT sequence_id, record, prev IS NOT NULL AND prev IS DISTINCT FROM record->>'status' AS changed FROM (
      SELECT sequence_id, record, lag(record->>'status') OVER (ORDER BY sequence_id) AS prev
      FROM task_stream WHERE task_id = ${taskId} AND kind = 'task' AND sequence_id <= ${last}
    ) t ORDER BY sequence_id`;
  const [events, messages, tasks, counts] = await Promise.all([
    db.selectFrom('events').selectAll().where('task_id', '=', taskId).where('sequence_id', '<', before).orderBy('sequence_id', 'desc').limit(take).execute(),
    db.selectFrom('messages').selectAll().where('task_id', '=', taskId).where('sequence_id', '<', before).orderBy('sequence_id', 'desc').limit(take).execute(),
    changes.execute(db),
    sql<{ n: number }>`
      SELECT (SELECT count(*) FROM events WHERE task_id = ${taskId} AND sequence_id <= ${last})
           + (SELECT count(*) FROM messages WHERE task_id = ${taskId} AND sequence_id <= ${last}) AS n`.execute(db),
  ]);
  const statusChanges = tasks.rows.filter((r) => r.changed);
  const merged: PageItem[] = [
    ...events.map((r) => ({ kind: 'event' as const, sequence_id: Number(r.sequence_id), data: toEvent(r) })),
    ...messages.map((r) => ({ kind: 'message' as const, sequence_id: Number(r.sequence_id), data: toMessage(r) })),
    ...statusChanges.filter((r) => Number(r.sequence_id) < before).map((r) => ({ kind: 'task' as const, sequence_id: Number(r.sequence_id), data: r.record })),
  ]
    .sort((a, b) => b.sequence_id - a.sequence_id)
    .slice(0, take);
  const page = merged.slice(0, q.limit).reverse();
  const lastTask = tasks.rows.at(-1)?.record;
  return {
    items: page,
    has_more: merged.length > q.limit,
    total: Number(counts.rows[0]?.n ?? 0) + statusChanges.length,
    last_sequence_id: last,
    status: lastTask?.status ?? null,
  };
}

/** Where a stream starts: access (`run`), and whether the task has already ended at a sequence number. */
export async function openStream(db: Db, perms: Permissions, taskId: string): Promise<{ lastSequenceId: number; terminal: boolean }> {
  const task = await taskById(db, perms, 'run', taskId);
  return { lastSequenceId: Number(task.last_sequence_id), terminal: isTerminalTask(task.status) };
}

/** A `task` record whose status ends the stream. */
export const endsStream = (record: StreamRecord) => record.kind === 'task' && isTerminalTask(record.data.status);
