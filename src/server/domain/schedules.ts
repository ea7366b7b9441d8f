/**
 * Schedules (README "Schedules"): a cron expression (croner) read in a time zone, on an agent. Each
 * tick creates a task on the agent's serving version, as `POST /tasks` does, or sends an event to a
 * named long-lived task.
 *
 * Exactly once per tick: a ticker (one per server replica, see ScheduleTicker) locks a due schedule
 * row (`FOR UPDATE SKIP LOCKED`), claims the tick by inserting its `schedule_ticks` row, unique per
 * (schedule, tick time), with ON CONFLICT DO NOTHING, and creates the task and moves `next_run_at`
 * on in that same transaction. Two replicas, or a replica and the one restarted after it, can never
 * both commit a run of one tick.
 *
 * Late and missed ticks: a tick run at most MISSED_TICK_GRACE_MS after its time is on time (a ticker
 * that woke late, a replica taking over). Older ones were missed (no server ran): `skip` runs none
 * of them, `catch-up-one` runs one, at the time of the last missed tick.
 */
import { Cron } from 'croner';
import { sql, type Kysely, type Selectable } from 'kysely';
import type { Content } from '../../contract/conversation.js';
import { MISSED_TICK_GRACE_MS, SCHEDULE_RECENT_TICKS, type SCHEDULE_TICK_KINDS } from '../../contract/enums.js';
import type { CreateScheduleRequest, ListSchedulesQuery, Schedule, ScheduleTick } from '../../contract/schedules.js';
import { loadGrants, Permissions, unrestricted } from '../auth/policy.js';
import type { Database, Db, SchedulesTable, ScheduleTicksTable } from '../store/db.js';
import { newId } from '../store/ids.js';
import { iso } from '../store/mappers.js';
import { isUniqueViolation } from '../store/sql.js';
import { insertEvent } from './conversation.js';
import { conflict, DomainError, invalid, notFound, ValidationFailure, type ValidationItem } from './errors.js';
import { agentById, agentByPath, inCallerOrg, taskById } from './lookup.js';
import { insertTask, splitAgentName } from './tasks.js';
import { visibleRows } from './visibility.js';

type Trx = Kysely<Database>;
type TickKind = (typeof SCHEDULE_TICK_KINDS)[number];
type ScheduleRow = Selectable<SchedulesTable>;

// ---- cron expressions ---------------------------------------------------------------------------

const FIELDS_5 = ['minute', 'hour', 'day of month', 'month', 'day of week'];
const FIELDS_6 = ['second', ...FIELDS_5];
/** The values each field takes, for the error of one out of range. */
const RANGES: Record<string, string> = {
  second: '0-59',
  minute: '0-59',
  hour: '0-23',
  'day of month': '1-31',
  month: '1-12 or JAN-DEC',
  'day of week': '0-7 or SUN-SAT',
};

/** croner's own words, without its class prefix. */
const cronerMessage = (error: unknown) => String((error as Error).message ?? error).replace(/^Cron(Pattern|Date)?: /, '');

function tryCron(pattern: string, timezone?: string): Cron | Error {
  try {
    return new Cron(pattern, { paused: true, timezone });
  } catch (error) {
    return error as Error;
  }
}

/**
 * A schedule's cron expression, read in `timezone`; refused with a 422 that names where the error
 * is: `loc` `["body", "cron", i]` for the i-th field (0-based) and, in `msg`, the field's name and
 * its character position, or `["body", "timezone"]` for an unknown time zone.
 */
