import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, test } from 'vitest';
import { fileURLToPath } from 'node:url';
import { openBlobStore, type BlobStore } from '../../src/server/blobs/index.js';
import { sourceFromFilesystem } from '../../src/server/runtime/wiring.js';
import { syncUp } from '../../src/sync/index.js';
import { engines, openTestService, type TestService } from '../support/service.js';
import { deploy } from '../support/fixtures.js';
import { tempDir, waitFor } from './support/agents.js';
import { startLocalRuntime } from './support/local-runtime.js';

const ECHO = fileURLToPath(new URL('../../examples/echo/', import.meta.url));

// The real thing: the echo example (an ADK agent) deployed from a source filesystem, started by the
// local driver, registered with its one-time token, answering an event delivered by the dispatcher.
describe.each(engines)('the echo agent on the local runtime (%s)', (engine) => {
  let svc: TestService;
  let blobs: BlobStore;
  let runtime: Awaited<ReturnType<typeof startLocalRuntime>> | undefined;
  const data = tempDir('agentctl-echo-');
  beforeAll(async () => {
    blobs = await openBlobStore({ dir: `${data.path}/blobs` });
    svc = await openTestService(engine, {}, { blobs });
  });
  afterAll(async () => {
    await svc?.close();
    await blobs?.close();
    data.remove();
  });
  beforeEach(async () => {
    await svc.reset();
    runtime = await startLocalRuntime(svc, { dataDir: data.path, prepareSource: sourceFromFilesystem(svc.store, blobs) });
  });
  afterEach(async () => {
    await runtime?.close();
  });

  test('deployed from its source snapshot, it registers, becomes ACTIVE and answers an event', async () => {
    const fs = await svc.api('POST', '/filesystems', { body: { namespace: 'default' } });
    expect(fs.status).toBe(201);
    await syncUp({ baseUrl: svc.url, apiKey: svc.adminKey }, fs.body.id, ECHO);
    const d = await deploy(svc, { agent_name: 'echo', image_url: `local://${fs.body.id}`, source_filesystem_id: fs.body.id });
    await waitFor('ACTIVE', async () => (await svc.api('GET', `/versions/${d.version_id}`)).body.status === 'ACTIVE', 60_000);

    const task = await svc.api('POST', '/tasks', { body: { agent_name: 'default/echo', params: { topic: 'runtimes' } } });
    expect(task.status).toBe(201);
    const sent = await svc.api('POST', `/tasks/${task.body.id}/events`, { body: { content: 'hello' } });
    expect(sent.status).toBe(201);
    const texts = async () => (await svc.api('GET', `/messages?task_id=${task.body.id}`)).body.messages.map((m: any) => m.content.text);
    await waitFor('the echo', async () => (await texts()).includes('echo #1: hello'), 60_000);
    expect(await texts()).toEqual(['Hello! Send me anything about runtimes and I will echo it.', 'echo #1: hello']);
    const logs = await svc.api('GET', `/versions/${d.version_id}/logs`);
    expect(logs.status).toBe(200);
  });

  test('GET /metrics counts its process by phase, and the delivery queue drains to empty once it answered', async () => {
    const fs = await svc.api('POST', '/filesystems', { body: { namespace: 'default' } });
    await syncUp({ baseUrl: svc.url, apiKey: svc.adminKey }, fs.body.id, ECHO);
    const d = await deploy(svc, { agent_name: 'echo', image_url: `local://${fs.body.id}`, source_filesystem_id: fs.body.id });
    await waitFor('ACTIVE', async () => (await svc.api('GET', `/versions/${d.version_id}`)).body.status === 'ACTIVE', 60_000);
    const scrape = async () => (await svc.api('GET', '/metrics')).body as string;
    // ACTIVE comes with the registration; the driver calls the replica ready after its first health check.
    await waitFor('a ready process', async () => (await scrape()).includes('agentctl_agent_processes{runtime="local",phase="ready"} 1\n'), 30_000);
    expect((await scrape()).match(/^agentctl_agent_processes\{.*$/gm)).toEqual(['agentctl_agent_processes{runtime="local",phase="ready"} 1']);

    const task = await svc.api('POST', '/tasks', { body: { agent_name: 'default/echo' } });
    await waitFor('the greeting', async () => (await svc.api('GET', `/messages?task_id=${task.body.id}`)).body.messages.length === 1, 60_000);
    // The greeting is recorded before the agent reports its handler done: the lease ends just after.
    await waitFor('an empty queue', async () => (await scrape()).includes('agentctl_delivery_oldest_age_seconds 0\n'), 30_000);
    const text = await scrape();
    for (const status of ['pending', 'in_flight', 'leased']) expect(text).toContain(`agentctl_delivery_queue_depth{status="${status}"} 0\n`);
  });
});
