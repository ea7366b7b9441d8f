/**
 * Rollouts (issue 22, part 2; README "Versions and migration"): a migration in steps. Each step
 * moves its share of the source's live tasks in one transaction that also advances the rollout and
 * writes the step's migration record, so a server killed mid-step resumes from what committed and
 * never moves a task twice. The runtime reconciler calls `advanceRollouts` on every pass under the
 * runtime lease (level-triggered: each call looks at where a rollout stands and does the next
 * thing). A step is watched for its window: the handler errors and failed or timed-out deliveries
 * of the moved tasks against the ones still on the source, counted where they are recorded (the
 * agent's handler-error messages, the deliveries table), and the target version's status (FAILED,
 * a crash loop). Past the threshold the moved tasks go back and the rollout stops, saying why.
 */
import { sql, type Kysely, type Selectable } from 'kysely';
import { LIVE_TASK_STATUSES } from '../../contract/lifecycle.js';
import {
  ACTIVE_ROLLOUT_STATUSES,
  MIGRATION_FAILURES_SHOWN,
  parseDuration,
  type CreateRolloutRequest,
  type Rollout,
  type RolloutFigures,
  type RolloutStepReport,
} from '../../contract/rollouts.js';
import { versionLabel } from '../../contract/version-ref.js';
import type { Permissions } from '../auth/policy.js';
import type { Database, Db, RolloutsTable, VersionsTable } from '../store/db.js';
import { newId } from '../store/ids.js';
import { isUniqueViolation, statusList } from '../store/sql.js';
import { conflict, invalid, notFound } from './errors.js';
import { appendEvent, settleDraining } from './events.js';
import { inCallerOrg, lockBranch, readableAgentRows, versionById } from './lookup.js';
import { resolveTarget } from './migrate.js';
import { moveRecorded, TAKES_TASKS_BACK } from './migration-history.js';
import { MIGRATE_HANDLER } from './migration-hooks.js';
import { isRefusal, next } from './version-lifecycle.js';

type Trx = Kysely<Database>;
type Row = Selectable<RolloutsTable>;
type VersionRow = Selectable<VersionsTable>;

const ACTIVE = ACTIVE_ROLLOUT_STATUSES as readonly string[];
const live = () => statusList(LIVE_TASK_STATUSES);

const stepsOf = (row: Row) => row.steps as number[];
const percentOf = (row: Row) => (row.step_index >= 0 ? stepsOf(row)[row.step_index] : 0);
const agentRef = (row: { agent_id: string; namespace_id: string }) => ({ type: 'agent', id: row.agent_id, namespaceId: row.namespace_id }) as const;
const iso = (d: Date | string | null) => (d === null ? null : new Date(d).toISOString());
const round = (n: number) => Math.round(n * 100) / 100;

/** Figures kept before onMigrate failures were counted (schema 016 reports) read as none. */
const withMigrationFigures = (f: RolloutFigures | null): RolloutFigures | null =>
  f && { ...f, migration_errors: f.migration_errors ?? 0, migration_failures: f.migration_failures ?? [] };

export function toRollout(row: Row, liveFigures?: { target: RolloutFigures; source: RolloutFigures }): Rollout {
  const report = (row.report as RolloutStepReport[])
    .map((entry, i, all) => (liveFigures && i === all.length - 1 && entry.decision === 'watching' ? { ...entry, ...liveFigures } : entry))
    .map((entry) => ({ ...entry, target: withMigrationFigures(entry.target), source: withMigrationFigures(entry.source) }));
  const watching = row.status === 'RUNNING' && row.step_started_at !== null;
  return {
    id: row.id,
    branch_id: row.branch_id,
    agent_id: row.agent_id,
    from_version_id: row.from_version_id,
    to_version_id: row.to_version_id,
    steps: stepsOf(row),
    watch_ms: row.watch_ms,
    max_error_rate_percent: row.max_error_rate,
    status: row.status as Rollout['status'],
    step: row.step_index + 1,
    percent: percentOf(row),
    step_started_at: iso(row.step_started_at),
    window_ends_at: watching ? new Date(new Date(row.step_started_at!).getTime() + row.watch_ms).toISOString() : null,
    new_tasks: row.new_tasks,
    new_tasks_to_target: row.new_tasks_to_target,
    reason: row.reason,
    report,
    created_at: iso(row.created_at)!,
    updated_at: iso(row.updated_at)!,
    finished_at: iso(row.finished_at),
  };
}