export function parseCron(expression: string, timezone: string): Cron {
  try {
    new Intl.DateTimeFormat('en', { timeZone: timezone });
  } catch {
    throw invalid(['body', 'timezone'], `Unknown time zone "${timezone}": use an IANA name such as UTC, Europe/Paris or America/New_York`, 'timezone');
  }
  const text = expression.trim();
  if (!text.startsWith('@')) {
    const fields = text.split(/\s+/);
    if (fields.length !== 5 && fields.length !== 6) {
      throw invalid(
        ['body', 'cron'],
        `Expected 5 fields (minute hour day-of-month month day-of-week), or 6 with seconds first; got ${fields.length}`,
        'cron_syntax',
      );
    }
    const names = fields.length === 5 ? FIELDS_5 : FIELDS_6;
    // Each field alone (the others `*`): every bad one is named with its position.
    const items: ValidationItem[] = [];
    let at = 0;
    fields.forEach((field, i) => {
      const start = expression.indexOf(field, at);
      at = start + field.length;
      const alone = fields.map((f, j) => (j === i ? f : '*')).join(' ');
      const result = tryCron(alone);
      if (result instanceof Error) {
        items.push({
          loc: ['body', 'cron', i],
          msg: `Field ${i + 1} (${names[i]}) "${field}" at character ${start + 1}: ${
            result instanceof RangeError
              ? `a value is out of range (${RANGES[names[i]!]})`
              : /illegal characters/.test(result.message)
                ? 'not a cron field: use numbers or names (JAN, MON), *, ranges (1-5), lists (1,3) and steps (*/5)'
                : cronerMessage(result)
          }`,
          type: 'cron_syntax',
        });
      }
    });
    if (items.length > 0) throw new ValidationFailure(items);
  }
  const cron = tryCron(text, timezone);
  if (cron instanceof Error) throw invalid(['body', 'cron'], cronerMessage(cron), 'cron_syntax');
  if (cron.nextRun() === null) throw invalid(['body', 'cron'], `"${expression}" never runs (no date matches it)`, 'cron_syntax');
  return cron;
}

/** The first tick strictly after `after`. */
const nextTick = (cron: Cron, after: Date): Date | null => cron.nextRun(after);

// ---- records ------------------------------------------------------------------------------------

const toTick = (r: Selectable<ScheduleTicksTable>): ScheduleTick => ({
  schedule_id: r.schedule_id,
  tick_at: iso(r.tick_at)!,
  kind: r.kind as TickKind,
  task_id: r.task_id,
  event_id: r.event_id,
  error: r.error,
  created_at: iso(r.created_at)!,
});

const toSchedule = (r: ScheduleRow): Schedule => ({
  id: r.id,
  agent_id: r.agent_id,
  namespace_id: r.namespace_id,
  name: r.name,
  cron: r.cron,
  timezone: r.timezone,
  branch: r.branch,
  params: (r.params as Record<string, unknown> | null) ?? null,
  task_name: r.task_name,
  event: (r.event as Content | null) ?? null,
  missed: r.missed as Schedule['missed'],
  status: r.status as Schedule['status'],
  next_run_at: iso(r.next_run_at),
  last_run_at: iso(r.last_run_at),
  last_error: r.last_error,
  created_at: iso(r.created_at)!,
  updated_at: iso(r.updated_at)!,
});

/** Wakes this process's tickers after a change that may bring a tick closer (create, resume). */
const changeListeners = new Set<() => void>();
const scheduleChanged = () => {
  for (const listener of changeListeners) listener();
};

// ---- the API ------------------------------------------------------------------------------------

/** `POST /schedules`: needs `run` on the agent, as creating a task does. */
export async function createSchedule(db: Db, perms: Permissions, req: CreateScheduleRequest): Promise<Schedule> {
  if (!req.agent_id === !req.agent_name) throw invalid(['body', req.agent_id ? 'agent_name' : 'agent_id'], 'Give exactly one of agent_id and agent_name');
  const sendsEvents = req.task_name != null;
  if (sendsEvents !== (req.event != null)) {
    throw invalid(['body', sendsEvents ? 'event' : 'task_name'], 'Give task_name and event together: each tick sends the event to that task');
  }
  if (sendsEvents && req.params != null) throw invalid(['body', 'params'], 'params are for the tasks a schedule creates; one that sends events takes event');
  if (sendsEvents && req.branch != null) throw invalid(['body', 'branch'], 'branch is for the tasks a schedule creates; the named task keeps its own');
  const cron = parseCron(req.cron, req.timezone);
  try {
    const row = await db.transaction().execute(async (trx) => {
      const agent = req.agent_id
        ? await agentById(trx, perms, 'run', req.agent_id)
        : await agentByPath(trx, perms, 'run', splitAgentName(req.agent_name!).namespace, splitAgentName(req.agent_name!).agent);
      if (sendsEvents) await namedTaskOf(trx, perms, agent.id, req.task_name!);
      const now = new Date();
      return trx
        .insertInto('schedules')
        .values({
          id: newId('schedule'),
          org_id: perms.actor.orgId,
          namespace_id: agent.namespace_id,
          agent_id: agent.id,
          name: req.name ?? null,
          cron: req.cron.trim(),
          timezone: req.timezone,
          branch: req.branch ?? null,
          params: req.params == null ? null : JSON.stringify(req.params),
          task_name: req.task_name ?? null,
          event: req.event == null ? null : JSON.stringify(req.event),
          missed: req.missed,
          status: 'ACTIVE',
          next_run_at: nextTick(cron, now),
          last_run_at: null,
          last_error: null,
          created_by_key_id: perms.actor.keyId || null,
          created_at: now,
          updated_at: now,
        })
        .returningAll()
        .executeTakeFirstOrThrow();
    });
    scheduleChanged();
    return toSchedule(row);
  } catch (error) {
    if (isUniqueViolation(error, 'schedules_agent_name')) throw conflict('schedule_name_taken', `The agent already has a schedule named ${req.name}`);
    throw error;
  }
}

