/**
 * Rehearsals (issue 22, README "Versions and migration"): before a migration, each chosen task's
 * recorded events are replayed on the target version in a shadow task: an ordinary task row marked
 * `shadow_of` the original, with its own filesystem (a copy of the archive reference, not the
 * bytes), state, tracker and messages, hidden from task lists unless asked for. Its deliveries go
 * through the normal outbox at REHEARSAL_PRIORITY, one event at a time, and at most `concurrency`
 * of them are outstanding at once across the service (RehearsalDriver), so live work always has
 * the dispatcher's room. Once every shadow has finished, the report is kept on the rehearsal and the
 * shadows are COMPLETED; they are deleted when the retention period ends.
 */
import { sql, type Kysely } from 'kysely';
import { LIVE_TASK_STATUSES, NEW_TASK_STATUS, ROUTABLE_VERSION_STATUSES, isIn, isTerminalTask } from '../../contract/lifecycle.js';
import { migrationChoiceProblem } from '../../contract/migration.js';
import { OPEN_DELIVERY_STATUSES, type Content } from '../../contract/conversation.js';
import { REHEARSAL_MAX_TASKS, type CreateRehearsalRequest, type Rehearsal, type RehearsalTask } from '../../contract/rehearsals.js';
import type { Permissions } from '../auth/policy.js';
import type { Database, Db } from '../store/db.js';
import { newId } from '../store/ids.js';
import { iso } from '../store/mappers.js';
import { enqueueDelivery, REHEARSAL_PRIORITY } from '../store/outbox.js';
import { appendToStream, createTracker, nextSequence, recordTaskChange, toEvent } from './conversation.js';
import { ValidationFailure, conflict, invalid, named, namedVersion, notFound, type ValidationItem } from './errors.js';
import { HISTORY_RETENTION_ENV } from './history.js';
import { agentById, inCallerOrg, versionById } from './lookup.js';
import { taskReport, type RehearsalRow, type RehearsalTaskRow } from './rehearsal-report.js';

type Trx = Kysely<Database>;

/** Outstanding rehearsal deliveries across the service (default): the dispatcher sends 64 at once, so live work keeps half. */
export const DEFAULT_REHEARSAL_CONCURRENCY = 32;

const OPEN = sql.join(OPEN_DELIVERY_STATUSES.map((s) => sql.lit(s)));

interface TaskPick {
  id: string;
  name: string | null;
  agent_id: string;
  branch_id: string;
  namespace_id: string;
  filesystem_id: string;
  params: unknown;
  task_metadata: unknown;
}

