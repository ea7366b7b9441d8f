/**
 * Agent secrets on the local runtime (README "Secrets"): the processes get them as environment
 * variables; a change replaces the replicas one at a time, each new one ready before the next old
 * one goes; and nothing the runtime writes (its log files) holds a value.
 */
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, afterEach, beforeEach, describe, expect, test } from 'vitest';
import { createLocalDriver } from '../../src/server/runtime/local/index.js';
import { startReconciler, type Reconciler } from '../../src/server/runtime/reconciler.js';
import type { RuntimeDriver } from '../../src/server/runtime/driver.js';
import { secretDigests, versionSecretEnv } from '../../src/server/domain/secrets.js';
import { engines, useService } from '../support/service.js';
import { deploy } from '../support/fixtures.js';
import { copyFixture, recordHappenings, tempDir, waitFor } from './support/agents.js';
import { fakeSecretSource } from './support/local-runtime.js';

const FIRST = 'first-3c1e9d0b-value';
const SECOND = 'second-77af02c4-value';

describe.each(engines)('agent secrets on the local runtime (%s)', (engine) => {
  const svc = useService(engine);
  const data = tempDir('agentctl-runtime-secrets-');
  let driver: RuntimeDriver;
  let reconciler: Reconciler;
  let happenings: ReturnType<typeof recordHappenings>;
  afterAll(() => data.remove());
  beforeEach(async () => {
    driver = createLocalDriver({ dataDir: data.path, prepareSource: copyFixture, healthIntervalMs: 100, startTimeoutMs: 15_000, stopGraceMs: 2_000 });
    happenings = recordHappenings(driver);
    reconciler = await startReconciler({
      store: svc.store,
      driver,
      baseUrl: svc.url,
      // The fixture does not register: tokens and signing secrets are stand-ins; the agent's secrets are the real ones.
      secrets: {
        ...fakeSecretSource,
        agentSecrets: (versionId) => versionSecretEnv(svc.store.db, svc.service.secretsKey, versionId),
        agentSecretDigests: (versionIds) => secretDigests(svc.store.db, versionIds),
      },
      intervalMs: 100,
      graceMs: 2_000,
    });
  });
  afterEach(async () => reconciler?.close());

  const setSecret = (value: string) =>
    svc.client().setSecret({ params: { namespace_slug: 'default', agent_name: 'plain', secret_name: 'SERVICE_TOKEN' }, body: { value } });
  const envOf = async (port: number): Promise<Record<string, string>> => (await fetch(`http://127.0.0.1:${port}/test/env`)).json();
  const replicasOf = (versionId: string) => driver.status(versionId)?.replicas ?? [];
  const allReady = (versionId: string, count: number) => {
    const replicas = replicasOf(versionId);
    return replicas.length === count && replicas.every((r) => r.phase === 'ready');
  };

  test('processes start with the secret in their environment; a change replaces the replicas one at a time', { timeout: 60_000 }, async () => {
    const d = await deploy(svc, { agent: 'plain', image_url: 'local://plain', replicas: 2 });
    await setSecret(FIRST);
    // Started before or after the secret was set: either way every replica ends up with it.
    await waitFor('both replicas ready with the secret', async () => {
      if (!allReady(d.version_id, 2)) return false;
      const envs = await Promise.all(replicasOf(d.version_id).map((r) => envOf(r.port!).catch(() => ({}) as Record<string, string>)));
      return envs.every((env) => env.SERVICE_TOKEN === FIRST);
    });
    const before = replicasOf(d.version_id);
    happenings.seen.length = 0;

    await setSecret(SECOND);

    await waitFor('both replicas replaced and ready', () => {
      const now = replicasOf(d.version_id);
      return (
        allReady(d.version_id, 2) && now.every((r, i) => r.pid !== before[i]!.pid) && happenings.kinds(d.version_id).filter((k) => k === 'ready').length === 2
      );
    });
    // One at a time: replica 0 is replaced and ready before replica 1 goes.
    expect(
      happenings.seen.filter((s) => s.versionId === d.version_id).map((s) => [s.happening.kind, 'replica' in s.happening ? s.happening.replica : null]),
    ).toEqual([
      ['replaced', 0],
      ['started', 0],
      ['ready', 0],
      ['replaced', 1],
      ['started', 1],
      ['ready', 1],
    ]);
    for (const replica of replicasOf(d.version_id)) expect((await envOf(replica.port!)).SERVICE_TOKEN).toBe(SECOND);
    expect((await svc.client().getVersion({ params: { version_id: d.version_id } })).status).toBe('ACTIVE');

    // The runtime's own files (the replicas' logs) say a restart happened, never with what.
    const logDir = path.join(data.path, 'runtime', 'logs');
    const logs = readdirSync(logDir, { recursive: true, withFileTypes: true })
      .filter((e) => e.isFile())
      .map((e) => readFileSync(path.join(e.parentPath, e.name), 'utf8'))
      .join('\n');
    expect(logs).toContain("restarts: the agent's secrets changed");
    expect(logs).not.toContain(FIRST);
    expect(logs).not.toContain(SECOND);
  });

  test('a change to another agent’s secret restarts nothing', { timeout: 60_000 }, async () => {
    const d = await deploy(svc, { agent: 'plain', image_url: 'local://plain' });
    await deploy(svc, { agent: 'other', image_url: 'registry.local/other:1' });
    await waitFor('the replica ready', () => allReady(d.version_id, 1));
    const pid = replicasOf(d.version_id)[0]!.pid;

    await svc.client().setSecret({ params: { namespace_slug: 'default', agent_name: 'other', secret_name: 'SERVICE_TOKEN' }, body: { value: FIRST } });
    await reconciler.reconcileNow();
    await reconciler.reconcileNow();

    expect(replicasOf(d.version_id)[0]!.pid).toBe(pid);
    expect(happenings.kinds(d.version_id)).not.toContain('replaced');
  });
});
