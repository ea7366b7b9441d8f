import type { Store } from '../store/db.js';
import { openLease } from './reconciler.js';

/**
 * Work that runs once across server replicas when no reconciler does (runtime `none`): the same
 * runtime lease, taken by a loop of its own. With a runtime, the reconciler runs it in its passes.
 */
export async function startLeasedLoop(store: Store, work: () => Promise<void>, intervalMs = 2_000): Promise<{ close(): Promise<void> }> {
  const lease = await openLease(store, () => {});
  let closed = false;
  let pass: Promise<void> = Promise.resolve();
  let timer: NodeJS.Timeout | undefined;
  const tick = () => {
    timer = setTimeout(() => {
      pass = (async () => {
        if (!closed && (await lease.hold())) await work();
      })()
        .catch(() => {})
        .finally(() => !closed && tick());
    }, intervalMs);
  };
  tick();
  return {
    async close() {
      closed = true;
      clearTimeout(timer);
      await pass;
      await lease.release();
    },
  };
}
