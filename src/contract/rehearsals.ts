/**
 * Rehearsals (issue 22, README "Versions and migration"): a task's recorded events replayed on
 * another version in a shadow task, and the report that compares the two.
 */
import { z } from 'zod';
import { Timestamp } from './common.js';
import { MessageContent } from './conversation.js';

/** The most events replayed per task (`max_events`); a task with more is replayed up to it, and says so. */
export const REHEARSAL_MAX_EVENTS = { default: 1000, max: 10_000 } as const;
/** The most tasks one rehearsal replays (`sample` picks fewer at random). */
export const REHEARSAL_MAX_TASKS = 1000;
/** How long a shadow's handler may take on one event before it counts as a timeout (ms). */
export const REHEARSAL_EVENT_TIMEOUT_MS = { default: 30_000, min: 1000, max: 600_000 } as const;
/** How long shadow tasks are kept after a rehearsal completes, then deleted (the report stays). */
export const REHEARSAL_RETENTION_HOURS = { default: 24, max: 24 * 30 } as const;

export const REHEARSAL_STATUSES = ['running', 'completed'] as const;
export const REGRESSION_KINDS = ['handler_error', 'timeout', 'failed'] as const;

export const CreateRehearsalRequest = z
  .object({
    /** Rehearse the RUNNING and IDLE tasks of this version ... */
    from_version_id: z.string().min(1).nullable().default(null),
    /** ... or these tasks (one agent). */
    task_ids: z.array(z.string().min(1)).min(1).max(REHEARSAL_MAX_TASKS).nullable().default(null),
    /** The version the shadows run on (the migration's target). */
    to_version_id: z.string().min(1),
    /** Replay this many of the chosen tasks, picked at random. */
    sample: z.number().int().min(1).max(REHEARSAL_MAX_TASKS).nullable().default(null),
    max_events: z.number().int().min(1).max(REHEARSAL_MAX_EVENTS.max).default(REHEARSAL_MAX_EVENTS.default),
    /** Replay the events from this sequence_id on (the shadow starts from a copy of the task's current state); default: all, from the task's creation. */
    from_sequence: z.number().int().min(0).nullable().default(null),
    event_timeout_ms: z.number().int().min(REHEARSAL_EVENT_TIMEOUT_MS.min).max(REHEARSAL_EVENT_TIMEOUT_MS.max).default(REHEARSAL_EVENT_TIMEOUT_MS.default),
    retention_hours: z.number().int().min(1).max(REHEARSAL_RETENTION_HOURS.max).default(REHEARSAL_RETENTION_HOURS.default),
  })
  .meta({ id: 'CreateRehearsalRequest' });
export type CreateRehearsalRequest = z.infer<typeof CreateRehearsalRequest>;

/** One message that differs: `text_diff` for two texts (lines: `-` original, `+` rehearsal, ` ` both); other parts compare as JSON. */
export const MessageDifference = z
  .object({
    index: z.number().int(),
    original: MessageContent.nullable(),
    rehearsal: MessageContent.nullable(),
    text_diff: z.array(z.string()).nullable(),
  })
  .meta({ id: 'MessageDifference' });
export type MessageDifference = z.infer<typeof MessageDifference>;

/** One side of an event's replay. */
const EventOutcome = z.object({
  /** From the delivery's turn (enqueued, or its predecessor done) to its handler done; null when it did not finish. */
  latency_ms: z.number().nullable(),
  handler_error: z.string().nullable(),
});

export const RehearsedEvent = z
  .object({
    /** 1, 2, ... in replay order; 0 is the task's creation (onCreate). */
    position: z.number().int(),
    /** The original's event (null for the creation). */
    event_id: z.string().nullable(),
    sequence_id: z.number().int().nullable(),
    /** What the event said, in short. */
    summary: z.string(),
    original: EventOutcome,
    rehearsal: EventOutcome.extend({ timed_out: z.boolean() }),
    differences: z.array(MessageDifference),
  })
  .meta({ id: 'RehearsedEvent' });
export type RehearsedEvent = z.infer<typeof RehearsedEvent>;

/** A path whose value differs; a side is absent where the path is missing there. */
export const StateDifference = z
  .object({ path: z.string(), original: z.unknown().optional(), rehearsal: z.unknown().optional() })
  .meta({ id: 'StateDifference' });
export type StateDifference = z.infer<typeof StateDifference>;

export const Regression = z
  .object({
    kind: z.enum(REGRESSION_KINDS),
    position: z.number().int(),
    event_id: z.string().nullable(),
    detail: z.string(),
  })
  .meta({ id: 'Regression' });
export type Regression = z.infer<typeof Regression>;

export const RehearsalTask = z
  .object({
    task_id: z.string(),
    task_name: z.string().nullable(),
    shadow_task_id: z.string().nullable(),
    status: z.enum(['running', 'done']),
    /** How the shadow started: what it copied, what it replays. */
    start: z.string(),
    events_total: z.number().int(),
    events_planned: z.number().int(),
    events_replayed: z.number().int(),
    /** Set when the task has more events than max_events: what was left out. */
    truncated: z.string().nullable(),
    /** Set when nothing was replayed, and why. */
    skipped: z.string().nullable(),
    events: z.array(RehearsedEvent),
    state_diff: z.array(StateDifference),
    regressions: z.array(Regression),
  })
  .meta({ id: 'RehearsalTask' });
export type RehearsalTask = z.infer<typeof RehearsalTask>;

export const RehearsalTotals = z.object({
  tasks: z.number().int(),
  tasks_done: z.number().int(),
  events_planned: z.number().int(),
  events_replayed: z.number().int(),
  handler_errors: z.number().int(),
  timeouts: z.number().int(),
  message_differences: z.number().int(),
  state_differences: z.number().int(),
  tasks_with_regressions: z.number().int(),
  truncated_tasks: z.number().int(),
  skipped_tasks: z.number().int(),
  /** Mean handler latency per event on each side, over the events both finished (ms). */
  original_mean_latency_ms: z.number().nullable(),
  rehearsal_mean_latency_ms: z.number().nullable(),
});

export const Rehearsal = z
  .object({
    id: z.string(),
    agent_id: z.string(),
    from_version_id: z.string().nullable(),
    to_version_id: z.string(),
    status: z.enum(REHEARSAL_STATUSES),
    from_sequence: z.number().int().nullable(),
    max_events: z.number().int(),
    /** True once completed with at least one regression (a handler error, timeout or failure the original did not have). */
    regressions_found: z.boolean(),
    /** True when any message or the final state differs. */
    differences_found: z.boolean(),
    totals: RehearsalTotals,
    tasks: z.array(RehearsalTask),
    created_at: Timestamp,
    completed_at: Timestamp.nullable(),
    /** When the shadow tasks are deleted (the report stays). */
    expires_at: Timestamp,
  })
  .meta({ id: 'Rehearsal' });
export type Rehearsal = z.infer<typeof Rehearsal>;