/** The task a schedule sends its events to: by name, of the schedule's agent. */
async function namedTaskOf(trx: Trx, perms: Permissions, agentId: string, taskName: string) {
  const row = await trx
    .selectFrom('tasks')
    .select('id')
    .where('org_id', '=', perms.actor.orgId)
    .where('name', '=', taskName)
    .where('agent_id', '=', agentId)
    .where('status', '!=', 'DELETED')
    .executeTakeFirst();
  if (!row) throw notFound(`Task named ${taskName} of the agent`);
  return taskById(trx, perms, 'run', row.id);
}

/** `GET /schedules`: of the agents the key may read; soonest next run first. */
export async function listSchedules(db: Db, perms: Permissions, q: ListSchedulesQuery): Promise<{ schedules: Schedule[]; total: number }> {
  if (q.agent_id && q.agent) throw invalid(['query', 'agent'], 'Give agent or agent_id, not both');
  let agentId = q.agent_id;
  if (q.agent) agentId = (await agentByPath(db, perms, 'read', splitAgentName(q.agent).namespace, splitAgentName(q.agent).agent)).id;
  else if (agentId) await agentById(db, perms, 'read', agentId);
  let query = db.selectFrom('schedules').where(inCallerOrg(perms, 'schedules.namespace_id'));
  query = agentId
    ? query.where('schedules.agent_id', '=', agentId)
    : query.where((eb) => visibleRows(eb, perms.visible('agent', 'read'), 'schedules.namespace_id', 'schedules.agent_id'));
  if (q.status) query = query.where('schedules.status', '=', q.status);
  const [rows, count] = await Promise.all([
    query
      .selectAll()
      .orderBy(sql`next_run_at IS NULL`)
      .orderBy('next_run_at')
      .orderBy('id')
      .limit(q.limit)
      .offset((q.page_number - 1) * q.limit)
      .execute(),
    query.select(sql<number>`count(*)::int`.as('n')).executeTakeFirstOrThrow(),
  ]);
  return { schedules: rows.map(toSchedule), total: count.n };
}

/** A schedule the key may act on with `permission` on its agent (404 when it may not even discover it). */
async function scheduleById(db: Db | Trx, perms: Permissions, permission: 'read' | 'run', id: string, lock = false): Promise<ScheduleRow> {
  let query = db.selectFrom('schedules').selectAll().where('id', '=', id).where('org_id', '=', perms.actor.orgId);
  if (lock) query = query.forUpdate();
  const row = await query.executeTakeFirst();
  if (!row) throw notFound('Schedule', id);
  perms.require(permission, { type: 'agent', id: row.agent_id, namespaceId: row.namespace_id }, `Schedule ${id}`);
  return row;
}

/** `GET /schedules/{id}`: with its most recent runs. */
export async function getSchedule(db: Db, perms: Permissions, id: string): Promise<Schedule> {
  const row = await scheduleById(db, perms, 'read', id);
  const ticks = await db
    .selectFrom('schedule_ticks')
    .selectAll()
    .where('schedule_id', '=', id)
    .orderBy('tick_at', 'desc')
    .limit(SCHEDULE_RECENT_TICKS)
    .execute();
  return { ...toSchedule(row), recent_ticks: ticks.map(toTick) };
}

