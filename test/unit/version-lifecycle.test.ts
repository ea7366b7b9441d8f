import { describe, expect, test } from 'vitest';
import {
  LIVE_TASK_STATUSES,
  LIVE_VERSION_STATUSES,
  REPORTED_VERSION_STATUSES,
  ROUTABLE_VERSION_STATUSES,
  RUNNING_VERSION_STATUSES,
  SERVING_VERSION_STATUSES,
  SETTABLE_TASK_STATUSES,
  SETTLED_VERSION_STATUSES,
  TASK_STATUSES,
  TERMINAL_TASK_STATUSES,
  VERSION_STATUSES,
  type VersionStatus,
} from '../../src/contract/lifecycle.js';
import { bulkMove, isRefusal, next, refusing, VERSION_HAPPENINGS, type VersionHappening } from '../../src/server/domain/version-lifecycle.js';

const no = 'refused' as const;
type Expected = Record<VersionHappening, Record<VersionStatus, VersionStatus | typeof no>>;

/** Every (status, happening) pair: where the version goes, or `refused`. Read a column as "a version in this status, when ...". */
// prettier-ignore
const EXPECTED: Expected = {
  //               DEPLOYING       ACTIVE              FAILED          UNHEALTHY           DRAINING            RETIRED             ROLLED_BACK
  ready: { DEPLOYING: 'ACTIVE', ACTIVE: 'ACTIVE', FAILED: no, UNHEALTHY: 'ACTIVE', DRAINING: no, RETIRED: no, ROLLED_BACK: no },
  recovered: { DEPLOYING: no, ACTIVE: 'ACTIVE', FAILED: no, UNHEALTHY: 'ACTIVE', DRAINING: no, RETIRED: no, ROLLED_BACK: no },
  unhealthy: { DEPLOYING: no, ACTIVE: 'UNHEALTHY', FAILED: no, UNHEALTHY: 'UNHEALTHY', DRAINING: no, RETIRED: no, ROLLED_BACK: no },
  failed: { DEPLOYING: 'FAILED', ACTIVE: no, FAILED: no, UNHEALTHY: no, DRAINING: no, RETIRED: no, ROLLED_BACK: no },
  runtime_failed: { DEPLOYING: 'FAILED', ACTIVE: 'UNHEALTHY', FAILED: no, UNHEALTHY: 'UNHEALTHY', DRAINING: no, RETIRED: no, ROLLED_BACK: no },
  registered: { DEPLOYING: 'ACTIVE', ACTIVE: 'ACTIVE', FAILED: no, UNHEALTHY: 'UNHEALTHY', DRAINING: 'DRAINING', RETIRED: no, ROLLED_BACK: no },
  superseded: { DEPLOYING: no, ACTIVE: 'DRAINING', FAILED: no, UNHEALTHY: 'DRAINING', DRAINING: no, RETIRED: no, ROLLED_BACK: no },
  drained: { DEPLOYING: no, ACTIVE: no, FAILED: no, UNHEALTHY: no, DRAINING: 'RETIRED', RETIRED: no, ROLLED_BACK: no },
  retired: {
    DEPLOYING: 'RETIRED',
    ACTIVE: 'RETIRED',
    FAILED: 'FAILED',
    UNHEALTHY: 'RETIRED',
    DRAINING: 'RETIRED',
    RETIRED: 'RETIRED',
    ROLLED_BACK: 'ROLLED_BACK',
  },
  rolled_back: { DEPLOYING: 'ROLLED_BACK', ACTIVE: 'ROLLED_BACK', FAILED: no, UNHEALTHY: 'ROLLED_BACK', DRAINING: no, RETIRED: no, ROLLED_BACK: no },
  restored: { DEPLOYING: 'ACTIVE', ACTIVE: 'ACTIVE', FAILED: no, UNHEALTHY: 'ACTIVE', DRAINING: 'ACTIVE', RETIRED: 'ACTIVE', ROLLED_BACK: 'ACTIVE' },
};

describe('version lifecycle: next(status, happening)', () => {
  test('the expected table has a row for every happening and a column for every status', () => {
    expect(Object.keys(EXPECTED).sort()).toEqual([...VERSION_HAPPENINGS].sort());
    for (const row of Object.values(EXPECTED)) expect(Object.keys(row).sort()).toEqual([...VERSION_STATUSES].sort());
  });

  const pairs = VERSION_HAPPENINGS.flatMap((happening) => VERSION_STATUSES.map((status) => [status, happening, EXPECTED[happening][status]] as const));
  test.each(pairs)('%s, %s: %s', (status, happening, expected) => {
    const outcome = next(status, happening);
    if (expected === no) expect(outcome).toEqual({ refused: true, status, happening });
    else expect(outcome).toBe(expected);
  });

  test('a set-wide move (retire, drain) names what it changes and the one status it changes it to', () => {
    expect(bulkMove('retired')).toEqual({ from: ['DEPLOYING', 'ACTIVE', 'UNHEALTHY', 'DRAINING'], to: 'RETIRED' });
    expect(bulkMove('drained')).toEqual({ from: ['DRAINING'], to: 'RETIRED' });
    expect(() => bulkMove('runtime_failed')).toThrow('runtime_failed does not move every status to one: FAILED, UNHEALTHY');
  });

  test('refusing(happening) lists the statuses with no row', () => {
    expect(refusing('restored')).toEqual(['FAILED']);
    expect(refusing('failed')).toEqual(['ACTIVE', 'FAILED', 'UNHEALTHY', 'DRAINING', 'RETIRED', 'ROLLED_BACK']);
  });
});

describe('the status sets (src/contract/lifecycle.ts) agree with the statuses and the transitions', () => {
  const sorted = (list: readonly string[]) => [...list].sort();

  test('a task is live or at an end, never both; every status but DELETED (the type already says so) can be set', () => {
    expect(sorted([...LIVE_TASK_STATUSES, ...TERMINAL_TASK_STATUSES])).toEqual(sorted(TASK_STATUSES));
    expect(sorted([...SETTABLE_TASK_STATUSES, 'DELETED'])).toEqual(sorted(TASK_STATUSES));
  });

  test('version sets: routable, serving and running versions are live; live ones are what a retire changes and where processes register', () => {
    for (const set of [ROUTABLE_VERSION_STATUSES, SERVING_VERSION_STATUSES, RUNNING_VERSION_STATUSES])
      expect(set.every((s) => (LIVE_VERSION_STATUSES as readonly string[]).includes(s))).toBe(true);
    expect(bulkMove('retired').from).toEqual([...LIVE_VERSION_STATUSES]);
    expect(VERSION_STATUSES.filter((s) => !isRefusal(next(s, 'registered')))).toEqual([...LIVE_VERSION_STATUSES]);
    expect(VERSION_STATUSES.filter((s) => next(s, 'superseded') === 'DRAINING')).toEqual([...SERVING_VERSION_STATUSES]);
    expect(sorted([...SETTLED_VERSION_STATUSES, 'DEPLOYING'])).toEqual(sorted(VERSION_STATUSES));
    expect(REPORTED_VERSION_STATUSES.every((s) => (VERSION_STATUSES as readonly string[]).includes(s))).toBe(true);
  });
});
