import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, test } from 'vitest';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { engines, openTestService, type TestService } from '../support/service.js';
import { deploy } from '../support/fixtures.js';
import { alive, copyFixture, tempDir, waitFor } from './support/agents.js';
import { startLocalRuntime } from './support/local-runtime.js';

/** The pids written by the blocking agent's handler runs (test/fixtures/agents/blocking), in order. */
const handlerPids = (file: string) => (existsSync(file) ? readFileSync(file, 'utf8').split('\n').filter(Boolean).map(Number) : []);

// Kill -9 of an agent process mid-handler (README "Local runtime and logs"): the delivery was acknowledged, but
// the agent holds it leased until its handler reports completion, so the runtime's restart of the
// process gets it again and answers it.
describe.each(engines)('an agent process killed mid-handler (%s)', (engine) => {
  let svc: TestService;
  let runtime: Awaited<ReturnType<typeof startLocalRuntime>> | undefined;
  const data = tempDir('agentctl-redelivery-');
  beforeAll(async () => {
    svc = await openTestService(engine);
  });
  afterAll(async () => {
    await svc?.close();
    data.remove();
  });
  beforeEach(async () => {
    await svc.reset();
    runtime = await startLocalRuntime(svc, { dataDir: data.path, prepareSource: copyFixture, restartBackoffMs: 200 });
  });
  afterEach(async () => {
    await runtime?.close();
  });

  test('kill -9 while the handler runs: the runtime restarts the process, the event is delivered again and answered once', { timeout: 120_000 }, async () => {
    const d = await deploy(svc, { agent_name: 'blocking', image_url: 'local://blocking' });
    await waitFor('ACTIVE', async () => (await svc.api('GET', `/versions/${d.version_id}`)).body.status === 'ACTIVE', 60_000);
    const task = await svc.api('POST', '/tasks', { body: { agent_name: 'default/blocking' } });
    expect(task.status).toBe(201);
    const started = join(data.path, `started-${task.body.id}`);
    const gate = join(data.path, `gate-${task.body.id}`);
    const sent = await svc.api('POST', `/tasks/${task.body.id}/events`, { body: { content: { type: 'data', data: { started, gate, text: 'the only event' } } } });
    expect(sent.status).toBe(201);

    const [first] = await waitFor('the handler to start', () => (handlerPids(started).length === 1 ? handlerPids(started) : null), 60_000);
    process.kill(first!, 'SIGKILL');
    await waitFor(`agent ${first} to exit`, () => !alive(first!));

    // The restarted process runs the handler again (a new pid), blocked on the gate until we open it.
    const pids = await waitFor('the handler to run again', () => (handlerPids(started).length === 2 ? handlerPids(started) : null), 60_000);
    expect(pids[1]).not.toBe(first);
    writeFileSync(gate, '');
    const messages = async () => (await svc.api('GET', `/messages?task_id=${task.body.id}`)).body.messages as any[];
    await waitFor('the answer', async () => (await messages()).length > 0, 30_000);
    await new Promise((r) => setTimeout(r, 300));

    expect((await messages()).map((m) => [m.author, m.content])).toEqual([['agent', { type: 'text', text: `handled the only event in ${pids[1]}` }]]);
    const events = (await svc.api('GET', `/events?task_id=${task.body.id}`)).body.events as any[];
    expect(events.map((e) => e.id)).toEqual([sent.body.id]);
    expect((await svc.api('GET', `/tasks/${task.body.id}`)).body.status).toBe('RUNNING');
    expect(handlerPids(started)).toEqual(pids);
  });
});