/** `POST /schedules/{id}/pause|resume`: resuming runs from the next tick after now; ticks of the pause are not run. */
export async function setScheduleStatus(db: Db, perms: Permissions, id: string, status: 'ACTIVE' | 'PAUSED'): Promise<Schedule> {
  const row = await db.transaction().execute(async (trx) => {
    const current = await scheduleById(trx, perms, 'run', id, true);
    if (current.status === status) return current;
    const now = new Date();
    const next = status === 'PAUSED' ? null : nextTick(parseCron(current.cron, current.timezone), now);
    return trx.updateTable('schedules').set({ status, next_run_at: next, updated_at: now }).where('id', '=', id).returningAll().executeTakeFirstOrThrow();
  });
  if (status === 'ACTIVE') scheduleChanged();
  return toSchedule(row);
}

/** `DELETE /schedules/{id}`: the schedule and its tick records go; the tasks it created stay. */
export async function deleteSchedule(db: Db, perms: Permissions, id: string): Promise<Schedule> {
  return db.transaction().execute(async (trx) => {
    const row = await scheduleById(trx, perms, 'run', id, true);
    await trx.deleteFrom('schedules').where('id', '=', id).execute();
    return toSchedule(row);
  });
}

/**
 * `POST /schedules/{id}/trigger`: one run now, with the caller's rights, also while paused. A run
 * that cannot be made (no routable version, a finished task) is refused like the task or event
 * request would be, and leaves no tick behind.
 */
export async function triggerSchedule(db: Db, perms: Permissions, id: string): Promise<ScheduleTick> {
  return db.transaction().execute(async (trx) => {
    const schedule = await scheduleById(trx, perms, 'run', id, true);
    // A manual run's time is now, never a whole second (no cron tick's time); two within one
    // millisecond take the next free one.
    for (let at = Date.now(); ; at++) {
      if (at % 1000 === 0) continue;
      const claimed = await claimTick(trx, schedule.id, new Date(at), 'manual');
      if (!claimed) continue;
      const outcome = await runTick(trx, perms, schedule, claimed);
      return finishTick(trx, schedule, claimed, outcome);
    }
  });
}

// ---- ticks --------------------------------------------------------------------------------------

/** Inserts the tick's row; undefined when it exists (another replica ran it). */
async function claimTick(trx: Trx, scheduleId: string, tickAt: Date, kind: TickKind) {
  return trx
    .insertInto('schedule_ticks')
    .values({ schedule_id: scheduleId, tick_at: tickAt, kind, task_id: null, event_id: null, error: null, created_at: new Date() })
    .onConflict((oc) => oc.columns(['schedule_id', 'tick_at']).doNothing())
    .returningAll()
    .executeTakeFirst();
}

type Outcome = { task_id: string } | { event_id: string };

/** What a tick does: a task on the agent's serving version, or an event to the named task. */
async function runTick(trx: Trx, perms: Permissions, schedule: ScheduleRow, tick: { tick_at: Date; kind: string }): Promise<Outcome> {
  if (schedule.task_name) {
    const task = await namedTaskOf(trx, perms, schedule.agent_id, schedule.task_name);
    const event = await insertEvent(trx, perms, task.id, schedule.event as Content);
    return { event_id: event.id };
  }
  const task = await insertTask(
    trx,
    perms,
    {
      agent_id: schedule.agent_id,
      ...(schedule.branch ? { branch: schedule.branch } : {}),
      params: (schedule.params as Record<string, unknown> | null) ?? null,
    },
    { schedule: { id: schedule.id, tick_at: iso(tick.tick_at), kind: tick.kind } },
  );
  return { task_id: task.id };
}

