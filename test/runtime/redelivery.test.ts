import { afterAll, afterEach, beforeEach, describe, expect, test } from 'vitest';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { engines, useService } from '../support/service.js';
import { createTask, deploy } from '../support/fixtures.js';
import { alive, copyFixture, tempDir, waitFor } from './support/agents.js';
import { startLocalRuntime } from './support/local-runtime.js';

/** The pids written by the blocking agent's handler runs (test/fixtures/agents/blocking), in order. */
const handlerPids = (file: string) => (existsSync(file) ? readFileSync(file, 'utf8').split('\n').filter(Boolean).map(Number) : []);

// Kill -9 of an agent process mid-handler (README "Local runtime and logs"): the delivery was acknowledged, but
// the agent holds it leased until its handler reports completion, so the runtime's restart of the
// process gets it again and answers it.
describe.each(engines)('an agent process killed mid-handler (%s)', (engine) => {
  const svc = useService(engine);
  let runtime: Awaited<ReturnType<typeof startLocalRuntime>> | undefined;
  const data = tempDir('agentctl-redelivery-');
  afterAll(() => data.remove());
  beforeEach(async () => {
    runtime = await startLocalRuntime(svc, { dataDir: data.path, prepareSource: copyFixture, restartBackoffMs: 200 });
  });
  afterEach(async () => {
    await runtime?.close();
  });

  test('kill -9 while the handler runs: the runtime restarts the process, the event is delivered again and answered once', { timeout: 120_000 }, async () => {
    const d = await deploy(svc, { agent: 'blocking', image_url: 'local://blocking' });
    const client = svc.client();
    await waitFor('ACTIVE', async () => (await client.getVersion({ params: { version_id: d.version_id } })).status === 'ACTIVE', 60_000);
    const task = await createTask(svc, { agent_name: 'default/blocking' });
    const started = join(data.path, `started-${task.id}`);
    const gate = join(data.path, `gate-${task.id}`);
    const sent = await client.createEvent({
      params: { task_id: task.id },
      body: { content: { type: 'data', data: { started, gate, text: 'the only event' } } },
    });

    const [first] = await waitFor('the handler to start', () => (handlerPids(started).length === 1 ? handlerPids(started) : null), 60_000);
    process.kill(first!, 'SIGKILL');
    await waitFor(`agent ${first} to exit`, () => !alive(first!));

    // The restarted process runs the handler again (a new pid), blocked on the gate until we open it.
    const pids = await waitFor('the handler to run again', () => (handlerPids(started).length === 2 ? handlerPids(started) : null), 60_000);
    expect(pids[1]).not.toBe(first);
    writeFileSync(gate, '');
    const messages = async () => (await client.listMessages({ query: { task_id: task.id } })).messages;
    await waitFor('the answer', async () => (await messages()).length > 0, 30_000);
    await new Promise((r) => setTimeout(r, 300));

    expect((await messages()).map((m) => [m.author, m.content])).toEqual([['agent', { type: 'text', text: `handled the only event in ${pids[1]}` }]]);
    const events = (await client.listEvents({ query: { task_id: task.id } })).events;
    expect(events.map((e) => e.id)).toEqual([sent.id]);
    expect((await client.getTask({ params: { task_id: task.id } })).status).toBe('RUNNING');
    expect(handlerPids(started)).toEqual(pids);
  });
});