/** `POST /rehearsals`: shadows created, the first deliveries enqueued; the driver replays the rest. */
export async function createRehearsal(db: Db, perms: Permissions, req: CreateRehearsalRequest): Promise<Rehearsal> {
  const problem = migrationChoiceProblem('source', { names: ['from_version_id', 'task_ids'], given: [req.from_version_id !== null, req.task_ids !== null] });
  if (problem) {
    const items: ValidationItem[] = [
      { loc: ['body', 'from_version_id'], msg: problem, type: 'value_error' },
      { loc: ['body', 'task_ids'], msg: problem, type: 'value_error' },
    ];
    throw new ValidationFailure(items);
  }
  const id = await db.transaction().execute(async (trx) => {
    const target = await versionById(trx, perms, 'run', req.to_version_id);
    if (!isIn(ROUTABLE_VERSION_STATUSES, target.status))
      throw conflict('target_not_routable', `Version ${namedVersion(target)} is ${target.status}; a rehearsal runs on an ACTIVE or DEPLOYING version`);
    const tasks = await pickTasks(trx, perms, req, target);
    const handlers = target.handlers as unknown;
    const noOnEvent = Array.isArray(handlers) && !handlers.includes('onEvent');
    const rehearsalId = newId('rehearsal');
    const now = new Date();
    await trx
      .insertInto('rehearsals')
      .values({
        id: rehearsalId,
        org_id: perms.actor.orgId,
        agent_id: target.agent_id,
        from_version_id: req.from_version_id,
        to_version_id: target.id,
        from_sequence: req.from_sequence,
        max_events: req.max_events,
        event_timeout_ms: req.event_timeout_ms,
        report: null,
        created_by_key_id: perms.actor.keyId || null,
        created_at: now,
        completed_at: null,
        expires_at: new Date(now.getTime() + req.retention_hours * 3600_000),
      })
      .execute();
    const skipped = noOnEvent
      ? `${namedVersion(target)} has no onEvent handler (its agent registered ${(handlers as string[]).join(', ') || 'no handlers'}): there is nothing to replay the events to`
      : null;
    for (const task of tasks) {
      if (req.from_sequence != null) await checkHistoryKept(trx, task, req.from_sequence);
      const fromSequence = req.from_sequence ?? 0;
      const events = await trx
        .selectFrom('events')
        .select('id')
        .where('task_id', '=', task.id)
        .where('sequence_id', '>=', fromSequence)
        .orderBy('sequence_id')
        .limit(req.max_events)
        .execute();
      const total = await trx
        .selectFrom('events')
        .select(sql<number>`count(*)::int`.as('n'))
        .where('task_id', '=', task.id)
        .where('sequence_id', '>=', fromSequence)
        .executeTakeFirstOrThrow();
      const shadow = skipped ? null : await createShadow(trx, task, rehearsalId, target.id, req.from_sequence);
      await trx
        .insertInto('rehearsal_tasks')
        .values({
          rehearsal_id: rehearsalId,
          task_id: task.id,
          shadow_task_id: shadow?.id ?? null,
          start_files_count: shadow?.files.count ?? null,
          start_archive_checksum: shadow?.files.checksum ?? null,
          status: skipped ? 'done' : 'running',
          event_ids: JSON.stringify(events.map((e) => e.id)),
          shadow_event_ids: '[]',
          timed_out: '[]',
          events_total: total.n,
          skipped_reason: skipped,
          report: null,
        })
        .execute();
    }
    return rehearsalId;
  });
  for (const wake of created) wake();
  return getRehearsal(db, perms, id);
}

async function pickTasks(
  trx: Trx,
  perms: Permissions,
  req: CreateRehearsalRequest,
  target: { id: string; agent_id: string; branch_id: string },
): Promise<TaskPick[]> {
  const columns = ['id', 'name', 'agent_id', 'branch_id', 'namespace_id', 'filesystem_id', 'params', 'task_metadata'] as const;
  const limit = req.sample ?? REHEARSAL_MAX_TASKS + 1;
  let tasks: TaskPick[];
  if (req.from_version_id !== null) {
    const source = await versionById(trx, perms, 'read', req.from_version_id);
    if (source.agent_id !== target.agent_id) throw invalid(['body', 'to_version_id'], `Version ${target.id} is not a version of the agent of ${source.id}`);
    if (source.id === target.id) throw invalid(['body', 'to_version_id'], 'to_version_id is the same as from_version_id');
    tasks = (await trx
      .selectFrom('tasks')
      .select(columns)
      .where('current_version_id', '=', source.id)
      .where('status', 'in', LIVE_TASK_STATUSES)
      .where('shadow_of', 'is', null)
      .orderBy(req.sample ? sql`random()` : sql`id`)
      .limit(limit)
      .execute()) as TaskPick[];
    if (tasks.length === 0) throw conflict('nothing_to_rehearse', `Version ${namedVersion(source)} has no RUNNING or IDLE tasks to rehearse`);
  } else {
    const ids = [...new Set(req.task_ids!)];
    const found = (await trx
      .selectFrom('tasks')
      .select([...columns, 'shadow_of', 'status'])
      .where('id', 'in', ids)
      .where(inCallerOrg(perms, 'tasks.namespace_id'))
      .where('status', '!=', 'DELETED')
      .execute()) as (TaskPick & { shadow_of: string | null; status: string })[];
    const unknown = ids.find((id) => !found.some((t) => t.id === id));
    if (unknown) throw notFound('Task', unknown);
    for (const t of found) {
      perms.require('run', { type: 'agent', id: t.agent_id, namespaceId: t.namespace_id }, `Task ${t.id}`);
      if (t.shadow_of) throw invalid(['body', 'task_ids'], `Task ${t.id} is a shadow task (a rehearsal of ${t.shadow_of}); rehearse the original`);
      if (t.agent_id !== target.agent_id) throw invalid(['body', 'task_ids'], `Task ${named(t.name, t.id)} is not a task of the agent of version ${target.id}`);
    }
    tasks = req.sample ? found.sort(() => Math.random() - 0.5).slice(0, req.sample) : found;
  }
  if (tasks.length > REHEARSAL_MAX_TASKS)
    throw conflict('rehearsal_too_large', `More than ${REHEARSAL_MAX_TASKS} tasks would be rehearsed; pick some with sample (--sample N)`);
  return tasks;
}

