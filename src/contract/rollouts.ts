/**
 * Safe migrations (issue 22): rollouts (a migration in steps, watched, reverted past a threshold)
 * and the migration history: the schemas (the rules and parsers are in rollout-rules.ts).
 */
import { z } from 'zod';
import { PageQuery, Timestamp } from './common.js';
import {
  MIGRATION_KINDS,
  parseDuration,
  ROLLOUT_DEFAULT_STEPS,
  ROLLOUT_DEFAULT_WATCH,
  ROLLOUT_STATUSES,
  ROLLOUT_WATCH_MAX_MS,
  ROLLOUT_WATCH_MIN_MS,
  stepsProblem,
} from './rollout-rules.js';
export * from './rollout-rules.js';

const Duration = z
  .string()
  .refine((s) => parseDuration(s) !== undefined, 'a duration such as 2s, 5m or 1h')
  .refine((s) => {
    const ms = parseDuration(s) ?? 0;
    return ms >= ROLLOUT_WATCH_MIN_MS && ms <= ROLLOUT_WATCH_MAX_MS;
  }, 'from 1s to 7d');

export const CreateRolloutRequest = z
  .object({
    from_version_id: z.string().min(1),
    to_version_id: z.string().min(1).nullable().default(null),
    to_latest: z.boolean().default(false),
    /** Percentages of the source's tasks on the target after each step, rising, the last 100. */
    steps: z
      .array(z.number().int())
      .max(20)
      .default([...ROLLOUT_DEFAULT_STEPS])
      .superRefine((steps, ctx) => {
        const problem = stepsProblem(steps);
        if (problem) ctx.addIssue({ code: 'custom', message: problem });
      }),
    /** How long each step is watched before the next: `2s`, `5m`, `1h`. */
    watch: Duration.default(ROLLOUT_DEFAULT_WATCH),
    /** The most the moved tasks' error rate may exceed the source's, in percent (2 is 2%). */
    max_error_rate_percent: z.number().min(0).max(100).default(2),
  })
  .meta({ id: 'CreateRolloutRequest' });
export type CreateRolloutRequest = z.infer<typeof CreateRolloutRequest>;

/** How many failed onMigrate hooks a step's figures list (the count is exact). */
export const MIGRATION_FAILURES_SHOWN = 20;

/** One side's figures over a step's window: what was delivered to its tasks, and what went wrong. */
export const RolloutFigures = z.object({
  version_id: z.string(),
  /** Live tasks on the version when the figures were taken. */
  tasks: z.number().int(),
  /** Deliveries (events, task creations) to those tasks in the window. */
  deliveries: z.number().int(),
  /** Handler errors the agent reported (POST /tasks/{id}/handler-errors) in the window, onMigrate's aside. */
  handler_errors: z.number().int(),
  /** Deliveries that failed or timed out (a failed call, an expired completion lease) in the window. */
  delivery_failures: z.number().int(),
  /** Tasks moved to the version in the window whose onMigrate threw (each went back where it came from). */
  migration_errors: z.number().int(),
  /** The first of them (at most MIGRATION_FAILURES_SHOWN), oldest first: the task and its error. */
  migration_failures: z.array(z.object({ task_id: z.string(), message: z.string(), at: Timestamp })),
  /** (handler_errors + delivery_failures + migration_errors) / deliveries, in percent (0 without deliveries). */
  error_rate_percent: z.number(),
});
export type RolloutFigures = z.infer<typeof RolloutFigures>;

export const RolloutStepReport = z.object({
  /** 1, 2, 3, ...: the step's place in `steps`. */
  step: z.number().int(),
  percent: z.number().int(),
  /** Tasks this step moved (its migration record: `migration_id`). */
  moved: z.number().int(),
  migration_id: z.string().nullable(),
  started_at: Timestamp,
  /** When the window closed and the figures decided; null while it is watched. */
  decided_at: Timestamp.nullable(),
  /** `watching` while the window is open; `passed`, or `failed` (the rollout reverted). */
  decision: z.enum(['watching', 'passed', 'failed']),
  target: RolloutFigures.nullable(),
  source: RolloutFigures.nullable(),
  /** The target version's status when decided. */
  target_status: z.string().nullable(),
  reason: z.string().nullable(),
});
export type RolloutStepReport = z.infer<typeof RolloutStepReport>;

export const Rollout = z
  .object({
    id: z.string(),
    branch_id: z.string(),
    agent_id: z.string(),
    from_version_id: z.string(),
    to_version_id: z.string(),
    steps: z.array(z.number().int()),
    watch_ms: z.number().int(),
    max_error_rate_percent: z.number(),
    status: z.enum(ROLLOUT_STATUSES),
    /** 0 before the first step; then the step under way (1-based). */
    step: z.number().int(),
    /** The share of the source's tasks (and of new tasks) on the target now. */
    percent: z.number().int(),
    step_started_at: Timestamp.nullable(),
    /** When the current step's window closes (null when none is open). */
    window_ends_at: Timestamp.nullable(),
    /** Tasks created on the branch during the rollout, and how many of them the ramp sent to the target. */
    new_tasks: z.number().int(),
    new_tasks_to_target: z.number().int(),
    /** Why it stopped (reverted, aborted) or finished. */
    reason: z.string().nullable(),
    report: z.array(RolloutStepReport),
    created_at: Timestamp,
    updated_at: Timestamp,
    finished_at: Timestamp.nullable(),
  })
  .meta({ id: 'Rollout' });
export type Rollout = z.infer<typeof Rollout>;

export const RolloutList = z.object({ rollouts: z.array(Rollout), total: z.number().int() });

export const ListRolloutsQuery = z.object({
  agent_id: z.string().min(1).optional(),
  branch_id: z.string().min(1).optional(),
  status: z.enum(ROLLOUT_STATUSES).optional(),
  limit: PageQuery.limit,
  page_number: PageQuery.page_number,
});

export const MigrationRecord = z
  .object({
    id: z.string(),
    branch_id: z.string(),
    agent_id: z.string(),
    kind: z.enum(MIGRATION_KINDS),
    rollout_id: z.string().nullable(),
    /** The rollout step (1-based) of a `rollout_step`. */
    step: z.number().int().nullable(),
    from_version_ids: z.array(z.string()),
    to_version_id: z.string(),
    count: z.number().int(),
    reason: z.string().nullable(),
    /** The migration an `undo` reversed; and the undo that reversed this one. */
    undoes_id: z.string().nullable(),
    undone_by_id: z.string().nullable(),
    created_at: Timestamp,
    /** Exactly the tasks it moved, each with the version it left (`GET /migrations/{id}` only). */
    moves: z.array(z.object({ task_id: z.string(), from_version_id: z.string() })).optional(),
  })
  .meta({ id: 'MigrationRecord' });
export type MigrationRecord = z.infer<typeof MigrationRecord>;

export const MigrationList = z.object({ migrations: z.array(MigrationRecord), total: z.number().int() });

export const ListMigrationsQuery = z.object({
  agent_id: z.string().min(1).optional(),
  branch_id: z.string().min(1).optional(),
  rollout_id: z.string().min(1).optional(),
  limit: PageQuery.limit,
  page_number: PageQuery.page_number,
});