async function finishTick(
  trx: Trx,
  schedule: ScheduleRow,
  tick: Selectable<ScheduleTicksTable>,
  outcome: Outcome | { error: string },
  /** The schedule's next tick (scheduled runs); a manual run leaves it. */
  nextRunAt?: Date | null,
): Promise<ScheduleTick> {
  const row = await trx
    .updateTable('schedule_ticks')
    .set({
      task_id: 'task_id' in outcome ? outcome.task_id : null,
      event_id: 'event_id' in outcome ? outcome.event_id : null,
      error: 'error' in outcome ? outcome.error : null,
    })
    .where('schedule_id', '=', tick.schedule_id)
    .where('tick_at', '=', tick.tick_at)
    .returningAll()
    .executeTakeFirstOrThrow();
  await trx
    .updateTable('schedules')
    .set({
      last_run_at: tick.tick_at,
      last_error: 'error' in outcome ? outcome.error : null,
      updated_at: new Date(),
      ...(nextRunAt !== undefined ? { next_run_at: nextRunAt } : {}),
    })
    .where('id', '=', schedule.id)
    .execute();
  return toTick(row);
}

/**
 * The rights a scheduled tick runs with: those of the key that created the schedule, as they are
 * now (a revoked or expired key runs nothing). A schedule made without a key (authentication off)
 * runs unrestricted in its org.
 */
async function creatorPermissions(trx: Trx, schedule: ScheduleRow, now: Date): Promise<Permissions> {
  if (!schedule.created_by_key_id) return unrestricted({ keyId: '', orgId: schedule.org_id, name: 'scheduler' });
  const key = await trx
    .selectFrom('api_keys')
    .select(['id', 'org_id', 'name', 'revoked_at', 'expires_at', 'runtime_agent_id'])
    .where('id', '=', schedule.created_by_key_id)
    .executeTakeFirst();
  if (!key || key.revoked_at || (key.expires_at && new Date(key.expires_at) <= now)) {
    throw new DomainError(
      'forbidden',
      'forbidden',
      `The key that created schedule ${schedule.id} was revoked or has expired: create the schedule again with a live key`,
    );
  }
  const actor = { keyId: key.id, orgId: key.org_id, name: key.name, ...(key.runtime_agent_id ? { runtimeAgentId: key.runtime_agent_id } : {}) };
  const groups = await trx.selectFrom('group_members').select('group_id').where('key_id', '=', key.id).execute();
  return new Permissions(
    actor,
    await loadGrants(trx, actor),
    groups.map((g) => g.group_id),
  );
}

/**
 * Runs one due tick of one schedule in a transaction, or passes over the missed ones; false when
 * no schedule was due (or every due one is being handled by another replica).
 */
async function advanceOne(db: Db, now: Date): Promise<ScheduleTick | null | false> {
  return db.transaction().execute(async (trx) => {
    const schedule = await trx
      .selectFrom('schedules')
      .selectAll()
      .where('status', '=', 'ACTIVE')
      .where('next_run_at', '<=', now)
      .orderBy('next_run_at')
      .limit(1)
      .forUpdate()
      .skipLocked()
      .executeTakeFirst();
    if (!schedule) return false;
    const agent = await trx.selectFrom('agents').select('status').where('id', '=', schedule.agent_id).executeTakeFirstOrThrow();
    if (agent.status !== 'ACTIVE') {
      // Its agent was deleted: nothing can run, so it stops rather than failing every tick.
      await trx
        .updateTable('schedules')
        .set({ status: 'PAUSED', next_run_at: null, last_error: 'The agent was deleted', updated_at: now })
        .where('id', '=', schedule.id)
        .execute();
      return null;
    }
    let cron: Cron;
    try {
      cron = parseCron(schedule.cron, schedule.timezone);
    } catch (error) {
      // Accepted when it was made, refused now (a time zone this Node no longer knows): stop, say why.
      const detail = error instanceof ValidationFailure ? error.message : String(error);
      await trx
        .updateTable('schedules')
        .set({ status: 'PAUSED', next_run_at: null, last_error: detail, updated_at: now })
        .where('id', '=', schedule.id)
        .execute();
      return null;
    }
    const due = schedule.next_run_at!;
    const horizon = new Date(now.getTime() - MISSED_TICK_GRACE_MS);
    let tickAt: Date | undefined = due;
    let kind: TickKind = 'scheduled';
    let next = nextTick(cron, due);
    if (due < horizon) {
      // Missed while no server ran: the run (catch-up-one) or none (skip) stands for them all.
      const lastMissed = cron.previousRuns(1, horizon)[0];
      tickAt = schedule.missed === 'catch-up-one' && lastMissed && lastMissed >= due ? lastMissed : undefined;
      kind = 'catch_up';
      next = nextTick(cron, new Date(horizon.getTime() - 1));
    }
    if (!tickAt) {
      await trx.updateTable('schedules').set({ next_run_at: next, updated_at: now }).where('id', '=', schedule.id).execute();
      return null;
    }
    const claimed = await claimTick(trx, schedule.id, tickAt, kind);
    if (!claimed) {
      await trx.updateTable('schedules').set({ next_run_at: next, updated_at: now }).where('id', '=', schedule.id).execute();
      return null;
    }
    // A refusal (no routable version, a finished task, a revoked key) is the tick's recorded error;
    // the savepoint undoes what the failed attempt wrote, and the tick is spent.
    await sql`SAVEPOINT schedule_tick`.execute(trx);
    let outcome: Outcome | { error: string };
    try {
      outcome = await runTick(trx, await creatorPermissions(trx, schedule, now), schedule, claimed);
      await sql`RELEASE SAVEPOINT schedule_tick`.execute(trx);
    } catch (error) {
      if (!(error instanceof DomainError) && !(error instanceof ValidationFailure)) throw error;
      await sql`ROLLBACK TO SAVEPOINT schedule_tick`.execute(trx);
      outcome = { error: error instanceof DomainError ? error.detail : error.message };
    }
    return finishTick(trx, schedule, claimed, outcome, next);
  });
}