/**
 * A rehearsal from a sequence below the task's retained history (domain/history.ts) would start
 * from a state and files that were pruned: refused, naming where it may start. FOR SHARE: a prune
 * waits for this rehearsal's copy, or this rehearsal sees the prune's new first sequence.
 */
async function checkHistoryKept(trx: Trx, task: TaskPick, fromSequence: number): Promise<void> {
  const { history_from_sequence: first } = await trx
    .selectFrom('tasks')
    .select('history_from_sequence')
    .where('id', '=', task.id)
    .forShare()
    .executeTakeFirstOrThrow();
  if (fromSequence < first)
    throw conflict(
      'history_pruned',
      `Task ${named(task.name, task.id)} keeps the state and files a rehearsal starts from back to sequence ${first} (its last migration, and ${HISTORY_RETENTION_ENV}): rehearse from sequence ${first} or later, or from its creation`,
    );
}

/**
 * The shadow task: the original's params and metadata, on the target, with its own copy of the files
 * (the archive reference) as they were before the starting sequence (from its creation: when it was
 * created): the first archive replaced at or after it (filesystem_history), else the current one.
 */
async function createShadow(
  trx: Trx,
  task: TaskPick,
  rehearsalId: string,
  targetId: string,
  fromSequence: number | null,
): Promise<{ id: string; files: { count: number; checksum: string | null } }> {
  const fsId = newId('filesystem');
  const copied = await sql<{ files_count: number; archive_checksum: string | null }>`
    INSERT INTO filesystems (id, namespace_id, project_id, created_at, archive_checksum, size_bytes, files_count, archive_bytes, blob_key, manifest_key, created_by_key_id, updated_at)
    SELECT ${fsId}, f.namespace_id, NULL, now(), a.archive_checksum, a.size_bytes, a.files_count, a.archive_bytes, a.blob_key, a.manifest_key, f.created_by_key_id, now()
    FROM filesystems f CROSS JOIN LATERAL (
      SELECT * FROM (
        SELECT h.replaced_at_sequence AS until, h.archive_checksum, h.size_bytes, h.files_count, h.archive_bytes, h.blob_key, h.manifest_key
        FROM filesystem_history h WHERE h.task_id = ${task.id} AND h.filesystem_id = f.id AND h.replaced_at_sequence >= ${fromSequence ?? 0}
        UNION ALL
        SELECT NULL, f.archive_checksum, f.size_bytes, f.files_count, f.archive_bytes, f.blob_key, f.manifest_key
      ) AS archives ORDER BY until ASC NULLS LAST LIMIT 1
    ) AS a
    WHERE f.id = ${task.filesystem_id}
    RETURNING files_count, archive_checksum`.execute(trx);
  const files = copied.rows[0];
  const shadowId = newId('task');
  const now = new Date();
  await trx
    .insertInto('tasks')
    .values({
      id: shadowId,
      agent_id: task.agent_id,
      branch_id: task.branch_id,
      namespace_id: task.namespace_id,
      filesystem_id: fsId,
      project_id: null,
      name: null,
      status: NEW_TASK_STATUS,
      status_reason: null,
      params: task.params == null ? null : JSON.stringify(task.params),
      task_metadata: task.task_metadata == null ? null : JSON.stringify(task.task_metadata),
      created_version_id: targetId,
      current_version_id: targetId,
      created_by_key_id: null,
      created_at: now,
      updated_at: now,
      shadow_of: task.id,
      rehearsal_id: rehearsalId,
      migration_error: null,
    })
    .execute();
  await createTracker(trx, shadowId, task.agent_id);
  await recordTaskChange(trx, [shadowId]);
  if (fromSequence === null) {
    // From the start: the target's onCreate builds the state, as it would for the task.
    await enqueueDelivery(trx, {
      taskId: shadowId,
      method: 'task/create',
      params: (task.params as Record<string, unknown> | null) ?? null,
      priority: REHEARSAL_PRIORITY,
    });
  } else {
    // From a sequence: the task's state as it was when its event S was recorded, per agent (none
    // when it had none then): the last value written before S, kept in states or state_history.
    // A sequence may hold up to three values (schema 041): the one before a move, the last one
    // kept, the current one; `newest` orders them.
    const atStart = await sql<{ agent_id: string; state: unknown }>`
      SELECT DISTINCT ON (agent_id) agent_id, state FROM (
        SELECT agent_id, state, COALESCE(written_at_sequence, 0) AS sequence_id, 2 AS newest FROM states WHERE task_id = ${task.id}
        UNION ALL
        SELECT agent_id, state, sequence_id, CASE WHEN before_move THEN 0 ELSE 1 END FROM state_history WHERE task_id = ${task.id}
      ) AS written
      WHERE sequence_id < ${fromSequence}
      ORDER BY agent_id, sequence_id DESC, newest DESC`.execute(trx);
    for (const s of atStart.rows)
      await trx
        .insertInto('states')
        .values({
          id: newId('state'),
          task_id: shadowId,
          agent_id: s.agent_id,
          state: JSON.stringify(s.state),
          created_at: now,
          updated_at: now,
          written_by_version_id: null,
        })
        .execute();
  }
  return { id: shadowId, files: { count: files.files_count, checksum: files.files_count > 0 ? files.archive_checksum : null } };
}