/** `POST /rollouts`: checks, then the record; the first step is taken by the next pass (`advanceRollouts`). */
export async function createRollout(db: Db, perms: Permissions, req: CreateRolloutRequest): Promise<Rollout> {
  if ((req.to_version_id === null) === !req.to_latest) {
    const msg = 'Give exactly one target: to_version_id or to_latest: true';
    throw invalid(['body', 'to_version_id'], msg);
  }
  try {
    return await db.transaction().execute(async (trx) => {
      const source = await versionById(trx, perms, 'write', req.from_version_id);
      const branch = await lockBranch(trx, source.branch_id);
      const target = await resolveTarget(trx, perms, branch, {
        from_version_id: source.id,
        task_ids: null,
        to_version_id: req.to_version_id,
        to_latest: req.to_latest,
        dry_run: false,
        limit: null,
      });
      if (target.id === source.id)
        throw invalid(['body', req.to_latest ? 'to_latest' : 'to_version_id'], `Version ${versionLabel(source.number)} is the source itself`);
      if (!(TAKES_TASKS_BACK as readonly string[]).includes(source.status)) {
        throw conflict('source_retired', `Version ${versionLabel(source.number)} is ${source.status}: it has no tasks to roll out`);
      }
      const running = await trx
        .selectFrom('rollouts')
        .select(['id', 'status'])
        .where('from_version_id', '=', source.id)
        .where('status', 'in', ACTIVE)
        .executeTakeFirst();
      if (running) throw inProgress(source.number, running.id, running.status);
      const row = await trx
        .insertInto('rollouts')
        .values({
          id: newId('rollout'),
          branch_id: branch.id,
          agent_id: source.agent_id,
          namespace_id: source.namespace_id,
          from_version_id: source.id,
          to_version_id: target.id,
          steps: JSON.stringify(req.steps),
          watch_ms: parseDuration(req.watch)!,
          max_error_rate: req.max_error_rate_percent,
          status: 'RUNNING',
          reason: null,
          step_started_at: null,
          created_by_key_id: perms.actor.keyId || null,
          finished_at: null,
        })
        .returningAll()
        .executeTakeFirstOrThrow();
      return toRollout(row);
    });
  } catch (error) {
    // Two requests at once: the partial unique index lets one through.
    if (isUniqueViolation(error, 'rollouts_one_per_source')) throw conflict('rollout_in_progress', 'A rollout from this version is already in progress');
    throw error;
  }
}

const inProgress = (number: number, id: string, status: string) =>
  conflict('rollout_in_progress', `A rollout from ${versionLabel(number)} is already in progress (${id}, ${status}): pause, resume or abort it`);

async function rolloutRow(db: Kysely<Database>, perms: Permissions, id: string, permission: 'read' | 'write'): Promise<Row> {
  const row = await db.selectFrom('rollouts').selectAll().where('id', '=', id).where(inCallerOrg(perms, 'rollouts.namespace_id')).executeTakeFirst();
  if (!row) throw notFound('Rollout', id);
  perms.require(permission, agentRef(row), `Rollout ${id}`);
  return row;
}

/** `GET /rollouts/{id}`: with the figures of the step being watched, as they are now. */
export async function getRollout(db: Db, perms: Permissions, id: string): Promise<Rollout> {
  const row = await rolloutRow(db, perms, id, 'read');
  if (row.status !== 'RUNNING' || row.step_started_at === null) return toRollout(row);
  const since = new Date(row.step_started_at);
  return toRollout(row, {
    target: await figures(db, row.to_version_id, since),
    source: await figures(db, row.from_version_id, since),
  });
}

/** `GET /rollouts`: newest first, the ones of agents the caller may read, one page of them. */
export async function listRollouts(
  db: Db,
  perms: Permissions,
  q: { agent_id?: string; branch_id?: string; status?: string | readonly string[]; limit: number; page_number: number },
): Promise<{ rollouts: Rollout[]; total: number }> {
  const query = rolloutsQuery(db, perms, q);
  const [rows, count] = await Promise.all([
    query
      .selectAll()
      .orderBy('id', 'desc')
      .limit(q.limit)
      .offset((q.page_number - 1) * q.limit)
      .execute(),
    query.select(sql<number>`count(*)::int`.as('n')).executeTakeFirstOrThrow(),
  ]);
  return { rollouts: rows.map((r) => toRollout(r)), total: count.n };
}

