/**
 * The rules of rollouts and the migration history, zod-free so the CLI loads them at start-up
 * (src/contract/rollouts.ts has the schemas): statuses, kinds, and the one parser of each of
 * `--watch 5m`, `--max-error-rate 2%` and `--steps 10,50,100`, used by the CLI and the server alike.
 */
export const ROLLOUT_STATUSES = ['RUNNING', 'PAUSED', 'SUCCEEDED', 'REVERTED', 'ABORTED'] as const;
export type RolloutStatus = (typeof ROLLOUT_STATUSES)[number];
/** A rollout in these holds its source: one per source version (409 `rollout_in_progress`). */
export const ACTIVE_ROLLOUT_STATUSES = ['RUNNING', 'PAUSED'] as const satisfies readonly RolloutStatus[];
/** `migrate`: `tasks migrate`; `rollout_step`: a step of a rollout; `revert`: a rollout moved its tasks back; `undo`: `migrations undo`. */
export const MIGRATION_KINDS = ['migrate', 'rollout_step', 'revert', 'undo'] as const;
export type MigrationKind = (typeof MIGRATION_KINDS)[number];

export const ROLLOUT_WATCH_MIN_MS = 1_000;
export const ROLLOUT_WATCH_MAX_MS = 7 * 24 * 3_600_000;
export const ROLLOUT_DEFAULT_STEPS = [10, 50, 100] as const;
export const ROLLOUT_DEFAULT_WATCH = '5m';
export const ROLLOUT_DEFAULT_MAX_ERROR_RATE = '2%';

const UNITS: Record<string, number> = { ms: 1, s: 1_000, m: 60_000, h: 3_600_000, d: 86_400_000 };

/** `500ms`, `2s`, `5m`, `1h`, `1d`, `1m30s` -> milliseconds; undefined when it is not a duration. */
export function parseDuration(text: string): number | undefined {
  const trimmed = text.trim();
  if (!/^(\d+(\.\d+)?(ms|s|m|h|d))+$/.test(trimmed)) return undefined;
  let total = 0;
  for (const [, n, , unit] of trimmed.matchAll(/(\d+(\.\d+)?)(ms|s|m|h|d)/g)) total += Number(n) * UNITS[unit];
  return Math.round(total);
}

/** `5m` from 300000; `1m30s`; `2s`; `750ms`. */
export function formatDuration(ms: number): string {
  if (ms < 1000) return `${ms}ms`;
  const parts: string[] = [];
  let rest = Math.round(ms / 1000);
  for (const [unit, size] of [
    ['d', 86_400],
    ['h', 3_600],
    ['m', 60],
    ['s', 1],
  ] as const) {
    if (rest >= size) {
      parts.push(`${Math.floor(rest / size)}${unit}`);
      rest %= size;
    }
  }
  return parts.join('');
}

/** `2%`, `0.5%` or `2` -> the percentage as a number (2, 0.5); undefined outside 0..100 or not a number. */
export function parsePercent(text: string): number | undefined {
  const m = /^\s*(\d+(\.\d+)?)\s*%?\s*$/.exec(text);
  if (!m) return undefined;
  const n = Number(m[1]);
  return n >= 0 && n <= 100 ? n : undefined;
}

/** What is wrong with a rollout's steps, as a sentence; undefined when they are right. */
export function stepsProblem(steps: readonly number[]): string | undefined {
  if (steps.length === 0) return 'Give at least one step (the last is 100)';
  if (steps.some((s) => !Number.isInteger(s) || s < 1 || s > 100)) return 'Each step is a whole percentage from 1 to 100';
  if (steps.some((s, i) => i > 0 && s <= steps[i - 1])) return 'Steps rise: each is larger than the one before';
  if (steps[steps.length - 1] !== 100) return 'The last step is 100 (every task moves)';
  return undefined;
}

/** `10,50,100` -> [10, 50, 100] (a trailing `%` allowed); undefined when a part is not a number. */
export function parseSteps(text: string): number[] | undefined {
  const parts = text.split(',').map((p) => p.trim().replace(/%$/, ''));
  if (parts.some((p) => !/^\d+$/.test(p))) return undefined;
  return parts.map(Number);
}
