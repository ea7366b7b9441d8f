/**
 * The statuses of versions, tasks and agents, and the sets built from them: plain constants, no
 * zod, so the CLI reads them without loading the schemas. The zod enums (common.ts), the SQL, the
 * store's table types, the CLI's choices and its wait loop all take them from here. How a version
 * moves between its statuses is src/server/domain/version-lifecycle.ts.
 */

export const VERSION_STATUSES = ['DEPLOYING', 'ACTIVE', 'FAILED', 'UNHEALTHY', 'DRAINING', 'RETIRED', 'ROLLED_BACK'] as const;
export type VersionStatus = (typeof VERSION_STATUSES)[number];

/** A new version's status, until its runtime reports it ready or failed. */
export const NEW_VERSION_STATUS = 'DEPLOYING' satisfies VersionStatus;
/** Where a task can be routed (and moved), in order of preference: the newest ACTIVE version of its branch, else the newest DEPLOYING. */
export const ROUTABLE_VERSION_STATUSES = ['ACTIVE', 'DEPLOYING'] as const satisfies readonly VersionStatus[];
/** A version that serves its branch (or did, until something replaced it). */
export const SERVING_VERSION_STATUSES = ['ACTIVE', 'UNHEALTHY'] as const satisfies readonly VersionStatus[];
/** A version whose processes run; a DRAINING one runs too while a task still runs on it. */
export const RUNNING_VERSION_STATUSES = ['DEPLOYING', 'ACTIVE', 'UNHEALTHY'] as const satisfies readonly VersionStatus[];
/** Not yet at an end: a version that may still run processes (and that retiring its branch retires). */
export const LIVE_VERSION_STATUSES = ['DEPLOYING', 'ACTIVE', 'UNHEALTHY', 'DRAINING'] as const satisfies readonly VersionStatus[];
/** What a runtime (or a person) reports about a version (`POST /versions/register`, `versions register --status`). */
export const REPORTED_VERSION_STATUSES = ['ACTIVE', 'UNHEALTHY', 'FAILED'] as const satisfies readonly VersionStatus[];
/** Where a deploy has settled: every status but the new version's (what `deploy` and `rollback` wait for). */
export const SETTLED_VERSION_STATUSES = VERSION_STATUSES.filter((s): s is Exclude<VersionStatus, typeof NEW_VERSION_STATUS> => s !== NEW_VERSION_STATUS);

export const TASK_STATUSES = ['IDLE', 'CANCELED', 'COMPLETED', 'FAILED', 'RUNNING', 'TERMINATED', 'TIMED_OUT', 'DELETED'] as const;
export type TaskStatus = (typeof TASK_STATUSES)[number];

/** A new task's status. */
export const NEW_TASK_STATUS = 'RUNNING' satisfies TaskStatus;
/** Statuses from which a task never comes back. */
export const TERMINAL_TASK_STATUSES = ['CANCELED', 'COMPLETED', 'FAILED', 'TERMINATED', 'TIMED_OUT', 'DELETED'] as const satisfies readonly TaskStatus[];
/** The others: a live task, which keeps a DRAINING version running and can migrate. */
export const LIVE_TASK_STATUSES = ['RUNNING', 'IDLE'] as const satisfies readonly TaskStatus[];
/** What `PATCH /tasks/{id}` may set: every status but DELETED (that is `DELETE /tasks/{id}`). */
export const SETTABLE_TASK_STATUSES = [
  'RUNNING',
  'IDLE',
  'COMPLETED',
  'FAILED',
  'CANCELED',
  'TERMINATED',
  'TIMED_OUT',
] as const satisfies readonly TaskStatus[];

export const AGENT_STATUSES = ['ACTIVE', 'DELETED'] as const;
export type AgentStatus = (typeof AGENT_STATUSES)[number];
/** A live agent; a DELETED one is kept for its history, and frees its name. */
export const LIVE_AGENT_STATUS = 'ACTIVE' satisfies AgentStatus;

/** Whether `status` is one of `set` (narrowing it), for sets typed as tuples of literals. */
export function isIn<S extends string>(set: readonly S[], status: string | null | undefined): status is S {
  return (set as readonly (string | null | undefined)[]).includes(status);
}

/** Whether a task has ended: it takes no more changes, events or messages, and its stream ends. */
export const isTerminalTask = (status: string | null | undefined): status is (typeof TERMINAL_TASK_STATUSES)[number] => isIn(TERMINAL_TASK_STATUSES, status);
