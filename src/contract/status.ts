// `GET /status` (README "Status"): where things stand, in one answer, for `agentctl status`. Only what
// the caller's key may read is in it: tasks, deliveries and failures of the agents it may read.
import { z } from 'zod';
import { Timestamp, VersionStatus } from './common.js';
import { TASK_STATUSES } from './lifecycle.js';

const FailureDiagnostics = z.object({ title: z.string(), description: z.string(), action: z.string() });

/** A version as the status screen shows it. */
export const StatusVersion = z.object({
  id: z.string(),
  number: z.number().int(),
  status: VersionStatus,
  git_hash: z.string(),
  deployed_at: Timestamp,
  /** Replicas asked for at deploy. */
  replicas: z.number().int(),
  /** Replicas registered and live now. */
  live_replicas: z.number().int(),
});
export type StatusVersion = z.infer<typeof StatusVersion>;

export const StatusBranch = z.object({
  id: z.string(),
  git_branch: z.string(),
  /** The version new tasks go to: the newest ACTIVE, else UNHEALTHY, else DEPLOYING one (null: none). */
  serving: StatusVersion.nullable(),
  /** Versions still coming up (DEPLOYING) or draining their tasks (DRAINING), newest first. */
  in_progress: z.array(StatusVersion.extend({ tasks: z.number().int() })),
});

export const StatusAgent = z.object({
  id: z.string(),
  name: z.string(),
  namespace_slug: z.string(),
  branches: z.array(StatusBranch),
});

/** A rollout in progress (RUNNING or PAUSED; `agentctl rollouts`): where it stands, e.g. `step 1 of 3 (10%)`. */
export const StatusRollout = z.object({
  id: z.string(),
  branch_id: z.string(),
  from_version_id: z.string().nullable(),
  to_version_id: z.string(),
  step: z.string(),
  started_at: Timestamp,
});

export const StatusReport = z
  .object({
    server: z.object({
      version: z.string(),
      engine: z.enum(['pglite', 'postgres']),
      /** The server's clock when it answered. */
      time: Timestamp,
    }),
    /** The agent asked for (`agent=`), or null. */
    agent: StatusAgent.nullable(),
    /** Non-deleted tasks by status: of the agent, else of every agent the key may read. */
    tasks: z.object(Object.fromEntries(TASK_STATUSES.filter((s) => s !== 'DELETED').map((s) => [s, z.number().int()])) as Record<string, z.ZodNumber>),
    rollouts: z.array(StatusRollout),
    deliveries: z.object({
      /** Waiting to be sent, or being sent. */
      pending: z.number().int(),
      /** Sent and acknowledged by an agent whose handler has not finished. */
      leased: z.number().int(),
      /** The oldest open one: when it was made, and its age when the server answered. */
      oldest_created_at: Timestamp.nullable(),
      oldest_age_ms: z.number().int().nullable(),
    }),
    failures: z.object({
      /** The most recent FAILED versions, with what went wrong and what to do. */
      versions: z.array(
        z.object({
          id: z.string(),
          number: z.number().int(),
          agent_id: z.string(),
          git_branch: z.string(),
          failure_reason: z.string().nullable(),
          failure_diagnostics: FailureDiagnostics.nullable(),
          deployed_at: Timestamp,
        }),
      ),
      /** The most recent handler errors agents reported. */
      handler_errors: z.array(
        z.object({
          task_id: z.string(),
          message_id: z.string(),
          handler: z.string(),
          message: z.string(),
          created_at: Timestamp,
        }),
      ),
      /** The most recent FAILED tasks, with their reason. */
      tasks: z.array(z.object({ id: z.string(), name: z.string().nullable(), status_reason: z.string().nullable(), updated_at: Timestamp })),
    }),
  })
  .meta({ id: 'StatusReport' });
export type StatusReport = z.infer<typeof StatusReport>;

export const StatusQuery = z.object({
  /** `namespace/name`, a bare name in `default`, or an agt_ id. */
  agent: z.string().min(1).max(130).optional(),
});

/** How many of each kind of failure the report lists. */
export const STATUS_FAILURES_LIMIT = 5;