/** The rollouts the key may read, of an agent or branch, in these statuses (`GET /rollouts`, `GET /status`). */
export function rolloutsQuery(db: Db, perms: Permissions, q: { agent_id?: string; branch_id?: string; status?: string | readonly string[] }) {
  let query = db.selectFrom('rollouts').where(readableAgentRows(perms, 'rollouts', q));
  if (typeof q.status === 'string') query = query.where('status', '=', q.status);
  else if (q.status) query = query.where('status', 'in', [...q.status]);
  return query;
}

/** Locks the rollout (its branch first: the lock order of lookup.ts) and reads it as it is now. */
async function lockRollout(trx: Trx, id: string, branchId: string): Promise<Row> {
  await lockBranch(trx, branchId);
  return trx.selectFrom('rollouts').selectAll().where('id', '=', id).forUpdate().executeTakeFirstOrThrow();
}

async function update(trx: Trx, id: string, set: Partial<Omit<Row, 'steps' | 'report'>> & { report?: RolloutStepReport[] }): Promise<Row> {
  const { report, ...rest } = set;
  return trx
    .updateTable('rollouts')
    .set({ ...rest, ...(report ? { report: JSON.stringify(report) } : {}), updated_at: new Date() })
    .where('id', '=', id)
    .returningAll()
    .executeTakeFirstOrThrow();
}

/** `POST /rollouts/{id}/pause|resume|abort`. */
export async function controlRollout(db: Db, perms: Permissions, id: string, action: 'pause' | 'resume' | 'abort'): Promise<Rollout> {
  return db.transaction().execute(async (trx) => {
    const found = await rolloutRow(trx, perms, id, 'write');
    const row = await lockRollout(trx, id, found.branch_id);
    if (!ACTIVE.includes(row.status))
      throw conflict('rollout_finished', `Rollout ${id} is ${row.status}${row.reason ? ` (${row.reason})` : ''}: it cannot ${action}`);
    if (action === 'pause') {
      if (row.status === 'PAUSED') return toRollout(row);
      return toRollout(await update(trx, id, { status: 'PAUSED' }));
    }
    if (action === 'resume') {
      if (row.status === 'RUNNING') return toRollout(row);
      // The step under way is watched again from now: what happened while paused does not count.
      const now = new Date();
      const report = (row.report as RolloutStepReport[]).map((e, i, all) =>
        i === all.length - 1 && e.decision === 'watching' ? { ...e, started_at: now.toISOString() } : e,
      );
      return toRollout(await update(trx, id, { status: 'RUNNING', step_started_at: row.step_index >= 0 ? now : null, report }));
    }
    const who = perms.actor.name ? ` by ${perms.actor.name}` : '';
    return toRollout(await revert(trx, row, 'ABORTED', `aborted${who}`));
  });
}

/**
 * The figures of one version's tasks since `since`: live tasks now, deliveries made to the
 * version, the deliveries of it that failed or timed out, and the handler errors its tasks reported.
 * A delivery sent again because the server restarted (or the runtime stopped the version) is no
 * failure of the version (deliveries.ts releaseLeases): a server killed mid-step must not revert a good rollout.
 */