interface StoredRehearsal {
  id: string;
  agent_id: string;
  from_version_id: string | null;
  to_version_id: string;
  status: 'running' | 'completed';
  from_sequence: number | null;
  max_events: number;
  report: unknown;
  created_at: Date;
  completed_at: Date | null;
  expires_at: Date;
}

/** `GET /rehearsals/{id}`: the kept report once completed, else the report so far. Needs read on the agent. */
export async function getRehearsal(db: Db, perms: Permissions, rehearsalId: string): Promise<Rehearsal> {
  const row = (await db.selectFrom('rehearsals').selectAll().where('id', '=', rehearsalId).where('org_id', '=', perms.actor.orgId).executeTakeFirst()) as
    | StoredRehearsal
    | undefined;
  if (!row) throw notFound('Rehearsal', rehearsalId);
  await agentById(db, perms, 'read', row.agent_id).catch(() => {
    throw notFound('Rehearsal', rehearsalId);
  });
  const tasks = row.status === 'completed' && row.report ? (row.report as { tasks: RehearsalTask[] }).tasks : await reportTasks(db, row);
  return assemble(row, tasks);
}

/**
 * The tasks' reports: a done task's as kept when it finished (the driver computes it once), a
 * running one's progress so far (its events are compared once it is done). Cheap to poll.
 */
async function reportTasks(db: Kysely<Database>, row: RehearsalRow): Promise<RehearsalTask[]> {
  const rts = await sql<RehearsalTaskRow & { report: RehearsalTask | null }>`
    SELECT rt.task_id, t.name AS task_name, t.agent_id, rt.shadow_task_id, rt.status, rt.event_ids, rt.shadow_event_ids, rt.timed_out, rt.events_total, rt.skipped_reason, rt.start_files_count, rt.start_archive_checksum, rt.report
    FROM rehearsal_tasks rt JOIN tasks t ON t.id = rt.task_id
    WHERE rt.rehearsal_id = ${row.id} ORDER BY rt.task_id`.execute(db);
  return Promise.all(rts.rows.map((rt) => rt.report ?? (rt.status === 'done' ? taskReport(db, row, rt) : progressOf(row, rt))));
}

/** A running task's line: how far its replay has got. */
function progressOf(row: RehearsalRow, rt: RehearsalTaskRow): RehearsalTask {
  return {
    task_id: rt.task_id,
    task_name: rt.task_name,
    shadow_task_id: rt.shadow_task_id,
    status: 'running',
    start: row.from_sequence === null ? 'from its creation' : `from sequence ${row.from_sequence}`,
    events_total: rt.events_total,
    events_planned: rt.event_ids.length,
    // The last one sent may still run.
    events_replayed: Math.max(0, rt.shadow_event_ids.length - 1),
    truncated: null,
    skipped: rt.skipped_reason,
    events: [],
    state_diff: [],
    regressions: [],
  };
}

