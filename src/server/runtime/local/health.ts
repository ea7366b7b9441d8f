import type { RuntimeHappening } from '../driver.js';
import { later, type Replica } from './replica.js';

/** Readiness polling: starts fast (a quick agent is ready within milliseconds), backs off to this. */
const READY_POLL_MAX_MS = 250;

/** GET /healthz on a replica's loopback port: true for a 2xx answer within `timeoutMs`. */
export async function probeHealth(port: number, timeoutMs: number): Promise<boolean> {
  try {
    const response = await fetch(`http://127.0.0.1:${port}/healthz`, { signal: AbortSignal.timeout(timeoutMs) });
    await response.body?.cancel();
    return response.ok;
  } catch {
    return false;
  }
}

/**
 * Polls a starting replica until it answers: `ready`, `timed_out` once `timeoutMs` have passed since
 * `startedAt`, or `gone` as soon as `waiting()` says the process is no longer the one to wait for.
 */
export async function waitUntilReady(port: number, startedAt: number, timeoutMs: number, waiting: () => boolean): Promise<'ready' | 'timed_out' | 'gone'> {
  let delay = 5;
  while (waiting()) {
    if (Date.now() - startedAt > timeoutMs) return 'timed_out';
    if (await probeHealth(port, Math.min(2_000, timeoutMs))) return 'ready';
    await sleep(delay);
    delay = Math.min(delay * 2, READY_POLL_MAX_MS);
  }
  return 'gone';
}

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

const sleep = (ms: number) => new Promise((done) => setTimeout(done, ms));
