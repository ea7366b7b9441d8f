import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { startFakeControlPlane, type FakeControlPlane } from '../support/fake-control-plane.js';
import { buildAdkBundle, deliver, startAgentProcess, type AgentProcess } from '../support/agent-process.js';

// The AgentServer in a real child process (test/fixtures/adk/protocol-agent.ts), fed signed JSON-RPC
// by the test, registering with a stand-in control plane that records what the agent calls.

const SECRET = 'test-signing-secret';
const agentEntry = 'test/fixtures/adk/protocol-agent.ts';
const agentRef = { id: 'agt_1', name: 'default/fake' };
const task = (id: string) => ({ id, filesystem_id: `fs_${id}`, namespace_id: 'ns_1', status: 'RUNNING' });
const event = (id: string, taskId: string, data: Record<string, unknown> = {}) => ({
  id,
  task_id: taskId,
  agent_id: 'agt_1',
  sequence_id: 1,
  content: { type: 'data', data },
  created_at: new Date().toISOString(),
});

let fake: FakeControlPlane;
let dataRoot: string;
let agent: AgentProcess | undefined;

beforeAll(() => buildAdkBundle());
beforeEach(async () => {
  fake = await startFakeControlPlane();
  dataRoot = mkdtempSync(path.join(tmpdir(), 'adk-agent-'));
});
afterEach(async () => {
  agent?.stop();
  if (agent) await agent.exited;
  agent = undefined;
  await fake.close();
  rmSync(dataRoot, { recursive: true, force: true });
});

function start(env: Record<string, string> = {}): AgentProcess {
  agent = startAgentProcess(agentEntry, {
    AGENTCTL_BASE_URL: fake.url,
    AGENTCTL_VERSION_ID: 'ver_1',
    AGENTCTL_BRANCH_ID: 'br_1',
    AGENTCTL_REGISTRATION_TOKEN: 'agrt_one_time',
    AGENTCTL_SIGNING_SECRET: SECRET,
    AGENTCTL_DATA_ROOT: dataRoot,
    PORT: '0',
    ...env,
  });
  return agent;
}

async function listening(a: AgentProcess): Promise<number> {
  return (await a.waitFor((l) => l.phase === 'listening')).port;
}

const ends = (a: AgentProcess) => a.lines.filter((l) => l.phase === 'end');

describe('AgentServer registration', () => {
  it('registers with the one-time token, its own address and the handlers it has, without an API key', async () => {
    const port = await listening(start());
    const registrations = fake.requests.filter((r) => r.path === '/versions/register');
    expect(registrations).toHaveLength(1);
    expect(registrations[0]!.body).toEqual({
      version_id: 'ver_1',
      branch_id: 'br_1',
      acp_url: `http://127.0.0.1:${port}`,
      registration_token: 'agrt_one_time',
      // What a rehearsal (onEvent) and a migration (onMigrate) look for on the version.
      registration_metadata: { handlers: ['onCreate', 'onEvent', 'onCancel', 'onMessage'] },
    });
    expect(registrations[0]!.headers.authorization).toBeUndefined();
    const health = await fetch(`http://127.0.0.1:${port}/healthz`);
    expect(health.status).toBe(200);
    expect(await health.json()).toEqual({ status: 'ok' });
  });

  it('exits at once with the cause when the service refuses the token (4xx)', async () => {
    fake.registration = {
      kind: 'refuse',
      status: 401,
      code: 'invalid_registration_token',
      detail: 'The registration token is unknown, already used or expired',
    };
    const a = start();
    expect(await a.exited).toEqual({ code: 1, signal: null });
    expect(a.stderr()).toContain(
      `agentctl-adk: cannot start: registration refused by ${fake.url} (401 invalid_registration_token): The registration token is unknown, already used or expired`,
    );
    expect(fake.requests.filter((r) => r.path === '/versions/register')).toHaveLength(1);
  });

  it('retries a 503 five times, then exits naming the service', async () => {
    fake.registration = { kind: 'unavailable' };
    const a = start();
    expect(await a.exited).toEqual({ code: 1, signal: null });
    expect(fake.requests.filter((r) => r.path === '/versions/register')).toHaveLength(5);
    expect(a.stderr()).toContain(`agentctl-adk: cannot start: could not register with ${fake.url} after 5 attempts: Starting up`);
  });

  it('retries when the service is unreachable at start, then exits clearly', async () => {
    const closedPort = await new Promise<number>((resolve) => {
      const probe = createServer().listen(0, '127.0.0.1', () => {
        const { port } = probe.address() as { port: number };
        probe.close(() => resolve(port));
      });
    });
    const a = start({ AGENTCTL_BASE_URL: `http://127.0.0.1:${closedPort}` });
    expect(await a.exited).toEqual({ code: 1, signal: null });
    expect(a.stderr().match(/registration attempt \d of 5 failed/g)).toHaveLength(4);
    expect(a.stderr()).toContain(
      `agentctl-adk: cannot start: could not register with http://127.0.0.1:${closedPort} after 5 attempts: Cannot reach the agentctl service at http://127.0.0.1:${closedPort} (ECONNREFUSED)`,
    );
  });

  it('refuses to start without a signing secret', async () => {
    const a = start({ AGENTCTL_SIGNING_SECRET: '' });
    expect(await a.exited).toEqual({ code: 1, signal: null });
    expect(a.stderr()).toContain('agentctl-adk: cannot start: no signing secret: set AGENTCTL_SIGNING_SECRET');
    expect(fake.requests).toHaveLength(0);
  });
});

