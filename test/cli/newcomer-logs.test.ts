// Issue 18, "What a new user tripped over", item 5: `logs -f` follows every version of the branch
// (the quick start promises both versions' output), and piped output keeps time, version and replica.
// The built CLI against a real server whose local runtime runs the fixture agent.
import { afterAll, afterEach, beforeEach, describe, expect, test } from 'vitest';
import { createLocalDriver } from '../../src/server/runtime/local/index.js';
import { startReconciler, type Reconciler } from '../../src/server/runtime/reconciler.js';
import type { RuntimeDriver } from '../../src/server/runtime/driver.js';
import { engines } from '../support/service.js';
import { deploy } from '../support/fixtures.js';
import { copyFixture, tempDir, waitFor } from '../runtime/support/agents.js';
import { fakeSecretSource as secrets } from '../runtime/support/local-runtime.js';
import { agentctl, spawnAgentctl } from './built.js';
import { useCliService } from './support.js';

const ISO = '\\d{4}-\\d\\d-\\d\\dT\\d\\d:\\d\\d:\\d\\d\\.\\d{3}Z';

describe.each(engines)('newcomer, item 5: agentctl logs (%s)', (engine) => {
  const { svc, env } = useCliService(engine);
  const data = tempDir('agentctl-newcomer-logs-');
  let driver: RuntimeDriver;
  let reconciler: Reconciler;
  afterAll(() => data.remove());
  beforeEach(async () => {
    driver = createLocalDriver({ dataDir: data.path, prepareSource: copyFixture, healthIntervalMs: 100, stopGraceMs: 2_000 });
    svc.service.runtime = driver;
    reconciler = await startReconciler({ store: svc.store, driver, baseUrl: svc.url, secrets, intervalMs: 100, graceMs: 2_000 });
  });
  afterEach(async () => {
    await reconciler?.close();
    svc.service.runtime = undefined;
  });

  const active = async () => {
    const d = await deploy(svc, { agent: 'plain', image_url: 'local://plain' });
    await waitFor(`${d.version_id} ACTIVE`, async () => (await svc.client().getVersion({ params: { version_id: d.version_id } })).status === 'ACTIVE');
    await waitFor(`${d.version_id}'s first line`, async () => (await svc.api('GET', `/versions/${d.version_id}/logs`)).body.lines.length > 0);
    return d;
  };
  const port = (versionId: string) => driver.status(versionId)!.replicas[0]!.port!;
  const listening = (versionId: string) => `plain agent ${versionId} replica 0 listening on ${port(versionId)}`;

  test('piped: each line is time, version, replica, stream and text, tab-separated', async () => {
    const v1 = await active();
    const line = listening(v1.version_id);
    const result = await agentctl(['logs', '--agent', 'default/plain'], { env });
    expect(result.code, result.stderr).toBe(0);
    expect(result.stdout).toMatch(new RegExp(`^${ISO}\\tv1\\t0\\tstdout\\t${line}\\n$`));
  });

  test('-f after a second deploy retired v1: both versions’ lines, then new ones as they come', async () => {
    const v1 = await active();
    const v1Line = listening(v1.version_id);
    const v2 = await active();
    const v2Line = listening(v2.version_id);
    await waitFor('v1 retired', async () => (await svc.client().getVersion({ params: { version_id: v1.version_id } })).status === 'RETIRED');
    // Its process has stopped, saying so: v1's last line (v2 was listening before v1 retired).
    await waitFor('v1 stopped', async () =>
      (await svc.api('GET', `/versions/${v1.version_id}/logs`)).body.lines.some((l: any) => l.line === 'stopping on SIGTERM'),
    );

    const follow = spawnAgentctl(['logs', '--agent', 'default/plain', '-f'], { env });
    let out = '';
    follow.stdout!.on('data', (chunk) => (out += chunk));
    await waitFor('both versions’ stored lines', () => out.includes(`\tv1\t0\tstdout\t${v1Line}\n`) && out.includes(`\tv2\t0\tstdout\t${v2Line}\n`), 30_000);
    await fetch(`http://127.0.0.1:${port(v2.version_id)}/test/health`, { method: 'POST', body: JSON.stringify({ ok: true }) });
    await waitFor('v2’s new line', () => out.includes('\tv2\t0\tstderr\thealth set to true\n'), 30_000);
    follow.kill('SIGINT');
    const ended = await follow;
    expect(ended.exitCode).toBe(130);
    expect(ended.stderr).toContain(`Following v1 (${v1.version_id}), v2 (${v2.version_id}); Ctrl-C to stop.`);
    // Each line once: the stored ones are not repeated by the streams that follow them.
    expect(
      out
        .split('\n')
        .filter(Boolean)
        .map((l) => l.split('\t').slice(1).join('\t')),
    ).toEqual([`v1\t0\tstdout\t${v1Line}`, `v2\t0\tstdout\t${v2Line}`, 'v1\t0\tstdout\tstopping on SIGTERM', 'v2\t0\tstderr\thealth set to true']);
  });
});