/** Computes and keeps the report of the rehearsal's tasks that are done and have none yet (in the driver's transaction). */
async function keepReports(trx: Trx, rehearsalIds: string[]): Promise<void> {
  if (rehearsalIds.length === 0) return;
  const rows = await sql<RehearsalTaskRow & RehearsalRow & { rehearsal_id: string }>`
    SELECT rt.rehearsal_id, r.id, r.from_sequence, r.max_events, rt.task_id, t.name AS task_name, t.agent_id, rt.shadow_task_id, rt.status,
           rt.event_ids, rt.shadow_event_ids, rt.timed_out, rt.events_total, rt.skipped_reason, rt.start_files_count, rt.start_archive_checksum
    FROM rehearsal_tasks rt JOIN rehearsals r ON r.id = rt.rehearsal_id JOIN tasks t ON t.id = rt.task_id
    WHERE rt.rehearsal_id = ANY(${rehearsalIds}::text[]) AND rt.status = 'done' AND rt.report IS NULL`.execute(trx);
  for (const rt of rows.rows) {
    const report = await taskReport(trx, { id: rt.rehearsal_id, from_sequence: rt.from_sequence, max_events: rt.max_events }, rt);
    await sql`UPDATE rehearsal_tasks SET report = ${JSON.stringify(report)}::jsonb WHERE rehearsal_id = ${rt.rehearsal_id} AND task_id = ${rt.task_id}`.execute(
      trx,
    );
  }
}

function assemble(row: StoredRehearsal, tasks: RehearsalTask[]): Rehearsal {
  const sum = (f: (t: RehearsalTask) => number) => tasks.reduce((n, t) => n + f(t), 0);
  const both = tasks.flatMap((t) => t.events).filter((e) => e.original.latency_ms !== null && e.rehearsal.latency_ms !== null);
  const mean = (values: number[]) => (values.length ? Math.round((values.reduce((a, b) => a + b, 0) / values.length) * 10) / 10 : null);
  const messageDifferences = sum((t) => t.events.filter((e) => e.differences.length > 0).length);
  const stateDifferences = sum((t) => t.state_diff.length);
  const regressions = sum((t) => t.regressions.length);
  return {
    id: row.id,
    agent_id: row.agent_id,
    from_version_id: row.from_version_id,
    to_version_id: row.to_version_id,
    status: row.status,
    from_sequence: row.from_sequence,
    max_events: row.max_events,
    regressions_found: regressions > 0,
    differences_found: messageDifferences + stateDifferences > 0,
    totals: {
      tasks: tasks.length,
      tasks_done: tasks.filter((t) => t.status === 'done').length,
      events_planned: sum((t) => t.events_planned),
      events_replayed: sum((t) => t.events_replayed),
      handler_errors: sum((t) => t.events.filter((e) => e.rehearsal.handler_error !== null).length),
      timeouts: sum((t) => t.events.filter((e) => e.rehearsal.timed_out).length),
      message_differences: messageDifferences,
      state_differences: stateDifferences,
      tasks_with_regressions: tasks.filter((t) => t.regressions.length > 0).length,
      truncated_tasks: tasks.filter((t) => t.truncated !== null).length,
      skipped_tasks: tasks.filter((t) => t.skipped !== null).length,
      original_mean_latency_ms: mean(both.map((e) => e.original.latency_ms!)),
      rehearsal_mean_latency_ms: mean(both.map((e) => e.rehearsal.latency_ms!)),
    },
    tasks,
    created_at: iso(row.created_at)!,
    completed_at: iso(row.completed_at),
    expires_at: iso(row.expires_at)!,
  };
}

// ---- the driver's step ----------------------------------------------------------------------------

interface RunningTask {
  rehearsal_id: string;
  task_id: string;
  shadow_task_id: string;
  event_ids: string[];
  shadow_event_ids: string[];
  timed_out: number[];
  event_timeout_ms: number;
  shadow_status: string;
}

