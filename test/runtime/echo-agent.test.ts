import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, test } from 'vitest';
import { fileURLToPath } from 'node:url';
import { openBlobStore, type BlobStore } from '../../src/server/blobs/index.js';
import { sourceFromFilesystem } from '../../src/server/runtime/wiring.js';
import { syncUp } from '../../src/sync/index.js';
import { engines, useService } from '../support/service.js';
import { createTask, deploy } from '../support/fixtures.js';
import { tempDir, waitFor } from './support/agents.js';
import { startLocalRuntime } from './support/local-runtime.js';

const ECHO = fileURLToPath(new URL('../../examples/echo/', import.meta.url));

// The real thing: the echo example (an ADK agent) deployed from a source filesystem, started by the
// local driver, registered with its one-time token, answering an event delivered by the dispatcher.
describe.each(engines)('the echo agent on the local runtime (%s)', (engine) => {
  let blobs: BlobStore;
  let runtime: Awaited<ReturnType<typeof startLocalRuntime>> | undefined;
  const data = tempDir('agentctl-echo-');
  beforeAll(async () => {
    blobs = await openBlobStore({ dir: `${data.path}/blobs` });
  });
  afterAll(async () => {
    await blobs?.close();
    data.remove();
  });
  // Opens after the blob store above and closes before it (after-hooks run in reverse).
  const svc = useService(engine, {}, { blobs: () => blobs });
  const active = (versionId: string) =>
    waitFor('ACTIVE', async () => (await svc.client().getVersion({ params: { version_id: versionId } })).status === 'ACTIVE', 60_000);
  beforeEach(async () => {
    runtime = await startLocalRuntime(svc, { dataDir: data.path, prepareSource: sourceFromFilesystem(svc.store, blobs) });
  });
  afterEach(async () => {
    await runtime?.close();
  });

  test('deployed from its source snapshot, it registers, becomes ACTIVE and answers an event', async () => {
    const client = svc.client();
    const fs = await client.createFilesystem({ body: { namespace: 'default' } });
    await syncUp({ baseUrl: svc.url, apiKey: svc.adminKey }, fs.id, ECHO);
    const d = await deploy(svc, { agent: 'echo', image_url: `local://${fs.id}`, source_filesystem_id: fs.id });
    await active(d.version_id);

    const task = await createTask(svc, { agent_name: 'default/echo', params: { topic: 'runtimes' } });
    await client.createEvent({ params: { task_id: task.id }, body: { content: 'hello' } });
    const texts = async () => (await svc.api('GET', `/messages?task_id=${task.id}`)).body.messages.map((m: any) => m.content.text);
    await waitFor('the echo', async () => (await texts()).includes('echo #1: hello'), 60_000);
    expect(await texts()).toEqual(['Hello! Send me anything about runtimes and I will echo it.', 'echo #1: hello']);
    const logs = await svc.api('GET', `/versions/${d.version_id}/logs`);
    expect(logs.status).toBe(200);
  });

  test('GET /metrics counts its process by phase, and the delivery queue drains to empty once it answered', async () => {
    const fs = await svc.client().createFilesystem({ body: { namespace: 'default' } });
    await syncUp({ baseUrl: svc.url, apiKey: svc.adminKey }, fs.id, ECHO);
    const d = await deploy(svc, { agent: 'echo', image_url: `local://${fs.id}`, source_filesystem_id: fs.id });
    await active(d.version_id);
    const scrape = async () => (await svc.api('GET', '/metrics')).body as string;
    // ACTIVE comes with the registration; the driver calls the replica ready after its first health check.
    await waitFor('a ready process', async () => (await scrape()).includes('agentctl_agent_processes{runtime="local",phase="ready"} 1\n'), 30_000);
    expect((await scrape()).match(/^agentctl_agent_processes\{.*$/gm)).toEqual(['agentctl_agent_processes{runtime="local",phase="ready"} 1']);

    const task = await createTask(svc, { agent_name: 'default/echo' });
    await waitFor('the greeting', async () => (await svc.client().listMessages({ query: { task_id: task.id } })).messages.length === 1, 60_000);
    // The greeting is recorded before the agent reports its handler done: the lease ends just after.
    await waitFor('an empty queue', async () => (await scrape()).includes('agentctl_delivery_oldest_age_seconds 0\n'), 30_000);
    const text = await scrape();
    for (const status of ['pending', 'in_flight', 'leased']) expect(text).toContain(`agentctl_delivery_queue_depth{status="${status}"} 0\n`);
  });
});
