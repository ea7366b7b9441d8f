// Readiness of an agent process (GET /healthz on its PORT): the local runtime's and `agentctl dev`'s.

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
export async function waitUntilReady(
  port: number,
  startedAt: number,
  timeoutMs: number,
  waiting: () => boolean,
  maxDelayMs = READY_POLL_MAX_MS,
): Promise<'ready' | 'timed_out' | 'gone'> {
  let delay = 5;
  while (waiting()) {
    if (Date.now() - startedAt > timeoutMs) return 'timed_out';
    if (await probeHealth(port, Math.min(2_000, timeoutMs))) return 'ready';
    await sleep(delay);
    delay = Math.min(delay * 2, maxDelayMs);
  }
  return 'gone';
}

const sleep = (ms: number) => new Promise((done) => setTimeout(done, ms));
