// Schedules (README "Schedules"): a cron expression on an agent; each tick creates a task, or sends
// an event to a named long-lived task. One tick record per (schedule, tick time) makes each tick run
// once across server replicas and restarts.
import { z } from 'zod';
import { JsonObject, NonBlank, PageQuery, Timestamp } from './common.js';
import { Content, ContentInput } from './conversation.js';
import { DEFAULT_MISSED_TICK_POLICY, MISSED_TICK_POLICIES, SCHEDULE_STATUSES, SCHEDULE_TICK_KINDS } from './enums.js';

export const ScheduleStatus = z.enum(SCHEDULE_STATUSES);
export type ScheduleStatus = z.infer<typeof ScheduleStatus>;
export const MissedTickPolicy = z.enum(MISSED_TICK_POLICIES);
export type MissedTickPolicy = z.infer<typeof MissedTickPolicy>;

/** One run of a schedule: the task it created or the event it sent, or why it could not. */
export const ScheduleTick = z
  .object({
    schedule_id: z.string(),
    /** The cron time this run stands for (for `manual`: when it was asked for). */
    tick_at: Timestamp,
    kind: z.enum(SCHEDULE_TICK_KINDS),
    task_id: z.string().nullable(),
    event_id: z.string().nullable(),
    /** Set when the run could not create its task or send its event (no routable version, a finished task). */
    error: z.string().nullable(),
    created_at: Timestamp,
  })
  .meta({ id: 'ScheduleTick' });
export type ScheduleTick = z.infer<typeof ScheduleTick>;

export const Schedule = z
  .object({
    id: z.string(),
    agent_id: z.string(),
    namespace_id: z.string(),
    name: z.string().nullable(),
    /** Five fields (minute ... day of week), or six with seconds first. */
    cron: z.string(),
    /** IANA time zone the cron expression is read in. */
    timezone: z.string(),
    /** The git branch whose serving version gets the tasks (null: the production environment's). */
    branch: z.string().nullable(),
    /** Parameters of each task it creates (null when it sends events). */
    params: JsonObject.nullable(),
    /** The long-lived task each tick sends `event` to, by name (null when it creates tasks). */
    task_name: z.string().nullable(),
    event: Content.nullable(),
    missed: MissedTickPolicy,
    status: ScheduleStatus,
    /** The next tick to run (null while PAUSED). */
    next_run_at: Timestamp.nullable(),
    last_run_at: Timestamp.nullable(),
    /** The error of the last run, if it failed. */
    last_error: z.string().nullable(),
    created_at: Timestamp,
    updated_at: Timestamp,
    /** `GET /schedules/{id}` only: the most recent runs, newest first. */
    recent_ticks: z.array(ScheduleTick).optional(),
  })
  .meta({ id: 'Schedule' });
export type Schedule = z.infer<typeof Schedule>;

export const CreateScheduleRequest = z
  .object({
    agent_id: z.string().min(1).optional(),
    /** `namespace/agent` or a bare agent name in the `default` namespace. */
    agent_name: z.string().min(1).max(130).optional(),
    name: NonBlank(255).nullable().optional(),
    cron: z.string().min(1).max(255),
    timezone: z.string().min(1).max(64).default('UTC'),
    branch: z.string().min(1).max(255).nullable().optional(),
    params: JsonObject.nullable().optional(),
    task_name: NonBlank(255).nullable().optional(),
    event: ContentInput.nullable().optional(),
    missed: MissedTickPolicy.default(DEFAULT_MISSED_TICK_POLICY),
  })
  .meta({ id: 'CreateScheduleRequest' });
export type CreateScheduleRequest = z.output<typeof CreateScheduleRequest>;

export const ListSchedulesQuery = z.object({
  agent_id: z.string().min(1).optional(),
  /** `namespace/name` or a bare name in `default`. */
  agent: z.string().min(1).max(130).optional(),
  status: ScheduleStatus.optional(),
  limit: PageQuery.limit,
  page_number: PageQuery.page_number,
});
export type ListSchedulesQuery = z.output<typeof ListSchedulesQuery>;

export const ScheduleList = z.object({ schedules: z.array(Schedule), total: z.number().int() });
