import { afterAll, afterEach, beforeEach, describe, expect, test } from 'vitest';
import { createLocalDriver } from '../../src/server/runtime/local/index.js';
import { startReconciler, type Reconciler } from '../../src/server/runtime/reconciler.js';
import type { RuntimeDriver } from '../../src/server/runtime/driver.js';
import { parseSince } from '../../src/cli/commands/logs.js';
import { engines, useService } from '../support/service.js';
import { createTask, deploy, type DeployOptions } from '../support/fixtures.js';
import { scopedKey } from '../support/scoped-key.js';
import { runCli, serviceEnv, tempDir as cliTempDir } from '../cli/support.js';
import { copyFixture, tempDir, waitFor } from './support/agents.js';
import { fakeSecretSource as secrets } from './support/local-runtime.js';

describe.each(engines)('version logs: GET /versions/{id}/logs and agentctl logs (%s)', (engine) => {
  const svc = useService(engine);
  const data = tempDir('agentctl-logs-');
  const config = cliTempDir();
  let driver: RuntimeDriver;
  let reconciler: Reconciler;
  afterAll(() => {
    data.remove();
    config.remove();
  });
  beforeEach(async () => {
    driver = createLocalDriver({ dataDir: data.path, prepareSource: copyFixture, healthIntervalMs: 100, stopGraceMs: 2_000 });
    svc.service.runtime = driver;
    reconciler = await startReconciler({ store: svc.store, driver, baseUrl: svc.url, secrets, intervalMs: 100, graceMs: 2_000 });
  });
  afterEach(async () => {
    await reconciler?.close();
    svc.service.runtime = undefined;
  });

  const plain = { agent: 'plain', image_url: 'local://plain' };
  const active = async (overrides: DeployOptions = {}) => {
    const d = await deploy(svc, { ...plain, ...overrides });
    await waitFor(`${d.version_id} ACTIVE`, async () => (await svc.client().getVersion({ params: { version_id: d.version_id } })).status === 'ACTIVE');
    return d;
  };
  const port = (versionId: string) => driver.status(versionId)!.replicas[0]!.port!;
  const say = (versionId: string, ok: boolean) => fetch(`http://127.0.0.1:${port(versionId)}/test/health`, { method: 'POST', body: JSON.stringify({ ok }) });
  const listening = (versionId: string) => `plain agent ${versionId} replica 0 listening on ${port(versionId)}`;
  const cli = (...args: string[]) => runCli(args, { env: serviceEnv(svc, config.dir) });

  test('JSON: the lines of every replica, with version, replica, stream and time', async () => {
    const d = await active();
    await say(d.version_id, true);
    await waitFor('two lines', async () => (await svc.api('GET', `/versions/${d.version_id}/logs`)).body.lines.length === 2);
    const res = await svc.api('GET', `/versions/${d.version_id}/logs`);
    expect(res.status).toBe(200);
    expect(res.body.lines.map((l: any) => [l.version_id, l.replica, l.stream, l.line])).toEqual([
      [d.version_id, 0, 'stdout', listening(d.version_id)],
      [d.version_id, 0, 'stderr', 'health set to true'],
    ]);
    expect(new Date(res.body.lines[0].time).toISOString()).toBe(res.body.lines[0].time);
    expect((await svc.api('GET', `/versions/${d.version_id}/logs?tail=1`)).body.lines.map((l: any) => l.line)).toEqual(['health set to true']);
    const future = new Date(Date.now() + 60_000).toISOString();
    expect((await svc.api('GET', `/versions/${d.version_id}/logs?since=${future}`)).body).toEqual({ lines: [] });
  });

  test('bad queries are 422 naming the field; unknown versions and versions the key may not read are 404', async () => {
    const d = await deploy(svc, plain);
    const bad = await svc.api('GET', `/versions/${d.version_id}/logs?tail=lots&since=yesterday`);
    expect(bad.status).toBe(422);
    expect(bad.body.detail.map((i: any) => i.loc)).toEqual([
      ['query', 'tail'],
      ['query', 'since'],
    ]);
    expect((await svc.api('GET', '/versions/ver_unknown/logs')).status).toBe(404);
    const stranger = await scopedKey(svc, []);
    const hidden = await svc.api('GET', `/versions/${d.version_id}/logs`, { key: stranger });
    expect(hidden.status).toBe(404);
    expect(hidden.body).toEqual({ detail: `Version ${d.version_id} was not found`, code: 'not_found' });
  });

  test('a server without a runtime answers 409 no_runtime', async () => {
    const d = await deploy(svc, { agent: 'imaged', image_url: 'registry.local/imaged:1' });
    svc.service.runtime = undefined;
    const res = await svc.api('GET', `/versions/${d.version_id}/logs`);
    expect(res.status).toBe(409);
    expect(res.body.code).toBe('no_runtime');
  });

  test('follow: Server-Sent Events with the stored lines, then new lines as the agent writes them', async () => {
    const d = await active();
    const abort = new AbortController();
    const response = await fetch(`${svc.url}/versions/${d.version_id}/logs?follow=true`, {
      headers: { authorization: `Bearer ${svc.adminKey}` },
      signal: abort.signal,
    });
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toBe('text/event-stream');
    const reader = response.body!.getReader();
    let text = '';
    const events = () =>
      text
        .split('\n\n')
        .filter((b) => b.startsWith('event: log'))
        .map((b) => JSON.parse(b.split('\ndata: ')[1]!).line);
    const readUntil = async (count: number) => {
      while (events().length < count) text += new TextDecoder().decode((await reader.read()).value);
    };
    await readUntil(1);
    await say(d.version_id, false);
    await readUntil(2);
    abort.abort();
    expect(events()).toEqual([listening(d.version_id), 'health set to false']);
  });

  test('agentctl logs VERSION prints the lines; --json prints JSON Lines', async () => {
    const d = await active();
    await say(d.version_id, true);
    await waitFor('two lines', async () => (await svc.api('GET', `/versions/${d.version_id}/logs`)).body.lines.length === 2);
    const plainOut = await cli('logs', d.version_id);
    expect(plainOut.code).toBe(0);
    expect(plainOut.stdout.split('\n').map((l) => l.split('\t').slice(1).join('\t'))).toEqual([
      `v1\t0\tstdout\t${listening(d.version_id)}`,
      'v1\t0\tstderr\thealth set to true',
      '',
    ]);
    const json = await cli('logs', d.version_id, '--json', '--tail', '1');
    expect(json.code).toBe(0);
    expect(
      json.stdout
        .trim()
        .split('\n')
        .map((l) => JSON.parse(l)),
    ).toEqual([expect.objectContaining({ version_id: d.version_id, replica: 0, stream: 'stderr', line: 'health set to true' })]);
  });

  test('agentctl logs --agent: every version of the branch, merged by time, prefixed v<n>/<replica> on a terminal', async () => {
    const v1 = await active({ are_tasks_sticky: true });
    // A task keeps v1 running (DRAINING) after v2 is deployed.
    await createTask(svc, { agent_name: 'default/plain' });
    await say(v1.version_id, true);
    await waitFor('v1’s two lines', async () => (await svc.api('GET', `/versions/${v1.version_id}/logs`)).body.lines.length === 2);
    const v2 = await active({ are_tasks_sticky: true });
    await waitFor('v2’s line', async () => (await svc.api('GET', `/versions/${v2.version_id}/logs`)).body.lines.length === 1);
    const v1Lines = (await svc.api('GET', `/versions/${v1.version_id}/logs`)).body.lines.map((l: any) => l.line);
    const out = await runCli(['logs', '--agent', 'default/plain', '--no-color'], { env: serviceEnv(svc, config.dir), tty: true });
    expect(out.code).toBe(0);
    expect(out.stdout).toBe(`${[...v1Lines.map((l: string) => `v1/0 ${l}`), `v2/0 ${listening(v2.version_id)}`].join('\n')}\n`);
  });

  test('agentctl logs without a version or --agent is a usage error', async () => {
    const out = await cli('logs');
    expect(out.code).toBe(2);
    expect(out.stderr).toContain('--agent');
  });

  test('--since takes a duration or a time', () => {
    const now = Date.parse('2026-01-31T12:00:00.000Z');
    expect(parseSince('10m', now)).toBe('2026-01-31T11:50:00.000Z');
    expect(parseSince('2h', now)).toBe('2026-01-31T10:00:00.000Z');
    expect(parseSince('2026-01-30T00:00:00Z', now)).toBe('2026-01-30T00:00:00.000Z');
    expect(() => parseSince('yesterday', now)).toThrow('--since yesterday is neither a duration');
  });
});
