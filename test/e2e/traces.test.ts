import { copyFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { until, useE2e } from '../support/e2e.js';
import { engines } from '../support/service.js';

const FIXTURE = path.resolve('test/fixtures/traced-agent/index.ts');

interface Span {
  trace_id: string;
  span_id: string;
  parent_span_id: string | null;
  name: string;
  service: string;
  start_time_us: number;
  end_time_us: number;
  duration_ms: number;
  attributes: Record<string, unknown>;
}

/** A small OTLP/HTTP collector: what the server exports (JSON encoding), span names by trace id. */
function otlpReceiver() {
  const spans: { traceId: string; spanId: string; parentSpanId?: string; name: string; service: string }[] = [];
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      if (req.method === 'POST' && req.url === '/v1/traces') {
        const body = JSON.parse(Buffer.concat(chunks).toString('utf8'));
        for (const rs of body.resourceSpans ?? []) {
          const service = rs.resource?.attributes?.find((a: any) => a.key === 'service.name')?.value?.stringValue ?? '';
          for (const ss of rs.scopeSpans ?? [])
            for (const s of ss.spans ?? []) spans.push({ traceId: s.traceId, spanId: s.spanId, parentSpanId: s.parentSpanId, name: s.name, service });
        }
        res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
      } else res.writeHead(404).end();
    });
  });
  return { spans, server };
}

