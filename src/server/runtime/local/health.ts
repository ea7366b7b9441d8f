import type { RuntimeHappening } from '../driver.js';
import { later, type Replica } from './replica.js';

import { probeHealth } from '../../../agent-process/health.js';

export { probeHealth, waitUntilReady } from '../../../agent-process/health.js';

export interface HealthWatch {
  intervalMs: number;
  /** Failed checks in a row that make a ready replica unhealthy. */
  failuresAllowed: number;
  /** False once the process watched is no longer the replica's current one (or the run ends). */
  current(): boolean;
  report(happening: Extract<RuntimeHappening, { kind: 'unhealthy' | 'recovered' }>): void;
}

/** Checks a ready replica every `intervalMs` while it stays current: ready -> unhealthy -> ready. */
export function watchHealth(replica: Replica, watch: HealthWatch) {
  later(replica, watch.intervalMs, async () => {
    if (!watch.current()) return;
    const ok = await probeHealth(replica.port!, Math.min(2_000, watch.intervalMs));
    if (!watch.current()) return;
    if (ok) {
      replica.healthFailures = 0;
      if (replica.phase === 'unhealthy') {
        replica.phase = 'ready';
        watch.report({ kind: 'recovered', replica: replica.index });
      }
    } else if (++replica.healthFailures >= watch.failuresAllowed && replica.phase === 'ready') {
      replica.phase = 'unhealthy';
      watch.report({ kind: 'unhealthy', replica: replica.index, detail: `GET /healthz failed ${replica.healthFailures} times in a row` });
    }
    watchHealth(replica, watch);
  });
}
