import { Chalk } from 'chalk';
import { describe, expect, test } from 'vitest';
import { renderWaterfall } from '../../src/cli/output/waterfall.js';
import { formatClientTraceState, formatTraceparent, newSpanId, newTraceId, parseClientTraceState, parseTraceparent } from '../../src/contract/trace-context.js';
import type { Trace, TraceSpan } from '../../src/contract/traces.js';
import { operationOf, queryTextOf } from '../../src/server/tracing/db-spans.js';

describe('W3C trace context', () => {
  test('a traceparent reads back as it was made', () => {
    const parent = { traceId: newTraceId(), spanId: newSpanId(), sampled: true };
    expect(parent.traceId).toMatch(/^[0-9a-f]{32}$/);
    expect(parent.spanId).toMatch(/^[0-9a-f]{16}$/);
    expect(parseTraceparent(formatTraceparent(parent))).toEqual(parent);
    expect(parseTraceparent('00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00')).toEqual({
      traceId: '4bf92f3577b34da6a3ce929d0e0e4736',
      spanId: '00f067aa0ba902b7',
      sampled: false,
    });
  });

  test('what is not a traceparent is none', () => {
    for (const bad of [
      undefined,
      '',
      'garbage',
      '00-00000000000000000000000000000000-00f067aa0ba902b7-01',
      '00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01',
      '00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01',
    ])
      expect(parseTraceparent(bad)).toBeUndefined();
  });

  test("the CLI's tracestate member names its command and start, beside other vendors' members", () => {
    const text = formatClientTraceState({ command: 'tasks-send', startedAtMs: 1764000000123 });
    expect(text).toBe('agentctl=tasks-send@1764000000123');
    expect(parseClientTraceState(`other=x, ${text}`)).toEqual({ command: 'tasks-send', startedAtMs: 1764000000123 });
    expect(parseClientTraceState('other=x')).toBeUndefined();
  });
});

describe('the waterfall', () => {
  const span = (id: string, parent: string | null, name: string, start: number, end: number, extra: Partial<TraceSpan> = {}): TraceSpan => ({
    trace_id: 'a'.repeat(32),
    span_id: id.padEnd(16, '0'),
    parent_span_id: parent?.padEnd(16, '0') ?? null,
    name,
    kind: 'internal',
    service: 'agentctl-server',
    task_id: 'task_1',
    start_time: new Date(start / 1000).toISOString(),
    start_time_us: start,
    end_time_us: end,
    duration_ms: (end - start) / 1000,
    status: 'unset',
    status_message: null,
    attributes: {},
    ...extra,
  });
  const trace: Trace = {
    trace_id: 'a'.repeat(32),
    task_id: 'task_1',
    start_time: new Date(1_000).toISOString(),
    duration_ms: 100,
    spans: [
      span('1', null, 'agentctl tasks send', 1_000_000, 1_100_000, { service: 'agentctl-cli' }),
      span('2', '1', 'POST /tasks/:task_id/events', 1_010_000, 1_030_000),
      span('3', '2', 'db INSERT', 1_012_000, 1_013_000, { kind: 'client' }),
      span('4', '2', 'model call', 1_040_000, 1_090_000, {
        service: 'default/bot',
        status: 'error',
        status_message: 'rate limited',
        attributes: { 'gen_ai.usage.input_tokens': 12, 'gen_ai.usage.output_tokens': 7 },
      }),
    ],
  };

  test('nests spans under their parents, bars them by time, marks errors, hides database spans unless asked', () => {
    const lines = renderWaterfall(trace, { chalk: new Chalk({ level: 0 }), columns: 100 })
      .trimEnd()
      .split('\n');
    expect(lines[0]).toBe(`trace ${'a'.repeat(32)}  task task_1  100 ms  4 spans  1970-01-01T00:00:01.000Z`);
    expect(lines[1]).toMatch(/^agentctl tasks send \[agentctl-cli\] +█+ +100 ms$/);
    expect(lines[2]).toMatch(/^ {2}POST \/tasks\/:task_id\/events +█+ +20 ms$/);
    expect(lines[3]).toMatch(/^ {4}✗ model call \[default\/bot\] +█+ +50 ms$/);
    expect(lines[4]).toBe('      rate limited');
    expect(lines.slice(5)).toEqual(['tokens: 12 in, 7 out', '1 database span not shown (--db shows them)']);
    // The model call's bar starts where its time does: 40% into the trace.
    const barStart = (line: string) => line.indexOf('█');
    expect(barStart(lines[3]!) - barStart(lines[1]!)).toBe(Math.floor(0.4 * (100 - (lines[1]!.indexOf('█') - 2) - 10 - 4)));
    expect(renderWaterfall(trace, { chalk: new Chalk({ level: 0 }), columns: 100, db: true })).toContain('    db INSERT');
  });
});

describe('database spans', () => {
  test("an EXECUTE of a prepared statement keeps its name, not its parameters (the caller's data)", () => {
    expect(queryTextOf('EXECUTE agentctl_prepared_3(\'task_1\', \'{"text":"my card is 4242"}\')')).toBe('EXECUTE agentctl_prepared_3');
    expect(operationOf("EXECUTE agentctl_prepared_3('x')")).toBe('EXECUTE');
  });

  test('any other statement keeps its first 300 characters', () => {
    const text = `SELECT ${'x, '.repeat(200)}1`;
    expect(queryTextOf(text)).toBe(text.slice(0, 300));
  });
});
