import type { Db } from '../store/db.js';

/**
 * Local invalidation of the key and grant caches, so that a process's own access changes apply to
 * its next request at once (other replicas catch up within the one-second cache bound).
 */

const generations = new WeakMap<Db, number>();

/** Bumped after every committed change to keys, scopes, groups or memberships made through `db`. */
export const generationOf = (db: Db): number => generations.get(db) ?? 0;

/** Call after the transaction that changed access has committed: every cached key and grant set of `db` is dropped. */
export function accessChanged(db: Db): void {
  generations.set(db, generationOf(db) + 1);
}

/**
 * Grants written inside a transaction that may not have committed yet (the owner grants on a new
 * agent or project). Until a load of an affected key sees all of them, its permissions are read
 * from the database on every request rather than cached: a load racing the commit would otherwise
 * cache the key without its new grant. A marker whose transaction rolled back expires.
 */
const UNSETTLED_EXPIRY_MS = 60_000;
const unsettled = new Map<string, { grantIds: Set<string>; since: number }>();

export function markUnsettled(keyIds: Iterable<string>, grantIds: string[]): void {
  const now = Date.now();
  for (const keyId of keyIds) {
    const entry = unsettled.get(keyId);
    if (entry && now - entry.since < UNSETTLED_EXPIRY_MS) {
      for (const id of grantIds) entry.grantIds.add(id);
      entry.since = now;
    } else {
      unsettled.set(keyId, { grantIds: new Set(grantIds), since: now });
    }
  }
}

export function hasUnsettledGrants(keyId: string): boolean {
  const entry = unsettled.get(keyId);
  if (!entry) return false;
  if (Date.now() - entry.since >= UNSETTLED_EXPIRY_MS) {
    unsettled.delete(keyId);
    return false;
  }
  return true;
}

/** True (and the marker is dropped) when `loadedGrantIds` include every grant awaiting commit for the key. */
export function settleGrants(keyId: string, loadedGrantIds: string[]): boolean {
  const entry = unsettled.get(keyId);
  if (!entry) return true;
  const loaded = new Set(loadedGrantIds);
  for (const id of entry.grantIds) if (!loaded.has(id)) return false;
  unsettled.delete(keyId);
  return true;
}
