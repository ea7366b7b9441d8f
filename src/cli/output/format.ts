import type { ChalkInstance } from 'chalk';
import type { AgentStatus, TaskStatus, VersionStatus } from '../../contract/lifecycle.js';

export type CellFormat = 'text' | 'status' | 'time' | 'json' | 'bool';

type Tone = 'green' | 'yellow' | 'red' | 'gray';

/**
 * Green for healthy, yellow for in-between, red for failed, grey for gone. Keyed by every status of
 * the contract (lifecycle.ts), so a new status does not compile until it has its colour.
 */
const STATUS_TONE: Record<AgentStatus | TaskStatus | VersionStatus | 'ok', Tone> = {
  ok: 'green',
  ACTIVE: 'green',
  RUNNING: 'green',
  COMPLETED: 'green',
  DEPLOYING: 'yellow',
  DRAINING: 'yellow',
  IDLE: 'yellow',
  UNHEALTHY: 'yellow',
  FAILED: 'red',
  TIMED_OUT: 'red',
  TERMINATED: 'red',
  CANCELED: 'gray',
  DELETED: 'gray',
  RETIRED: 'gray',
  ROLLED_BACK: 'gray',
};

/** Colour for a status word (grey for a word that is no status). */
export function colourStatus(status: string, chalk: ChalkInstance): string {
  return chalk[Object.hasOwn(STATUS_TONE, status) ? STATUS_TONE[status as keyof typeof STATUS_TONE] : 'gray'](status);
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
  const text =
    format === 'json' || (typeof value === 'object' && value !== null) ? JSON.stringify(value) : format === 'bool' ? String(Boolean(value)) : String(value);
  return text.replace(/[\t\r\n]+/g, ' ');
}