// Issue 24: one turn is one trace, from the CLI through the server, the outbox and the delivery into
// the agent's handler and its model call; kept by the server, exported over OTLP, and tied to the
// handler's log line.
describe.each(engines)('e2e on %s: a turn is one trace', (engine) => {
  const receiver = otlpReceiver();
  let otlpPort = 0;
  // Registered before the harness: the receiver listens before the server starts and closes after it stops.
  beforeAll(async () => {
    await new Promise<void>((resolve) => receiver.server.listen(0, '127.0.0.1', resolve));
    otlpPort = (receiver.server.address() as { port: number }).port;
  });
  afterAll(async () => {
    await new Promise((resolve) => receiver.server.close(resolve));
  });
  const e2e = useE2e(engine, {
    scratch: 'agentctl-traces',
    project: 'traced-bot',
    databasePrefix: 'agentctl_traces',
    env: () => ({ OTEL_EXPORTER_OTLP_ENDPOINT: `http://127.0.0.1:${otlpPort}`, OTEL_BSP_SCHEDULE_DELAY: '200' }),
    async prepare() {
      copyFileSync(FIXTURE, path.join(e2e.projectDir, 'src', 'index.ts'));
      await e2e.git(['commit', '-q', '-am', 'a traced agent']);
    },
  });
  const { agentctl, json } = e2e;

  test('tasks send -> server -> outbox -> delivery -> handler -> model call, in tasks trace, over OTLP and in logs --task', { timeout: 300_000 }, async () => {
    expect(await json(['deploy'])).toMatchObject({ status: 'ACTIVE', number: 1 });
    const task = await json(['tasks', 'create']);

    // --debug names the command's trace.
    const sent = await agentctl(['tasks', 'send', task.id, 'hi', '--debug']);
    expect(sent.exitCode, sent.stderr).toBe(0);
    const traceId = /\[debug\] trace ([0-9a-f]{32})/.exec(sent.stderr)?.[1];
    expect(traceId).toMatch(/^[0-9a-f]{32}$/);
    expect(sent.stderr).toMatch(new RegExp(`traceparent":"00-${traceId}-[0-9a-f]{16}-01"`));

    // The agent's spans arrive with its completion, after its answer.
    const trace = await until(
      'the handler spans in tasks trace',
      async () => (await json(['tasks', 'trace', task.id])).traces.find((t: any) => t.trace_id === traceId),
      (found) => found?.spans.some((s: Span) => s.name === 'model call') === true,
    );
    const spans: Span[] = trace.spans;
    const one = (name: string) => {
      const matching = spans.filter((s) => s.name === name);
      expect(
        matching.map((s) => s.name),
        `spans named ${name}`,
      ).toEqual([name]);
      return matching[0]!;
    };
    const cli = one('agentctl tasks send');
    const request = one('POST /tasks/:task_id/events');
    const outbox = one('outbox wait');
    const delivery = one('deliver event/send');
    const handler = one('onEvent');
    const model = one('model call');
    const reply = spans.find((s) => s.name === 'POST /messages' && s.parent_span_id === handler.span_id);

    // Nested: CLI > server handler > (outbox wait, delivery > agent handler > model call, the agent's calls back).
    expect(cli).toMatchObject({ parent_span_id: null, service: 'agentctl-cli' });
    expect(request).toMatchObject({ parent_span_id: cli.span_id, service: 'agentctl-server' });
    expect(outbox.parent_span_id).toBe(request.span_id);
    expect(delivery.parent_span_id).toBe(request.span_id);
    expect(handler).toMatchObject({ parent_span_id: delivery.span_id, service: 'default/traced-bot' });
    expect(model).toMatchObject({
      parent_span_id: handler.span_id,
      attributes: { 'gen_ai.request.model': 'fake-model-1', 'gen_ai.usage.input_tokens': 12, 'gen_ai.usage.output_tokens': 7 },
    });
    expect(reply).toBeDefined();
    // Timed: each within its parent's start, in the order the turn went. Spans of different processes
    // (CLI, server, agent) come from different clocks: the server stamps a request from the wall clock,
    // the ADK from its process's start plus a monotonic clock; a CI run saw them 1.2 ms apart.
    const clocks = 5000;
    expect(request.start_time_us).toBeGreaterThanOrEqual(cli.start_time_us - clocks);
    expect(request.end_time_us).toBeLessThanOrEqual(cli.end_time_us + clocks);
    expect(outbox.start_time_us).toBeGreaterThanOrEqual(request.start_time_us);
    expect(delivery.start_time_us).toBeGreaterThanOrEqual(outbox.end_time_us - 1000);
    expect(handler.start_time_us).toBeGreaterThanOrEqual(delivery.start_time_us - clocks);
    expect(model.start_time_us).toBeGreaterThanOrEqual(handler.start_time_us);
    expect(model.end_time_us).toBeLessThanOrEqual(handler.end_time_us);
    expect(model.duration_ms).toBeGreaterThanOrEqual(40);
    expect(reply!.start_time_us).toBeGreaterThanOrEqual(model.end_time_us - clocks);

    // The waterfall on a terminal-less stdout: every span's name, with bars.
    const waterfall = await agentctl(['tasks', 'trace', task.id]);
    expect(waterfall.exitCode, waterfall.stderr).toBe(0);
    for (const name of [
      'agentctl tasks send',
      'POST /tasks/:task_id/events',
      'outbox wait',
      'deliver event/send',
      'onEvent [default/traced-bot]',
      'model call [default/traced-bot]',
    ])
      expect(waterfall.stdout).toContain(name);
    expect(waterfall.stdout).toContain('█');
    expect(waterfall.stdout).toContain('tokens: 12 in, 7 out');
    expect((await json(['trace', traceId!])).spans.map((s: Span) => s.span_id).sort()).toEqual(spans.map((s) => s.span_id).sort());

    // The task sums its tokens.
    expect((await json(['tasks', 'get', task.id])).usage).toEqual({ input_tokens: 12, output_tokens: 7 });

    // The same trace over OTLP, from the server's exporter.
    await until(
      'the trace at the OTLP receiver',
      async () => new Set(receiver.spans.filter((s) => s.traceId === traceId).map((s) => s.name)),
      (names) =>
        ['agentctl tasks send', 'POST /tasks/:task_id/events', 'outbox wait', 'deliver event/send', 'onEvent', 'model call'].every((n) => names.has(n)),
    );
    const exported = receiver.spans.filter((s) => s.traceId === traceId);
    expect(exported.find((s) => s.name === 'model call')).toMatchObject({ parentSpanId: handler.span_id, service: 'default/traced-bot' });
    expect(exported.find((s) => s.name === 'POST /tasks/:task_id/events')).toMatchObject({ parentSpanId: cli.span_id, service: 'agentctl-server' });

    // The handler's log line, found by its task and by its trace.
    const byTask = await agentctl(['logs', '--task', task.id, '--json']);
    expect(byTask.exitCode, byTask.stderr).toBe(0);
    const lines = byTask.stdout
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l));
    expect(lines.map((l) => ({ task_id: l.task_id, trace_id: l.trace_id, msg: JSON.parse(l.line).msg }))).toEqual([
      { task_id: task.id, trace_id: traceId, msg: 'answered the event' },
    ]);
    const byTrace = await agentctl(['logs', '--trace', traceId!]);
    expect(byTrace.exitCode, byTrace.stderr).toBe(0);
    expect(byTrace.stdout).toContain('answered the event');
    // Plain lines still show, labelled with version and replica.
    const all = await agentctl(['logs', '--agent', 'default/traced-bot']);
    expect(all.stdout).toMatch(/\tv1\t0\t/);
  });
});
