import { describe, expect, test } from 'vitest';
import { decodeTime } from 'ulid';
import { newId, ulid } from '../../src/server/store/ids.js';

/** Ids: ULIDs as the `ulid` package writes them (its decoder reads ours), monotonic within a millisecond. */
describe('ids', () => {
  test('an id is its prefix and a 26-character Crockford base32 ULID whose time is the time it was made', () => {
    const before = Date.now();
    const id = newId('task');
    const after = Date.now();
    expect(id).toMatch(/^task_[0-9A-HJKMNP-TV-Z]{26}$/);
    const time = decodeTime(id.slice('task_'.length));
    expect(time).toBeGreaterThanOrEqual(before);
    expect(time).toBeLessThanOrEqual(after);
  });

  test('ids made in the same millisecond sort in the order they were made, the random part counting up by one', () => {
    const at = Date.now() + 60_000;
    const ids = Array.from({ length: 1000 }, () => ulid(at));
    expect(new Set(ids).size).toBe(1000);
    expect([...ids].sort()).toEqual(ids);
    expect(ids.every((id) => decodeTime(id) === at)).toBe(true);
    const last = (id: string) => '0123456789ABCDEFGHJKMNPQRSTVWXYZ'.indexOf(id[25]);
    expect((last(ids[0]) + 1) % 32).toBe(last(ids[1]));
  });

  test('a clock that goes back keeps the last time and keeps counting up', () => {
    const at = Date.now() + 120_000;
    const first = ulid(at);
    const second = ulid(at - 5000);
    expect(decodeTime(second)).toBe(at);
    expect(second > first).toBe(true);
  });

  test('a new millisecond draws a new random part', () => {
    const at = Date.now() + 180_000;
    const a = ulid(at).slice(10);
    const b = ulid(at + 1).slice(10);
    const c = ulid(at + 2).slice(10);
    expect(new Set([a, b, c]).size).toBe(3);
  });
});