async function figures(db: Kysely<Database>, versionId: string, since: Date): Promise<RolloutFigures> {
  const row = (
    await sql<{ tasks: number; deliveries: number; failures: number; handler_errors: number }>`
      SELECT
        (SELECT count(*)::int FROM tasks WHERE current_version_id = ${versionId} AND status IN (${live()})) AS tasks,
        (SELECT count(*)::int FROM deliveries WHERE version_id = ${versionId} AND created_at >= ${since}) AS deliveries,
        (SELECT count(*)::int FROM deliveries WHERE version_id = ${versionId} AND failing_since >= ${since}) AS failures,
        (SELECT count(*)::int FROM messages m
          WHERE m.task_id IN (SELECT id FROM tasks WHERE current_version_id = ${versionId})
            AND m.created_at >= ${since} AND m.author = 'agent' AND m.content->>'type' = 'data'
            AND (m.content->'data') ? 'handler_error'
            AND (m.content->'data'->'handler_error'->>'handler') IS DISTINCT FROM ${MIGRATE_HANDLER}) AS handler_errors`.execute(db)
  ).rows[0];
  // A failed onMigrate sends its task back (migration-hooks.ts), so its handler-error message is on
  // a task of the other version now: the revert's TASKS_MIGRATED record says whose hook it was.
  const hooks = await sql<{ task_id: string; message: string; at: Date; n: number }>`
    SELECT e.data->'task_ids'->>0 AS task_id, e.data->>'reason' AS message, e.created_at AS at, count(*) OVER ()::int AS n
    FROM version_events e
    WHERE e.branch_id = (SELECT branch_id FROM versions WHERE id = ${versionId}) AND e.type = 'TASKS_MIGRATED'
      AND e.created_at >= ${since} AND e.data->>'mode' = 'migrate_hook_failed' AND (e.data->'from_version_ids') ? ${versionId}
    ORDER BY e.sequence LIMIT ${MIGRATION_FAILURES_SHOWN}`.execute(db);
  const migrationErrors = hooks.rows[0]?.n ?? 0;
  const errors = row.handler_errors + row.failures + migrationErrors;
  return {
    version_id: versionId,
    tasks: row.tasks,
    deliveries: row.deliveries,
    handler_errors: row.handler_errors,
    delivery_failures: row.failures,
    migration_errors: migrationErrors,
    migration_failures: hooks.rows.map((h) => ({ task_id: h.task_id, message: h.message, at: new Date(h.at).toISOString() })),
    error_rate_percent: row.deliveries === 0 ? (errors > 0 ? 100 : 0) : round(Math.min(100, (errors / row.deliveries) * 100)),
  };
}

const describeFigures = (f: RolloutFigures) =>
  `${f.error_rate_percent}% (${f.handler_errors} handler errors and ${f.delivery_failures} failed deliveries in ${f.deliveries} deliveries` +
  `${f.migration_errors > 0 ? `; onMigrate failed on ${f.migration_errors} moved task${f.migration_errors === 1 ? '' : 's'}, first ${f.migration_failures[0].task_id}: ${f.migration_failures[0].message}` : ''})`;

/**
 * Why the target version cannot take the tasks, or undefined while it can: FAILED, retired or
 * rolled back, or UNHEALTHY because the runtime saw it crash-looping (the reason is on its
 * VERSION_UNHEALTHY event, or on the version for one that failed to start).
 */
async function targetFailure(trx: Trx, target: VersionRow): Promise<string | undefined> {
  const label = versionLabel(target.number);
  if (target.status === 'FAILED') return `${label} FAILED${target.failure_reason ? ` (${target.failure_reason})` : ''}`;
  if (target.status === 'UNHEALTHY') {
    const event = await trx
      .selectFrom('version_events')
      .select('data')
      .where('version_id', '=', target.id)
      .where('type', '=', 'VERSION_UNHEALTHY')
      .orderBy('sequence', 'desc')
      .limit(1)
      .executeTakeFirst();
    const reason = (event?.data as { failure_reason?: string } | undefined)?.failure_reason ?? target.failure_reason;
    if (reason === 'crash_loop') return `${label} is in a crash loop`;
  }
  if (target.status === 'ROLLED_BACK' || target.status === 'RETIRED') return `${label} was ${target.status === 'RETIRED' ? 'retired' : 'rolled back'}`;
  return undefined;
}

/** Every running rollout, one step further where one is due. Called by the reconciler under the runtime lease. */
export async function advanceRollouts(db: Db, now: Date = new Date(), onError?: (error: unknown) => void): Promise<void> {
  const due = await db.selectFrom('rollouts').select(['id', 'branch_id']).where('status', '=', 'RUNNING').orderBy('id').execute();
  for (const r of due) {
    try {
      await db.transaction().execute((trx) => advance(trx, r.id, r.branch_id, now));
    } catch (error) {
      onError?.(error);
    }
  }
}

