import { usageError } from './errors.js';
import { plural } from '../contract/plural.js';

/**
 * How long a new key lives unless told otherwise: one default for `keys create --scope ...` and the
 * wizard's Expires step (a forgotten CI key should not work forever; `--expires never` says so).
 */
export const DEFAULT_KEY_EXPIRY = '90d';

/** `90d`, `12h`, `2w`, `1y`, an ISO date, or `never`/`none` -> an ISO time or null. */
export function parseExpires(value: string, now = Date.now()): string | null {
  const text = value.trim().toLowerCase();
  if (text === 'never' || text === 'none' || text === '') return null;
  const match = /^(\d+)\s*([hdwy])$/.exec(text);
  if (match) {
    const hours = { h: 1, d: 24, w: 24 * 7, y: 24 * 365 }[match[2] as 'h' | 'd' | 'w' | 'y'];
    const ms = Number(match[1]) * hours * 3600 * 1000;
    if (ms <= 0) throw usageError(`--expires ${value} is not in the future`);
    return new Date(now + ms).toISOString();
  }
  const date = Date.parse(value);
  if (Number.isNaN(date)) throw usageError(`--expires ${value} is not a duration (90d, 12h, 2w, 1y), a date, or never`);
  if (date <= now) throw usageError(`--expires ${value} is in the past`);
  return new Date(date).toISOString();
}

/** When a key expires, for people: `2026-04-01 00:00 UTC (in 90 days)`, or `never`. */
export function describeExpiry(expiresAt: string | null, now = Date.now()): string {
  if (expiresAt === null) return 'never';
  const at = new Date(expiresAt);
  const when = `${at.toISOString().slice(0, 16).replace('T', ' ')} UTC`;
  const hours = Math.round((at.getTime() - now) / 3_600_000);
  return `${when} (in ${hours < 48 ? plural(hours, 'hour') : plural(Math.round(hours / 24), 'day')})`;
}
