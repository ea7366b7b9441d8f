import { randomFillSync } from 'node:crypto';
import { ID_PREFIXES } from '../../contract/common.js';

/** Crockford's base32, as ULIDs are written. */
const ALPHABET = '0123456789ABCDEFGHJKMNPQRSTVWXYZ';
const TIME_CHARS = 10;
const RANDOM_CHARS = 16;
/** Random bytes drawn at once: one getrandom call per 256 ids rather than the `ulid` package's one per character. */
const POOL_BYTES = RANDOM_CHARS * 256;

const pool = new Uint8Array(POOL_BYTES);
let poolAt = POOL_BYTES;
let lastTime = -1;
/** The last id's random part, one base32 digit (0..31) per character. */
const lastRandom = new Uint8Array(RANDOM_CHARS);

function encodeTime(ms: number): string {
  let out = '';
  for (let i = TIME_CHARS - 1; i >= 0; i--) {
    const mod = ms % 32;
    out = ALPHABET[mod] + out;
    ms = (ms - mod) / 32;
  }
  return out;
}

/**
 * A monotonic ULID (the `ulid` package's monotonicFactory, same text and order): 48 bits of
 * milliseconds, then 80 random bits, which within one millisecond (or a clock that went back) are the
 * previous id's plus one, so ids made in one process sort in the order they were made.
 */
export function ulid(now = Date.now()): string {
  if (now <= lastTime) {
    // Increment the base32 number; 80 bits do not overflow in one millisecond.
    let i = RANDOM_CHARS - 1;
    while (i >= 0 && lastRandom[i] === 31) lastRandom[i--] = 0;
    if (i < 0) throw new Error('ULID random part overflowed within one millisecond');
    lastRandom[i]++;
  } else {
    lastTime = now;
    if (poolAt + RANDOM_CHARS > POOL_BYTES) {
      randomFillSync(pool);
      poolAt = 0;
    }
    // 5 bits from each byte: each digit uniform over 0..31, as the package's randomChar draws them.
    for (let i = 0; i < RANDOM_CHARS; i++) lastRandom[i] = pool[poolAt++] & 31;
  }
  let random = '';
  for (let i = 0; i < RANDOM_CHARS; i++) random += ALPHABET[lastRandom[i]];
  return encodeTime(lastTime) + random;
}

/** A prefixed, time-sortable id: `task_01J...`. */
export function newId(kind: keyof typeof ID_PREFIXES): string {
  return ID_PREFIXES[kind] + ulid();
}