/**
 * One step of every running rehearsal, level-triggered (any replica may run it; rows another holds
 * are skipped): a shadow whose last delivery finished gets its next event, one past the event
 * timeout is recorded as timed out and dropped, a shadow with nothing left is done, and a rehearsal
 * whose shadows are all done gets its report kept. Returns whether anything changed.
 */
export async function advanceRehearsals(db: Db, concurrency = DEFAULT_REHEARSAL_CONCURRENCY): Promise<{ running: boolean; changed: boolean }> {
  const any = await db.selectFrom('rehearsals').select('id').where('status', '=', 'running').limit(1).executeTakeFirst();
  if (!any) return { running: false, changed: false };
  const changed = await db.transaction().execute(async (trx) => {
    let changed = false;
    const finishedIn = new Set<string>();
    const rows = await sql<RunningTask>`
      SELECT rt.rehearsal_id, rt.task_id, rt.shadow_task_id, rt.event_ids, rt.shadow_event_ids, rt.timed_out, r.event_timeout_ms, s.status AS shadow_status
      FROM rehearsal_tasks rt JOIN rehearsals r ON r.id = rt.rehearsal_id JOIN tasks s ON s.id = rt.shadow_task_id
      WHERE r.status = 'running' AND rt.status = 'running'
      ORDER BY r.created_at, rt.task_id
      FOR UPDATE OF rt SKIP LOCKED`.execute(trx);
    if (rows.rows.length > 0) {
      const open = await sql<{ task_id: string; id: string; method: string; age_ms: number }>`
        SELECT task_id, id::text AS id, method, (extract(epoch FROM now() - created_at) * 1000)::float8 AS age_ms
        FROM deliveries WHERE task_id = ANY(${rows.rows.map((r) => r.shadow_task_id)}::text[]) AND status IN (${OPEN})`.execute(trx);
      const openByTask = new Map(open.rows.map((o) => [o.task_id, o]));
      const outstandingRow = await sql<{ n: number }>`SELECT count(*)::int AS n FROM deliveries WHERE priority < 0 AND status IN (${OPEN})`.execute(trx);
      let outstanding = outstandingRow.rows[0].n;
      for (const rt of rows.rows) {
        const pending = openByTask.get(rt.shadow_task_id);
        if (pending) {
          if (pending.age_ms <= rt.event_timeout_ms) continue;
          const position = pending.method === 'task/create' ? 0 : rt.shadow_event_ids.length;
          await sql`
            UPDATE deliveries SET status = 'failed', claimed_by = NULL, claimed_until = NULL, leased_to = NULL,
              last_error = ${`rehearsal: no answer within ${rt.event_timeout_ms} ms`}, updated_at = now()
            WHERE id = ${pending.id} AND status IN (${OPEN})`.execute(trx);
          await sql`UPDATE rehearsal_tasks SET timed_out = timed_out || ${JSON.stringify([position])}::jsonb WHERE rehearsal_id = ${rt.rehearsal_id} AND task_id = ${rt.task_id}`.execute(
            trx,
          );
          outstanding--;
          changed = true;
          continue;
        }
        const next = rt.shadow_event_ids.length;
        if (next >= rt.event_ids.length || isTerminalTask(rt.shadow_status as never)) {
          await sql`UPDATE rehearsal_tasks SET status = 'done' WHERE rehearsal_id = ${rt.rehearsal_id} AND task_id = ${rt.task_id}`.execute(trx);
          finishedIn.add(rt.rehearsal_id);
          changed = true;
          continue;
        }
        if (outstanding >= concurrency) continue;
        const copy = await replayEvent(trx, rt.shadow_task_id, rt.event_ids[next]);
        await sql`UPDATE rehearsal_tasks SET shadow_event_ids = shadow_event_ids || ${JSON.stringify([copy])}::jsonb WHERE rehearsal_id = ${rt.rehearsal_id} AND task_id = ${rt.task_id}`.execute(
          trx,
        );
        outstanding++;
        changed = true;
      }
    }
    await keepReports(trx, [...finishedIn]);
    const finished = await sql<StoredRehearsal>`
      SELECT * FROM rehearsals r WHERE r.status = 'running'
        AND NOT EXISTS (SELECT 1 FROM rehearsal_tasks rt WHERE rt.rehearsal_id = r.id AND rt.status = 'running')
      FOR UPDATE SKIP LOCKED`.execute(trx);
    for (const r of finished.rows) {
      const tasks = await reportTasks(trx, r);
      await sql`UPDATE rehearsals SET status = 'completed', completed_at = now(), report = ${JSON.stringify({ tasks })}::jsonb WHERE id = ${r.id}`.execute(trx);
      const shadows = await sql<{ id: string }>`
        UPDATE tasks SET status = 'COMPLETED', status_reason = ${`Rehearsal ${r.id} completed`}, updated_at = now()
        WHERE rehearsal_id = ${r.id} AND shadow_of IS NOT NULL AND status IN ('RUNNING', 'IDLE') RETURNING id`.execute(trx);
      await recordTaskChange(
        trx,
        shadows.rows.map((s) => s.id),
      );
      changed = true;
    }
    return changed;
  });
  return { running: true, changed };
}