async function advance(trx: Trx, id: string, branchId: string, now: Date): Promise<void> {
  const row = await lockRollout(trx, id, branchId);
  if (row.status !== 'RUNNING') return;
  const target = await trx.selectFrom('versions').selectAll().where('id', '=', row.to_version_id).executeTakeFirstOrThrow();
  const failed = await targetFailure(trx, target);
  if (failed) {
    await revert(trx, row, 'REVERTED', failed, { decision: 'failed', target_status: target.status, reason: failed });
    return;
  }
  if (row.step_index < 0) {
    // The first step waits for the target to serve.
    if (target.status === 'ACTIVE') await startStep(trx, row, 0, now);
    return;
  }
  const since = new Date(row.step_started_at!);
  const windowOver = now.getTime() >= since.getTime() + row.watch_ms;
  const t = await figures(trx, row.to_version_id, since);
  const s = await figures(trx, row.from_version_id, since);
  const percent = percentOf(row);
  const stepName = `step ${row.step_index + 1} (${percent}%)`;
  // Past the threshold: at once, without waiting for the window to close.
  if (t.error_rate_percent - s.error_rate_percent > row.max_error_rate) {
    const reason =
      `${stepName}: the moved tasks' error rate ${describeFigures(t)} exceeds the source's ${s.error_rate_percent}% ` + `by more than ${row.max_error_rate}%`;
    await revert(trx, row, 'REVERTED', reason, { decision: 'failed', target: t, source: s, target_status: target.status, reason });
    return;
  }
  if (!windowOver) return;
  const passed = { decision: 'passed' as const, target: t, source: s, target_status: target.status, reason: null };
  if (row.step_index + 1 < stepsOf(row).length) {
    await startStep(trx, await closeStep(trx, row, passed, now), row.step_index + 1, now);
    return;
  }
  const done = await closeStep(trx, row, passed, now);
  await update(trx, done.id, {
    status: 'SUCCEEDED',
    finished_at: now,
    reason: `every task moved to ${versionLabel(target.number)}; each step stayed within ${row.max_error_rate}%`,
  });
  // No longer held by the rollout: the source retires once it has no live task (lifecycle: drained).
  await settleDraining(trx, [row.from_version_id]);
}

async function closeStep(trx: Trx, row: Row, decided: Partial<RolloutStepReport>, now: Date): Promise<Row> {
  const report = [...(row.report as RolloutStepReport[])];
  const last = report[report.length - 1];
  if (last && last.decision === 'watching') report[report.length - 1] = { ...last, ...decided, decided_at: now.toISOString() };
  return update(trx, row.id, { report });
}

/** One step: its share of the source's live tasks moved, the rollout advanced and the record written, in this one transaction. */
async function startStep(trx: Trx, row: Row, index: number, now: Date): Promise<void> {
  const source = await trx.selectFrom('versions').selectAll().where('id', '=', row.from_version_id).executeTakeFirstOrThrow();
  // The source hands over while its tasks move (ACTIVE or UNHEALTHY -> DRAINING).
  const handed = next(source.status, 'superseded');
  if (!isRefusal(handed) && handed !== source.status) {
    await trx.updateTable('versions').set({ status: handed, updated_at: now }).where('id', '=', source.id).where('status', '=', source.status).execute();
    await appendEvent(trx, row.branch_id, source.id, 'VERSION_DRAINING', { replaced_by: row.to_version_id, rollout_id: row.id });
  }
  const before = percentOf(row);
  const percent = stepsOf(row)[index];
  let which = sql`status IN (${live()})`;
  if (percent < 100) {
    const remaining = (
      await sql<{ n: number }>`SELECT count(*)::int AS n FROM tasks WHERE current_version_id = ${row.from_version_id} AND status IN (${live()})`.execute(trx)
    ).rows[0].n;
    // The step's share of what is still on the source: (percent - before) of the (100 - before) left, oldest first.
    const share = Math.ceil((remaining * (percent - before)) / (100 - before));
    which = sql`id IN (SELECT id FROM tasks WHERE current_version_id = ${row.from_version_id} AND status IN (${live()}) ORDER BY id LIMIT ${share})`;
  }
  const { count: moved, migrationId } = await moveRecorded(
    trx,
    row.from_version_id,
    row.to_version_id,
    which,
    {
      branchId: row.branch_id,
      agentId: row.agent_id,
      namespaceId: row.namespace_id,
      kind: 'rollout_step',
      rolloutId: row.id,
      step: index + 1,
      reason: `rollout ${row.id} step ${index + 1} (${percent}%)`,
    },
    { hooks: true },
  );
  const entry: RolloutStepReport = {
    step: index + 1,
    percent,
    moved,
    migration_id: migrationId,
    started_at: now.toISOString(),
    decided_at: null,
    decision: 'watching',
    target: null,
    source: null,
    target_status: null,
    reason: null,
  };
  await update(trx, row.id, { step_index: index, step_started_at: now, report: [...(row.report as RolloutStepReport[]), entry] });
}

