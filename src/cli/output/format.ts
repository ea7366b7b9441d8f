import type { ChalkInstance } from 'chalk';

export type CellFormat = 'text' | 'status' | 'time' | 'json' | 'bool';

const GOOD = new Set(['ACTIVE', 'RUNNING', 'COMPLETED', 'ok']);
const BUSY = new Set(['DEPLOYING', 'DRAINING', 'IDLE', 'UNHEALTHY']);
const BAD = new Set(['FAILED', 'TIMED_OUT', 'TERMINATED']);

/** Colour for a status word: green for healthy, yellow for in-between, red for failed, grey for gone. */
export function colourStatus(status: string, chalk: ChalkInstance): string {
  if (GOOD.has(status)) return chalk.green(status);
  if (BUSY.has(status)) return chalk.yellow(status);
  if (BAD.has(status)) return chalk.red(status);
  return chalk.gray(status);
}

const UNITS: [Intl.RelativeTimeFormatUnit, number][] = [
  ['year', 365 * 24 * 3600],
  ['month', 30 * 24 * 3600],
  ['day', 24 * 3600],
  ['hour', 3600],
  ['minute', 60],
  ['second', 1],
];
const relative = new Intl.RelativeTimeFormat('en', { numeric: 'auto', style: 'short' });

/** "3 min. ago", "in 2 days": the human form of an ISO time. */
export function relativeTime(iso: string, now = Date.now()): string {
  const seconds = Math.round((Date.parse(iso) - now) / 1000);
  if (Number.isNaN(seconds)) return iso;
  for (const [unit, size] of UNITS) {
    if (Math.abs(seconds) >= size || unit === 'second') return relative.format(Math.trunc(seconds / size), unit);
  }
  return iso;
}

/** A cell for a person (TTY): colours statuses, relative times. */
export function humanCell(value: unknown, format: CellFormat, chalk: ChalkInstance): string {
  if (value === null || value === undefined || value === '') return chalk.gray('-');
  switch (format) {
    case 'status':
      return colourStatus(String(value), chalk);
    case 'time':
      return relativeTime(String(value));
    case 'json':
      return JSON.stringify(value);
    case 'bool':
      return value ? 'yes' : 'no';
    default:
      return String(value);
  }
}

/** A cell for a pipe: ISO times, no colour, tabs and newlines folded so each row stays one line. */
export function plainCell(value: unknown, format: CellFormat): string {
  if (value === null || value === undefined) return '';
  const text = format === 'json' || (typeof value === 'object' && value !== null) ? JSON.stringify(value) : format === 'bool' ? String(Boolean(value)) : String(value);
  return text.replace(/[\t\r\n]+/g, ' ');
}