describe('AgentServer delivery', () => {
  it('runs create, event and cancel of a task in order, each in the task workspace', async () => {
    const a = start();
    const port = await listening(a);
    expect(await deliver(port, 'task/create', { agent: agentRef, task: task('task_a'), params: { sleep_ms: 100 } })).toEqual({
      status: 200,
      body: { jsonrpc: '2.0', id: expect.any(String), result: { accepted: true } },
    });
    expect((await deliver(port, 'event/send', { agent: agentRef, task: task('task_a'), event: event('evt_1', 'task_a') })).status).toBe(200);
    expect((await deliver(port, 'task/cancel', { agent: agentRef, task: task('task_a') })).status).toBe(200);
    await a.waitFor((l) => l.phase === 'end' && l.handler === 'onCancel');
    expect(a.lines.filter((l) => l.task === 'task_a').map((l) => `${l.phase} ${l.handler}`)).toEqual([
      'start onCreate',
      'end onCreate',
      'start onEvent',
      'end onEvent',
      'start onCancel',
      'end onCancel',
    ]);
    expect(ends(a)[0]!.workspace).toBe(path.join(dataRoot, 'tasks', 'task_a', 'workspace'));
    // No lease was offered: the acknowledgement was the end of each delivery.
    expect(fake.requests.filter((r) => r.path.startsWith('/deliveries/'))).toEqual([]);
  });

  it('runs 20 events that arrive while the task is busy one at a time, in delivery order', async () => {
    const a = start();
    const port = await listening(a);
    await deliver(port, 'task/create', { agent: agentRef, task: task('task_q'), params: { sleep_ms: 400 } });
    for (let i = 1; i <= 20; i++) {
      const ack = await deliver(port, 'event/send', { agent: agentRef, task: task('task_q'), event: event(`evt_${i}`, 'task_q', { sleep_ms: 5 }) });
      expect(ack.body.result).toEqual({ accepted: true });
    }
    // Every acknowledgement came back while onCreate was still running.
    expect(ends(a)).toHaveLength(0);
    await a.waitFor((l) => l.phase === 'end' && l.event === 'evt_20');
    const events = a.lines.filter((l) => l.handler === 'onEvent');
    expect(events.map((l) => `${l.phase} ${l.event}`)).toEqual(Array.from({ length: 20 }, (_, i) => [`start evt_${i + 1}`, `end evt_${i + 1}`]).flat());
  });

  it('runs 20 tasks side by side', async () => {
    const a = start();
    const port = await listening(a);
    await Promise.all(
      Array.from({ length: 20 }, (_, i) => deliver(port, 'task/create', { agent: agentRef, task: task(`task_p${i}`), params: { sleep_ms: 1000 } })),
    );
    await a.waitFor(() => ends(a).length === 20);
    const firstEnd = a.lines.findIndex((l) => l.phase === 'end');
    expect(a.lines.slice(0, firstEnd).filter((l) => l.phase === 'start')).toHaveLength(20);
  });

  it('keeps to the concurrency cap across tasks', async () => {
    const a = start({ TEST_CONCURRENCY: '3' });
    const port = await listening(a);
    await Promise.all(
      Array.from({ length: 9 }, (_, i) => deliver(port, 'task/create', { agent: agentRef, task: task(`task_c${i}`), params: { sleep_ms: 150 } })),
    );
    await a.waitFor(() => ends(a).length === 9);
    let running = 0;
    let most = 0;
    for (const l of a.lines.filter((l) => l.handler === 'onCreate')) {
      running += l.phase === 'start' ? 1 : -1;
      most = Math.max(most, running);
    }
    expect(most).toBe(3);
  });

  it('runs a repeated delivery once', async () => {
    const a = start();
    const port = await listening(a);
    const params = { agent: agentRef, task: task('task_d'), event: event('evt_d', 'task_d') };
    expect((await deliver(port, 'event/send', params, { id: 'dlv_same' })).body.result).toEqual({ accepted: true });
    expect((await deliver(port, 'event/send', params, { id: 'dlv_same' })).body.result).toEqual({ accepted: true });
    await a.waitFor((l) => l.phase === 'end');
    await deliver(port, 'task/cancel', { agent: agentRef, task: task('task_d') });
    await a.waitFor((l) => l.handler === 'onCancel' && l.phase === 'end');
    expect(a.lines.filter((l) => l.handler === 'onEvent' && l.phase === 'start')).toHaveLength(1);
  });

  it('takes an offered lease: acknowledges deferred, renews it while the handler runs, reports completion after it ends', async () => {
    const a = start();
    const port = await listening(a);
    const ack = await deliver(
      port,
      'event/send',
      { agent: agentRef, task: task('task_l'), event: event('evt_l', 'task_l', { sleep_ms: 2000 }), lease_ms: 1500 },
      { id: '41' },
    );
    expect(ack).toEqual({ status: 200, body: { jsonrpc: '2.0', id: '41', result: { accepted: true, deferred: true } } });
    const end = await a.waitFor((l) => l.phase === 'end' && l.event === 'evt_l');
    while (!fake.requests.some((r) => r.path === '/deliveries/41/complete')) await new Promise((resolve) => setTimeout(resolve, 20));
    const lease = fake.requests.filter((r) => r.path.startsWith('/deliveries/'));
    // Renewed (every 500 ms) while the 2-second handler ran, then completed once, after its end.
    expect(lease.slice(0, -1).every((r) => r.path === '/deliveries/41/renew')).toBe(true);
    expect(lease.filter((r) => r.at_ms <= end.at_ms).length).toBeGreaterThanOrEqual(1);
    expect(lease.at(-1)!.path).toBe('/deliveries/41/complete');
    expect(lease.at(-1)!.at_ms).toBeGreaterThanOrEqual(end.at_ms);
    expect(lease.every((r) => r.method === 'POST' && r.headers.authorization === 'Bearer agk_runtime_fake')).toBe(true);
    await new Promise((resolve) => setTimeout(resolve, 700));
    expect(fake.requests.filter((r) => r.path.startsWith('/deliveries/')).length).toBe(lease.length);
  });

  it('reports completion of a handler that threw after reporting the error', async () => {
    const a = start();
    const port = await listening(a);
    await deliver(
      port,
      'event/send',
      { agent: agentRef, task: task('task_x'), event: event('evt_x', 'task_x', { throw: 'no' }), lease_ms: 60_000 },
      { id: '42' },
    );
    while (!fake.requests.some((r) => r.path === '/deliveries/42/complete')) await new Promise((resolve) => setTimeout(resolve, 20));
    expect(fake.requests.filter((r) => r.path === '/tasks/task_x/handler-errors' || r.path.startsWith('/deliveries/')).map((r) => r.path)).toEqual([
      '/tasks/task_x/handler-errors',
      '/deliveries/42/complete',
    ]);
  });

  it('a repeat of a leased delivery while its handler runs is acknowledged deferred and runs once; after completion, a repeat is simply acknowledged', async () => {
    const a = start();
    const port = await listening(a);
    const params = { agent: agentRef, task: task('task_r2'), event: event('evt_r2', 'task_r2', { sleep_ms: 500 }), lease_ms: 60_000 };
    expect((await deliver(port, 'event/send', params, { id: '43' })).body.result).toEqual({ accepted: true, deferred: true });
    expect((await deliver(port, 'event/send', params, { id: '43' })).body.result).toEqual({ accepted: true, deferred: true });
    while (!fake.requests.some((r) => r.path === '/deliveries/43/complete')) await new Promise((resolve) => setTimeout(resolve, 20));
    await new Promise((resolve) => setTimeout(resolve, 50));
    // Its completion report was lost, say: the platform sends it again when the lease runs out.
    expect((await deliver(port, 'event/send', params, { id: '43' })).body.result).toEqual({ accepted: true });
    expect(a.lines.filter((l) => l.handler === 'onEvent' && l.phase === 'start')).toHaveLength(1);
    expect(fake.requests.filter((r) => r.path === '/deliveries/43/complete')).toHaveLength(1);
  });

  it('a process started again on the same data root acknowledges what its predecessor handled (its completion report lost) without running it again', async () => {
    const first = start();
    let port = await listening(first);
    const params = (n: number) => ({ agent: agentRef, task: task('task_again'), event: event(`evt_${n}`, 'task_again'), lease_ms: 60_000 });
    for (const id of ['60', '61'])
      expect((await deliver(port, 'event/send', params(Number(id)), { id })).body.result).toEqual({ accepted: true, deferred: true });
    while (!fake.requests.some((r) => r.path === '/deliveries/61/complete')) await new Promise((resolve) => setTimeout(resolve, 20));
    first.stop();
    await first.exited;

    const second = start();
    port = await listening(second);
    // Say the platform never got those completions (the server died): both come again, then the task's next delivery.
    for (const id of ['60', '61']) expect((await deliver(port, 'event/send', params(Number(id)), { id })).body.result).toEqual({ accepted: true });
    expect((await deliver(port, 'event/send', params(62), { id: '62' })).body.result).toEqual({ accepted: true, deferred: true });
    await second.waitFor((l) => l.handler === 'onEvent' && l.phase === 'end');
    expect(second.lines.filter((l) => l.handler === 'onEvent' && l.phase === 'start').map((l) => l.event)).toEqual(['evt_62']);
  });

  it('refuses a forged signature with a JSON-RPC 401 and runs nothing', async () => {
    const a = start();
    const port = await listening(a);
    const forged = await deliver(port, 'task/create', { agent: agentRef, task: task('task_f'), params: {} }, { secret: 'not-the-secret' });
    expect(forged).toEqual({ status: 401, body: { jsonrpc: '2.0', id: null, error: { code: -32001, message: 'signature mismatch' } } });
    const unsigned = await deliver(port, 'task/create', { agent: agentRef, task: task('task_f'), params: {} }, { signature: '' });
    expect(unsigned).toEqual({ status: 401, body: { jsonrpc: '2.0', id: null, error: { code: -32001, message: 'signature missing' } } });
    expect(a.lines.filter((l) => l.phase === 'start')).toHaveLength(0);
  });

  it('refuses a correctly signed request replayed with a timestamp older than 5 minutes', async () => {
    const a = start();
    const port = await listening(a);
    const replayed = await deliver(
      port,
      'task/create',
      { agent: agentRef, task: task('task_r'), params: {} },
      { timestamp: Math.floor(Date.now() / 1000) - 301 },
    );
    expect(replayed).toEqual({ status: 401, body: { jsonrpc: '2.0', id: null, error: { code: -32001, message: 'signature expired' } } });
    expect(a.lines.filter((l) => l.phase === 'start')).toHaveLength(0);
  });

  it('reports a handler that throws, with the runtime key, and goes on with the next delivery', async () => {
    const a = start();
    const port = await listening(a);
    await deliver(port, 'event/send', { agent: agentRef, task: task('task_t'), event: event('evt_boom', 'task_t', { throw: 'boom: the model said no' }) });
    await deliver(port, 'event/send', { agent: agentRef, task: task('task_t'), event: event('evt_after', 'task_t') });
    await a.waitFor((l) => l.phase === 'end' && l.event === 'evt_after');
    const reports = fake.requests.filter((r) => r.path === '/tasks/task_t/handler-errors');
    expect(reports.map((r) => r.body)).toEqual([{ handler: 'onEvent', message: 'boom: the model said no', event_id: 'evt_boom' }]);
    expect(reports[0]!.headers.authorization).toBe('Bearer agk_runtime_fake');
    expect(reports[0]!.headers['idempotency-key']).toMatch(/^[0-9a-f-]{36}$/);
    expect(a.stderr()).toContain('agentctl-adk: onEvent of task_t failed: Error: boom: the model said no');
  });

  it('answers a sync message inline with the messages it recorded', async () => {
    const a = start();
    const port = await listening(a);
    const answer = await deliver(port, 'message/send', { agent: agentRef, task: task('task_s'), content: { type: 'text', text: 'hi' } });
    expect(answer.status).toBe(200);
    const { spans, ...result } = answer.body.result;
    expect(result).toEqual({
      accepted: true,
      messages: [
        { type: 'text', text: 'first' },
        { type: 'text', text: 'echo: hi' },
      ],
    });
    // The handler's spans come with a sync answer (README "Traces"): its own, with its workspace syncs inside, in one new trace.
    const handlerSpan = spans.find((s: { name: string }) => s.name === 'onMessage');
    expect(spans.map((s: { name: string }) => s.name).sort()).toEqual(['onMessage', 'workspace sync down', 'workspace sync up']);
    expect(handlerSpan).toMatchObject({ parent_span_id: null, kind: 'server' });
    for (const span of spans) expect(span.trace_id).toBe(handlerSpan.trace_id);
    expect(fake.requests.filter((r) => r.path === '/messages').map((r) => r.body)).toEqual([
      { task_id: 'task_s', content: 'first' },
      { task_id: 'task_s', content: 'echo: hi' },
    ]);
  });

  it('syncs the task workspace down before each handler and up after it', async () => {
    const a = start();
    const port = await listening(a);
    await deliver(port, 'task/create', { agent: agentRef, task: task('task_w'), params: { write: 'notes.txt' } });
    // Leased, so that its completion tells when the workspace was synced up: the handler's 'end' line comes before the upload.
    await deliver(port, 'event/send', { agent: agentRef, task: task('task_w'), event: event('evt_w', 'task_w'), lease_ms: 60_000 }, { id: '77' });
    while (!fake.requests.some((r) => r.path === '/deliveries/77/complete')) await new Promise((resolve) => setTimeout(resolve, 20));
    expect(a.lines.filter((l) => l.phase === 'start').map((l) => l.files)).toEqual([[], ['notes.txt']]);
    expect(fake.archives.get('fs_task_w')?.paths).toEqual(['notes.txt']);
    // A second replica (empty data root) starts the next handler from the uploaded files.
    rmSync(path.join(dataRoot, 'tasks'), { recursive: true });
    await deliver(port, 'task/cancel', { agent: agentRef, task: task('task_w') });
    expect((await a.waitFor((l) => l.phase === 'start' && l.handler === 'onCancel')).files).toEqual(['notes.txt']);
  });

  it('fails the handler visibly when the workspace cannot be synced, without running it', async () => {
    const a = start();
    const port = await listening(a);
    await deliver(port, 'event/send', { agent: agentRef, task: { ...task('task_b'), filesystem_id: 'fs_broken' }, event: event('evt_b', 'task_b') });
    while (!fake.requests.some((r) => r.path === '/tasks/task_b/handler-errors')) await new Promise((resolve) => setTimeout(resolve, 20));
    expect(fake.requests.find((r) => r.path === '/tasks/task_b/handler-errors')!.body).toEqual({
      handler: 'onEvent',
      message: 'workspace sync down (fs_broken) failed: The blob store is unavailable',
      event_id: 'evt_b',
    });
    expect(a.lines.filter((l) => l.phase === 'start')).toHaveLength(0);
  });

  it('finishes the running handler on SIGTERM, takes no new work, and exits 0', async () => {
    const a = start();
    const port = await listening(a);
    await deliver(port, 'task/create', { agent: agentRef, task: task('task_g'), params: { sleep_ms: 800 } });
    await a.waitFor((l) => l.phase === 'start');
    process.kill(a.child.pid!, 'SIGTERM');
    while (!a.stderr().includes('SIGTERM: finishing running handlers')) await new Promise((resolve) => setTimeout(resolve, 10));
    const refused = await deliver(port, 'task/create', { agent: agentRef, task: task('task_late'), params: {} }).catch((error: Error) => ({
      status: 0,
      body: String(error),
    }));
    expect([0, 503]).toContain(refused.status);
    expect(await a.exited).toEqual({ code: 0, signal: null });
    expect(a.lines.filter((l) => l.phase === 'end').map((l) => l.task)).toEqual(['task_g']);
    expect(a.lines.some((l) => l.task === 'task_late')).toBe(false);
  });
});