/**
 * Moves back every task the rollout put on the target (its steps' tasks, and the new tasks its ramp
 * started there) that is still there and live, recorded as a `revert`; the rollout stops with `reason`.
 */
async function revert(trx: Trx, row: Row, status: 'REVERTED' | 'ABORTED', reason: string, decided?: Partial<RolloutStepReport>): Promise<Row> {
  const now = new Date();
  const closed = decided ? await closeStep(trx, row, decided, now) : row;
  const source = await trx.selectFrom('versions').select(['id', 'number', 'status']).where('id', '=', row.from_version_id).executeTakeFirstOrThrow();
  let finalReason = reason;
  if ((TAKES_TASKS_BACK as readonly string[]).includes(source.status)) {
    const { count } = await moveRecorded(
      trx,
      row.to_version_id,
      row.from_version_id,
      sql`status IN (${live()}) AND (
            id IN (SELECT e.value->>0 FROM migrations m, jsonb_array_elements(m.moves) e WHERE m.rollout_id = ${row.id} AND m.kind = 'rollout_step')
            OR (branch_id = ${row.branch_id} AND created_version_id = ${row.to_version_id} AND created_at >= ${row.created_at}))`,
      { branchId: row.branch_id, agentId: row.agent_id, namespaceId: row.namespace_id, kind: 'revert', rolloutId: row.id, reason },
      // The revert runs the source's onMigrate in reverse direction, like a rollback.
      { hooks: true },
    );
    finalReason = `${reason}; ${count} task${count === 1 ? '' : 's'} moved back to ${versionLabel(source.number)}`;
  } else {
    finalReason = `${reason}; ${versionLabel(source.number)} is ${source.status}, so no task could move back`;
  }
  return update(trx, closed.id, { status, reason: finalReason, finished_at: now, step_started_at: null });
}

/**
 * Where `POST /tasks` puts a new task of the branch while a rollout to `chosen` (the version it
 * would pick) runs: the rollout's current share goes to the target, the rest to the source, counted
 * so the shares are exact. After a rollout to it was reverted or aborted, new tasks stay on the
 * source until another rollout (or a newer version) comes.
 */
export async function rampVersionFor(trx: Trx, branchId: string, chosen: { id: string }): Promise<string> {
  const rollout = await trx
    .selectFrom('rollouts')
    .selectAll()
    .where('branch_id', '=', branchId)
    .where('to_version_id', '=', chosen.id)
    .orderBy('id', 'desc')
    .limit(1)
    .executeTakeFirst();
  if (!rollout || rollout.status === 'SUCCEEDED') return chosen.id;
  const source = await trx.selectFrom('versions').select(['id', 'status']).where('id', '=', rollout.from_version_id).executeTakeFirst();
  if (!source || !(TAKES_TASKS_BACK as readonly string[]).includes(source.status)) return chosen.id;
  if (!ACTIVE.includes(rollout.status)) return source.id;
  const locked = await trx.selectFrom('rollouts').selectAll().where('id', '=', rollout.id).forUpdate().executeTakeFirstOrThrow();
  const percent = percentOf(locked);
  const n = locked.new_tasks;
  const toTarget = Math.floor(((n + 1) * percent) / 100) > Math.floor((n * percent) / 100);
  await trx
    .updateTable('rollouts')
    .set({ new_tasks: n + 1, new_tasks_to_target: locked.new_tasks_to_target + (toTarget ? 1 : 0) })
    .where('id', '=', locked.id)
    .execute();
  return toTarget ? chosen.id : source.id;
}
