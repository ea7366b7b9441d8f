/**
 * How a version moves between its statuses: one table, one pure function. Every place that changes
 * a version's status asks `next(status, happening)` and writes the answer (guarded by the status it
 * read), or, for a set-wide UPDATE, takes `bulkMove(happening)`. Something new that can happen to a
 * version (the runtime's, say) is a new row here; the table-driven test
 * (test/unit/version-lifecycle.test.ts) lists every (status, happening) pair.
 */
import { VERSION_STATUSES, type VersionStatus } from '../../contract/lifecycle.js';

export const VERSION_HAPPENINGS = [
  /** A replica reports ready (`POST /versions/register` with status ACTIVE; the runtime saw it ready). */
  'ready',
  /** The runtime: every replica passes its health checks again. */
  'recovered',
  /** Failing health checks (reported UNHEALTHY, or seen by the runtime). */
  'unhealthy',
  /** Reported FAILED: it could not start. */
  'failed',
  /** The runtime gave up starting it (crash loop, start timeout, image pull, ...). */
  'runtime_failed',
  /** An agent process registered with a registration token. */
  'registered',
  /** A newer version of the branch became ACTIVE: the one serving hands over. */
  'superseded',
  /** The last live task left a DRAINING version. */
  'drained',
  /** Its branch was retired, or its agent deleted. */
  'retired',
  /** It was the branch's current version, and the branch was rolled back. */
  'rolled_back',
  /** It is the version a rollback returns to. */
  'restored',
] as const;
export type VersionHappening = (typeof VERSION_HAPPENINGS)[number];

/** The happening does not apply to a version in that status; callers turn it into their own 409. */
export interface Refusal {
  refused: true;
  status: VersionStatus;
  happening: VersionHappening;
}

type Row = Partial<Record<VersionStatus, VersionStatus>>;
const everyStatusBut = (excluded: VersionStatus[], to: VersionStatus): Row =>
  Object.fromEntries(VERSION_STATUSES.filter((s) => !excluded.includes(s)).map((s) => [s, to]));

/**
 * For each happening: from each status it applies to, the status it leads to (the same one: it
 * applies, nothing changes). A status not listed refuses the happening.
 */
export const VERSION_TRANSITIONS: Record<VersionHappening, Row> = {
  ready: { DEPLOYING: 'ACTIVE', UNHEALTHY: 'ACTIVE', ACTIVE: 'ACTIVE' },
  recovered: { UNHEALTHY: 'ACTIVE', ACTIVE: 'ACTIVE' },
  unhealthy: { ACTIVE: 'UNHEALTHY', UNHEALTHY: 'UNHEALTHY' },
  failed: { DEPLOYING: 'FAILED' },
  // A serving version that cannot start (a rollback target) is unhealthy; the runtime tries again.
  runtime_failed: { DEPLOYING: 'FAILED', ACTIVE: 'UNHEALTHY', UNHEALTHY: 'UNHEALTHY' },
  // A process of an UNHEALTHY or DRAINING version registers without changing it.
  registered: { DEPLOYING: 'ACTIVE', ACTIVE: 'ACTIVE', UNHEALTHY: 'UNHEALTHY', DRAINING: 'DRAINING' },
  superseded: { ACTIVE: 'DRAINING', UNHEALTHY: 'DRAINING' },
  drained: { DRAINING: 'RETIRED' },
  // FAILED, ROLLED_BACK and RETIRED versions keep their status.
  retired: {
    DEPLOYING: 'RETIRED',
    ACTIVE: 'RETIRED',
    UNHEALTHY: 'RETIRED',
    DRAINING: 'RETIRED',
    FAILED: 'FAILED',
    ROLLED_BACK: 'ROLLED_BACK',
    RETIRED: 'RETIRED',
  },
  rolled_back: { DEPLOYING: 'ROLLED_BACK', ACTIVE: 'ROLLED_BACK', UNHEALTHY: 'ROLLED_BACK' },
  // Its image is kept: any version but a FAILED one can serve again.
  restored: everyStatusBut(['FAILED'], 'ACTIVE'),
};

/** The status a version in `status` moves to when `happening` happens, or a refusal. */
export function next(status: VersionStatus, happening: VersionHappening): VersionStatus | Refusal {
  return VERSION_TRANSITIONS[happening][status] ?? { refused: true, status, happening };
}

export function isRefusal(outcome: VersionStatus | Refusal): outcome is Refusal {
  return typeof outcome === 'object';
}

/** The statuses that refuse `happening`. */
export function refusing(happening: VersionHappening): VersionStatus[] {
  return VERSION_STATUSES.filter((s) => isRefusal(next(s, happening)));
}

/**
 * For a set-wide UPDATE (`SET status = to WHERE status IN from`): the statuses `happening` changes,
 * and the one status it changes them all to.
 */
export function bulkMove(happening: VersionHappening): { from: VersionStatus[]; to: VersionStatus } {
  const from = VERSION_STATUSES.filter((s) => {
    const to = next(s, happening);
    return !isRefusal(to) && to !== s;
  });
  const targets = new Set(from.map((s) => next(s, happening) as VersionStatus));
  if (targets.size !== 1) throw new Error(`${happening} does not move every status to one: ${[...targets].join(', ')}`);
  return { from, to: [...targets][0] };
}
