/**
 * Refreshes ahead of expiry for the key and grant caches (authenticate.ts, policy.ts): a key in use
 * is looked up again before its entry expires, off the request's path.
 *
 * Started a little later and outside the request's trace: run at once, the lookup's statements went
 * to the database beside the request's own (on PGlite, one session, ahead of them) and its spans into
 * the request's trace. A streamed delta whose key was due paid for it: a quarter to half of the
 * slowest deltas had another statement in them. The entry still counts from the request that found
 * it due, so the one-second revocation bound holds.
 */
import { context, ROOT_CONTEXT } from '@opentelemetry/api';

/** How long a due refresh waits: past the request that found it due, short against the half-second it has. */
export const REFRESH_AHEAD_DELAY_MS = 10;

/** Due refreshes by cache key: one waits or runs per key at a time. */
export class RefreshAhead {
  readonly #due = new Set<string>();

  /** Runs `refresh` for `key` shortly, in no trace, unless one is already due; its failure is the next request's to meet. */
  schedule(key: string, refresh: () => Promise<unknown>): void {
    if (this.#due.has(key)) return;
    this.#due.add(key);
    context.with(ROOT_CONTEXT, () => {
      setTimeout(() => {
        refresh()
          .catch(() => {})
          .finally(() => this.#due.delete(key));
      }, REFRESH_AHEAD_DELAY_MS).unref();
    });
  }
}