/** Ticks run in one pass at most: a long backlog yields to other work between passes. */
const MAX_TICKS_PER_PASS = 100;

/**
 * Runs every tick due at `now` (one transaction each) and answers when the next one is due. What
 * the ticker calls on each wake; tests call it with their own `now`.
 */
export async function runDueTicks(db: Db, now = new Date()): Promise<{ ran: ScheduleTick[]; nextDueAt: Date | null }> {
  const ran: ScheduleTick[] = [];
  for (let i = 0; i < MAX_TICKS_PER_PASS; i++) {
    const tick = await advanceOne(db, now);
    if (tick === false) break;
    if (tick) ran.push(tick);
  }
  const next = await db.selectFrom('schedules').select(sql<Date | null>`min(next_run_at)`.as('at')).where('status', '=', 'ACTIVE').executeTakeFirstOrThrow();
  return { ran, nextDueAt: next.at === null ? null : new Date(next.at) };
}

export interface TickerOptions {
  /** The longest sleep between passes: how soon a schedule made through another replica is seen (default 5 s, under the missed-tick grace). */
  maxSleepMs?: number;
  /** Where a failed pass is reported. */
  log?: (message: string) => void;
}

/**
 * One per server replica: sleeps until the next due tick (at most `maxSleepMs`), runs what is due,
 * and is woken early by schedules created or resumed in this process.
 */
export class ScheduleTicker {
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<void> | undefined;
  private again = false;
  private closed = false;
  private readonly maxSleepMs: number;
  private readonly listener = () => this.wake();

  constructor(
    private readonly db: Db,
    private readonly options: TickerOptions = {},
  ) {
    this.maxSleepMs = options.maxSleepMs ?? 5000;
  }

  start(): void {
    changeListeners.add(this.listener);
    this.wake();
  }

  wake(): void {
    if (this.closed) return;
    if (this.running) {
      this.again = true;
      return;
    }
    clearTimeout(this.timer);
    this.running = this.pass().finally(() => {
      this.running = undefined;
      if (this.again) {
        this.again = false;
        this.wake();
      }
    });
  }

  private async pass(): Promise<void> {
    let delay = this.maxSleepMs;
    try {
      const { ran, nextDueAt } = await runDueTicks(this.db);
      if (nextDueAt) {
        const until = nextDueAt.getTime() - Date.now() + 1;
        // Due but not run here: another replica holds it; look again shortly rather than spin.
        delay = Math.min(this.maxSleepMs, until > 0 ? until : ran.length > 0 ? 0 : 50);
      }
    } catch (error) {
      this.options.log?.(`schedule ticker: ${(error as Error).message}`);
      delay = Math.min(this.maxSleepMs, 1000);
    }
    if (this.closed) return;
    this.timer = setTimeout(() => this.wake(), delay);
  }

  async close(): Promise<void> {
    this.closed = true;
    changeListeners.delete(this.listener);
    clearTimeout(this.timer);
    await this.running;
  }
}
