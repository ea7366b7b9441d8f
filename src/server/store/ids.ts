import { randomFillSync } from 'node:crypto';
import { monotonicFactory } from 'ulid';
import { ID_PREFIXES } from '../../contract/common.js';

/**
 * ulid's own generator draws each of an id's 16 random characters with its own
 * crypto.getRandomValues call: ~40 µs an id on a quiet machine whenever the millisecond changed (the
 * request id of every request that is not part of a burst, a streamed delta's included). This one
 * draws the same CSPRNG bytes 4 KiB at a time; each byte picks one of ulid's 32 characters, as
 * ulid's draw does (byte / 256).
 */
const pool = new Uint8Array(4096);
let next = pool.length;
function pooledRandom(): number {
  if (next === pool.length) {
    randomFillSync(pool);
    next = 0;
  }
  return pool[next++]! / 256;
}

/** A monotonic ULID: ids made in one process sort in the order they were made. */
export const ulid = monotonicFactory(pooledRandom);

/** A prefixed, time-sortable id: `task_01J...`. */
export function newId(kind: keyof typeof ID_PREFIXES): string {
  return ID_PREFIXES[kind] + ulid();
}
