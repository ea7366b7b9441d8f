import { afterAll, afterEach, beforeEach, describe, expect, test } from 'vitest';
import { createLocalDriver } from '../../src/server/runtime/local/index.js';
import { startReconciler, type Reconciler } from '../../src/server/runtime/reconciler.js';
import type { RuntimeDriver } from '../../src/server/runtime/driver.js';
import { engines, useService } from '../support/service.js';
import { createTask, deploy, nextHash } from '../support/fixtures.js';
import { createKubernetesDriver } from '../../src/server/runtime/kubernetes/index.js';
import { resourceName } from '../../src/server/runtime/kubernetes/manifests.js';
import { FakeKubeApi } from '../support/kube-api.js';
import { alive, copyFixture, tempDir, waitFor } from './support/agents.js';
import { fakeSecretSource as secrets } from './support/local-runtime.js';

describe.each(engines)('runtime reconciler with the local driver (%s)', (engine) => {
  const svc = useService(engine);
  const data = tempDir('agentctl-reconciler-');
  let driver: RuntimeDriver;
  let reconciler: Reconciler;
  afterAll(() => data.remove());
  beforeEach(async () => {
    driver = createLocalDriver({ dataDir: data.path, prepareSource: copyFixture, healthIntervalMs: 100, startTimeoutMs: 15_000, stopGraceMs: 2_000 });
    reconciler = await startReconciler({ store: svc.store, driver, baseUrl: svc.url, secrets, intervalMs: 100, graceMs: 2_000 });
  });
  afterEach(async () => reconciler?.close());

  const version = (id: string) => svc.client().getVersion({ params: { version_id: id } });
  const statusOf = async (id: string): Promise<string> => (await version(id)).status;
  const becomes = (id: string, status: string) => waitFor(`${id} to become ${status}`, async () => (await statusOf(id)) === status);
  const pids = (id: string) => driver.status(id)?.replicas.map((r) => r.pid!) ?? [];
  const plain = { agent: 'plain', image_url: 'local://plain' };

  test('a deploy starts the version’s processes and makes it ACTIVE once they are ready', async () => {
    const d = await deploy(svc, { ...plain, replicas: 2 });
    await becomes(d.version_id, 'ACTIVE');
    await waitFor('both replicas ready', () => driver.status(d.version_id)!.replicas.every((r) => r.phase === 'ready'));
    expect(driver.status(d.version_id)!.replicas.map((r) => r.phase)).toEqual(['ready', 'ready']);
    const events = (await svc.client().listVersionEvents({ params: { version_id: d.version_id } })).events.map((e) => e.type);
    expect(events).toEqual(expect.arrayContaining(['VERSION_CREATED', 'VERSION_ACTIVATED']));
  });

  test('versions with a container image are left to whoever registers them', async () => {
    const d = await deploy(svc, { agent: 'imaged', image_url: 'registry.local/imaged:1' });
    await reconciler.reconcileNow();
    await reconciler.reconcileNow();
    expect(driver.running()).toEqual([]);
    expect(await statusOf(d.version_id)).toBe('DEPLOYING');
  });

  test('a deploy that crashes at start is FAILED crash_loop with its stderr; the branch keeps serving v1 and its task returns', async () => {
    const v1 = await deploy(svc, plain);
    await becomes(v1.version_id, 'ACTIVE');
    const task = await createTask(svc, { agent_name: 'default/plain' });
    const v2 = await deploy(svc, { agent: 'plain', image_url: 'local://exits-at-start', are_tasks_sticky: false });
    expect(v2.tasks_migrated).toBe(1);
    await becomes(v2.version_id, 'FAILED');

    const failed = await version(v2.version_id);
    expect(failed.failure_reason).toBe('crash_loop');
    expect(failed.failure_diagnostics?.title).toBe('The agent keeps exiting at start');
    expect(failed.failure_diagnostics?.description).toContain('Error: OPENAI_API_KEY is not set');
    expect((await svc.client().getBranch({ params: { branch_id: v1.branch_id } })).current_version?.id).toBe(v1.version_id);
    expect((await svc.client().getTask({ params: { task_id: task.id } })).current_version_id).toBe(v1.version_id);
    expect(await statusOf(v1.version_id)).toBe('ACTIVE');
    await waitFor('the failed version to stop running', () => !driver.running().includes(v2.version_id));
    expect(driver.running()).toEqual([v1.version_id]);
  });

  test('draining: a sticky deploy leaves v1 running while its task remains; migrating the task stops v1 and retires it', async () => {
    const v1 = await deploy(svc, plain);
    await becomes(v1.version_id, 'ACTIVE');
    const task = await createTask(svc, { agent_name: 'default/plain' });
    const v2 = await deploy(svc, { ...plain, are_tasks_sticky: true });
    await becomes(v2.version_id, 'ACTIVE');
    expect(await statusOf(v1.version_id)).toBe('DRAINING');
    const v1Pids = pids(v1.version_id);
    await reconciler.reconcileNow();
    expect(driver.running().sort()).toEqual([v1.version_id, v2.version_id].sort());
    expect(v1Pids.every(alive)).toBe(true);

    await svc.client().migrateTasks({ body: { task_ids: [task.id], to_version_id: v2.version_id } });
    expect(await statusOf(v1.version_id)).toBe('RETIRED');
    await waitFor('v1’s processes to stop', () => !driver.running().includes(v1.version_id) && !v1Pids.some(alive));
    expect(driver.running()).toEqual([v2.version_id]);
  });

  test('rollback brings the old version’s processes back and stops the rolled-back one', async () => {
    const v1 = await deploy(svc, plain);
    await becomes(v1.version_id, 'ACTIVE');
    const v2 = await deploy(svc, plain);
    await becomes(v2.version_id, 'ACTIVE');
    await waitFor('v1 (retired) to stop', () => !driver.running().includes(v1.version_id));

    await svc.client().rollbackBranch({ params: { branch_id: v1.branch_id }, body: {} });
    expect(await statusOf(v1.version_id)).toBe('ACTIVE');
    await waitFor('v1 to run again, ready', () => driver.status(v1.version_id)?.replicas[0]?.phase === 'ready');
    await waitFor('v2 (rolled back) to stop', () => !driver.running().includes(v2.version_id));
    expect(await statusOf(v2.version_id)).toBe('ROLLED_BACK');
  });

  test('failing health checks make the version UNHEALTHY; passing again makes it ACTIVE', async () => {
    const d = await deploy(svc, plain);
    await becomes(d.version_id, 'ACTIVE');
    const port = driver.status(d.version_id)!.replicas[0]!.port;
    await fetch(`http://127.0.0.1:${port}/test/health`, { method: 'POST', body: '{"ok":false}' });
    await becomes(d.version_id, 'UNHEALTHY');
    await fetch(`http://127.0.0.1:${port}/test/health`, { method: 'POST', body: '{"ok":true}' });
    await becomes(d.version_id, 'ACTIVE');
    const events = (await svc.client().listVersionEvents({ params: { version_id: d.version_id } })).events.map((e) => e.type);
    expect(events).toEqual(expect.arrayContaining(['VERSION_UNHEALTHY', 'VERSION_RECOVERED']));
  });

  test('closing the reconciler stops every process it started', async () => {
    const d = await deploy(svc, plain);
    await becomes(d.version_id, 'ACTIVE');
    const running = pids(d.version_id);
    await reconciler.close();
    expect(running.some(alive)).toBe(false);
  });

  test.runIf(engine === 'postgres')('one runtime lease among servers: a standby takes over when the holder stops', async () => {
    const standbyDriver = createLocalDriver({ dataDir: tempDir('agentctl-standby-').path, prepareSource: copyFixture, healthIntervalMs: 100 });
    const standby = await startReconciler({ store: svc.store, driver: standbyDriver, baseUrl: svc.url, secrets, intervalMs: 100, leaseRetryMs: 100 });
    try {
      expect(reconciler.holdsLease()).toBe(true);
      expect(standby.holdsLease()).toBe(false);
      const d = await deploy(svc, plain);
      await becomes(d.version_id, 'ACTIVE');
      expect(standbyDriver.running()).toEqual([]);
      await reconciler.close();
      await waitFor('the standby to take the lease', () => standby.holdsLease());
      await waitFor('the standby to run the version', () => standbyDriver.status(d.version_id)?.replicas[0]?.phase === 'ready');
    } finally {
      await standby.close();
    }
  });
});

