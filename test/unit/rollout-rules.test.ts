import { describe, expect, test } from 'vitest';
import { formatDuration, parseDuration, parsePercent, parseSteps, stepsProblem } from '../../src/contract/rollout-rules.js';
import { parseSince } from '../../src/cli/commands/logs.js';

describe('the one duration parser (--watch, logs --since)', () => {
  test.each([
    ['750ms', 750],
    ['2s', 2_000],
    ['5m', 300_000],
    ['1h', 3_600_000],
    ['1d', 86_400_000],
    ['1m30s', 90_000],
    ['1.5s', 1_500],
  ])('%s is %d ms', (text, ms) => expect(parseDuration(text)).toBe(ms));

  test.each(['', 'soon', '5', '-2s', '5 minutes', '2s3'])('%j is not a duration', (text) => expect(parseDuration(text)).toBeUndefined());

  test('formatDuration reads back what parseDuration reads', () => {
    expect([300_000, 90_000, 2_000, 750, 3_600_000].map(formatDuration)).toEqual(['5m', '1m30s', '2s', '750ms', '1h']);
  });

  test('logs --since uses it', () => {
    expect(parseSince('1m30s', Date.parse('2026-01-01T00:10:00Z'))).toBe('2026-01-01T00:08:30.000Z');
  });
});

describe('--max-error-rate and --steps', () => {
  test('percentages', () => {
    expect(['2%', '0.5%', '2', '100%', '0'].map(parsePercent)).toEqual([2, 0.5, 2, 100, 0]);
    expect(['101%', '-1%', 'two', ''].map(parsePercent)).toEqual([undefined, undefined, undefined, undefined]);
  });

  test('steps rise and end at 100', () => {
    expect(parseSteps('10,50,100')).toEqual([10, 50, 100]);
    expect(parseSteps('10%, 100%')).toEqual([10, 100]);
    expect(parseSteps('10,x')).toBeUndefined();
    expect(stepsProblem([10, 50, 100])).toBeUndefined();
    expect(stepsProblem([100])).toBeUndefined();
    expect(stepsProblem([])).toBe('Give at least one step (the last is 100)');
    expect(stepsProblem([50, 10, 100])).toBe('Steps rise: each is larger than the one before');
    expect(stepsProblem([10, 50])).toBe('The last step is 100 (every task moves)');
    expect(stepsProblem([0, 100])).toBe('Each step is a whole percentage from 1 to 100');
  });
});