const created = new Set<() => void>();
/** Tells this process's rehearsal driver that a rehearsal was created here (other replicas' find it by polling). */
export function onRehearsalCreated(wake: () => void): () => void {
  created.add(wake);
  return () => created.delete(wake);
}

/** The next recorded event, copied into the shadow's own conversation and enqueued behind live work. */
async function replayEvent(trx: Trx, shadowId: string, eventId: string): Promise<string> {
  const original = await trx.selectFrom('events').select(['content', 'agent_id']).where('id', '=', eventId).executeTakeFirstOrThrow();
  const sequenceId = await nextSequence(trx, shadowId, false);
  const row = await trx
    .insertInto('events')
    .values({
      id: newId('event'),
      task_id: shadowId,
      agent_id: original.agent_id,
      sequence_id: sequenceId,
      content: JSON.stringify(original.content as Content),
      created_at: new Date(),
    })
    .returningAll()
    .executeTakeFirstOrThrow();
  const event = toEvent(row);
  await appendToStream(trx, shadowId, sequenceId, 'event', event);
  await enqueueDelivery(trx, { taskId: shadowId, method: 'event/send', event, priority: REHEARSAL_PRIORITY });
  return event.id;
}

/** Deletes the shadow tasks of rehearsals past their retention (their reports stay). Returns how many. */
export async function sweepRehearsals(db: Db): Promise<number> {
  return db.transaction().execute(async (trx) => {
    const expired = await sql<{ id: string; filesystem_id: string }>`
      SELECT t.id, t.filesystem_id FROM tasks t JOIN rehearsals r ON r.id = t.rehearsal_id
      WHERE t.shadow_of IS NOT NULL AND r.status = 'completed' AND r.expires_at < now()
      ORDER BY t.id LIMIT 500 FOR UPDATE OF t SKIP LOCKED`.execute(trx);
    const ids = expired.rows.map((r) => r.id);
    if (ids.length === 0) return 0;
    const list = sql`ANY(${ids}::text[])`;
    await sql`UPDATE rehearsal_tasks SET shadow_task_id = NULL WHERE shadow_task_id = ${list}`.execute(trx);
    // Their deliveries go with them (schema 040's trigger on the DELETE below).
    await sql`DELETE FROM task_stream WHERE task_id = ${list}`.execute(trx);
    await sql`DELETE FROM messages WHERE task_id = ${list}`.execute(trx);
    await sql`DELETE FROM trackers WHERE task_id = ${list}`.execute(trx);
    await sql`DELETE FROM events WHERE task_id = ${list}`.execute(trx);
    await sql`DELETE FROM states WHERE task_id = ${list}`.execute(trx);
    await sql`DELETE FROM task_system_folders WHERE task_id = ${list}`.execute(trx);
    await sql`DELETE FROM tasks WHERE id = ${list}`.execute(trx);
    await sql`DELETE FROM filesystems f WHERE f.id = ANY(${expired.rows.map((r) => r.filesystem_id)}::text[]) AND NOT EXISTS (SELECT 1 FROM tasks t WHERE t.filesystem_id = f.id)`.execute(
      trx,
    );
    return ids.length;
  });
}