describe.each(engines)('runtime reconciler with the kubernetes driver (%s)', (engine) => {
  const svc = useService(engine);
  let api: FakeKubeApi;
  let reconciler: Reconciler;
  beforeEach(async () => {
    api = await new FakeKubeApi().start();
    const driver = createKubernetesDriver({ kubeConfig: api.kubeConfig(), namespace: 'agentctl', pollIntervalMs: 50, graceMs: 1_000 });
    reconciler = await startReconciler({ store: svc.store, driver, baseUrl: svc.url, secrets, intervalMs: 100, graceMs: 1_000 });
  });
  afterEach(async () => {
    await reconciler?.close();
    await api?.close();
  });

  const container = (versionId: string) => api.objects.deployments.get(resourceName(versionId))?.spec.template.spec.containers[0];

  test('a deploy’s resources reach the container as deployed (numbers as their decimal text); without them the container has none', async () => {
    const client = svc.client();
    const sized = await client.deploy({
      body: {
        agent_name: 'default/sized',
        branch: 'main',
        git_hash: nextHash(),
        author_name: 'Ada',
        author_email: 'ada@example.com',
        image_url: 'registry.local/sized:1',
        resources: { requests: { cpu: '250m', memory: 268435456 }, limits: { cpu: 1, memory: '512Mi' } },
      },
    });
    const plain = await client.deploy({
      body: {
        agent_name: 'plain',
        branch: 'main',
        git_hash: nextHash(),
        author_name: 'Ada',
        author_email: 'ada@example.com',
        image_url: 'registry.local/plain:1',
      },
    });
    await reconciler.reconcileNow();
    await waitFor('both Deployments', () => container(sized.version_id) !== undefined && container(plain.version_id) !== undefined);
    expect(container(sized.version_id).resources).toEqual({ requests: { cpu: '250m', memory: '268435456' }, limits: { cpu: '1', memory: '512Mi' } });
    expect(container(plain.version_id)).not.toHaveProperty('resources');
  });
});
