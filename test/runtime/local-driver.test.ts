import { afterAll, afterEach, describe, expect, test } from 'vitest';
import { spawn, execFileSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { createLocalDriver, type LocalDriverOptions } from '../../src/server/runtime/local/index.js';
import type { LogLine, RuntimeDriver } from '../../src/server/runtime/driver.js';
import { alive, copyFixture, recordHappenings, specFor, tempDir, testSecrets, waitFor } from './support/agents.js';

// Real child processes: every test stops what it started (afterEach closes the driver).
describe('local runtime driver', () => {
  const data = tempDir('agentctl-local-driver-');
  let driver: RuntimeDriver;
  let happenings: ReturnType<typeof recordHappenings>;
  const open = (options: Partial<LocalDriverOptions> = {}) => {
    driver = createLocalDriver({
      dataDir: data.path,
      prepareSource: copyFixture,
      healthIntervalMs: 100,
      startTimeoutMs: 15_000,
      stopGraceMs: 2_000,
      ...options,
    });
    happenings = recordHappenings(driver);
    return driver;
  };
  afterEach(async () => driver?.close());
  afterAll(() => data.remove());

  const portOf = (versionId: string, replica = 0) => driver.status(versionId)!.replicas[replica]!.port!;
  const pidOf = (versionId: string, replica = 0) => driver.status(versionId)!.replicas[replica]!.pid!;
  const collect = async (iterable: AsyncIterable<LogLine>) => {
    const out: LogLine[] = [];
    for await (const line of iterable) out.push(line);
    return out;
  };

  test('starts each replica on its own loopback port and process group, with the process contract environment', async () => {
    open();
    const spec = specFor('plain', { replicas: 2, env: { EXTRA: 'from the spec' } });
    const secrets = testSecrets();
    await driver.start(spec, secrets);
    await happenings.next(spec.versionId, 'ready');
    await happenings.next(spec.versionId, 'ready');

    const status = driver.status(spec.versionId)!;
    expect(status.replicas.map((r) => [r.replica, r.phase, r.restarts])).toEqual([
      [0, 'ready', 0],
      [1, 'ready', 0],
    ]);
    expect(new Set(status.replicas.map((r) => r.port)).size).toBe(2);
    for (const r of status.replicas) {
      const pgid = Number(
        execFileSync('ps', ['-o', 'pgid=', '-p', String(r.pid)])
          .toString()
          .trim(),
      );
      expect(pgid).toBe(r.pid);
    }
    const env = await (await fetch(`http://127.0.0.1:${portOf(spec.versionId, 1)}/test/env`)).json();
    expect(env).toMatchObject({
      AGENTCTL_BASE_URL: 'http://127.0.0.1:9',
      AGENTCTL_VERSION_ID: spec.versionId,
      AGENTCTL_BRANCH_ID: 'br_test',
      AGENTCTL_SIGNING_SECRET: 'whsec_test_signing_secret',
      PORT: String(portOf(spec.versionId, 1)),
      AGENTCTL_REPLICA: '1',
      GREETING: 'hello from agentctl.json',
      EXTRA: 'from the spec',
    });
    expect(env.AGENTCTL_DATA_ROOT).toBe(join(data.path, 'runtime', 'data', spec.versionId, '1'));
    expect(secrets.issued.sort()).toEqual(['rt_test_1', 'rt_test_2']);
    expect([env.AGENTCTL_REGISTRATION_TOKEN]).toSatisfy((t: string[]) => secrets.issued.includes(t[0]!));
    expect(env).not.toHaveProperty('DATABASE_URL');
    expect(env).not.toHaveProperty('AGENTCTL_BOOTSTRAP_KEY');
    expect(driver.running()).toEqual([spec.versionId]);
  });

  test('a second start of a running version does nothing', async () => {
    open();
    const spec = specFor('plain');
    const secrets = testSecrets();
    await driver.start(spec, secrets);
    await happenings.next(spec.versionId, 'ready');
    const pid = pidOf(spec.versionId);
    await driver.start(spec, secrets);
    expect(pidOf(spec.versionId)).toBe(pid);
    expect(secrets.issued).toHaveLength(1);
  });

  test('an agent that exits at start fails the version with crash_loop and its stderr in the diagnostics', async () => {
    open();
    const spec = specFor('exits-at-start');
    await driver.start(spec, testSecrets());
    const failed = await happenings.next(spec.versionId, 'failed');
    expect(failed.reason).toBe('crash_loop');
    expect(failed.diagnostics.title).toBe('The agent keeps exiting at start');
    expect(failed.diagnostics.description).toContain('exited 5 times within 60 s before it became ready (last exit: code 1)');
    expect(failed.diagnostics.description).toContain('Error: OPENAI_API_KEY is not set');
    expect(failed.diagnostics.action).toContain(`agentctl logs ${spec.versionId}`);
    const crashes = happenings.seen.filter((s) => s.versionId === spec.versionId && s.happening.kind === 'crashed').map((s) => s.happening);
    expect(crashes.map((c) => (c as { willRestart: boolean }).willRestart)).toEqual([true, true, true, true, false]);
    await waitFor('the failed version to be forgotten', () => !driver.running().includes(spec.versionId));
  });

  test('an agent that never answers /healthz fails the version with start_timeout, and its process is killed', async () => {
    open({ startTimeoutMs: 1_000 });
    const spec = specFor('never-ready');
    await driver.start(spec, testSecrets());
    await happenings.next(spec.versionId, 'started');
    const pid = pidOf(spec.versionId);
    const failed = await happenings.next(spec.versionId, 'failed');
    expect(failed.reason).toBe('start_timeout');
    expect(failed.diagnostics.description).toContain('did not answer GET /healthz on its PORT within 1 s');
    expect(failed.diagnostics.description).toContain('waiting for a queue that never comes');
    await waitFor('the agent process to end', () => !alive(pid));
  });

  test('three failed health checks make a replica unhealthy; a passing one recovers it', async () => {
    open();
    const spec = specFor('plain');
    await driver.start(spec, testSecrets());
    await happenings.next(spec.versionId, 'ready');
    await fetch(`http://127.0.0.1:${portOf(spec.versionId)}/test/health`, { method: 'POST', body: '{"ok":false}' });
    const unhealthy = await happenings.next(spec.versionId, 'unhealthy');
    expect(unhealthy).toEqual({ kind: 'unhealthy', replica: 0, detail: 'GET /healthz failed 3 times in a row' });
    expect(driver.status(spec.versionId)!.replicas[0]!.phase).toBe('unhealthy');
    await fetch(`http://127.0.0.1:${portOf(spec.versionId)}/test/health`, { method: 'POST', body: '{"ok":true}' });
    expect(await happenings.next(spec.versionId, 'recovered')).toEqual({ kind: 'recovered', replica: 0 });
    expect(driver.status(spec.versionId)!.replicas[0]!.phase).toBe('ready');
  });

  test('kill -9 of a ready agent: crashed, restarted with a fresh registration token, ready again', async () => {
    open({ restartBackoffMs: 50 });
    const spec = specFor('plain');
    const secrets = testSecrets();
    await driver.start(spec, secrets);
    await happenings.next(spec.versionId, 'ready');
    const pid = pidOf(spec.versionId);
    process.kill(pid, 'SIGKILL');
    expect(await happenings.next(spec.versionId, 'crashed')).toEqual({ kind: 'crashed', replica: 0, exitCode: null, signal: 'SIGKILL', willRestart: true });
    await happenings.next(spec.versionId, 'ready');
    const status = driver.status(spec.versionId)!.replicas[0]!;
    expect(status).toMatchObject({ phase: 'ready', restarts: 1 });
    expect(status.pid).not.toBe(pid);
    expect(secrets.issued).toEqual(['rt_test_1', 'rt_test_2']);
  });

  test('stop sends SIGTERM to the group and resolves when the agent has exited', async () => {
    open();
    const spec = specFor('plain');
    await driver.start(spec, testSecrets());
    await happenings.next(spec.versionId, 'ready');
    const pid = pidOf(spec.versionId);
    await driver.stop(spec.versionId, { graceMs: 5_000 });
    expect(alive(pid)).toBe(false);
    expect(driver.running()).toEqual([]);
    expect(driver.status(spec.versionId)).toBeUndefined();
    expect(happenings.kinds(spec.versionId).at(-1)).toBe('stopped');
    const logged = await collect(driver.logs(spec.versionId));
    expect(logged.at(-1)).toMatchObject({ replica: 0, stream: 'stdout', line: 'stopping on SIGTERM' });
  });

  test('stop kills an agent that ignores SIGTERM once the grace has passed', async () => {
    open({ startTimeoutMs: 60_000 });
    const spec = specFor('never-ready');
    await driver.start(spec, testSecrets());
    await happenings.next(spec.versionId, 'started');
    const pid = pidOf(spec.versionId);
    await waitFor('the agent to be up', async () => (await collect(driver.logs(spec.versionId))).length > 0);
    await driver.stop(spec.versionId, { graceMs: 300 });
    expect(alive(pid)).toBe(false);
    expect((await collect(driver.logs(spec.versionId))).map((l) => l.line)).toEqual(['waiting for a queue that never comes', 'ignoring SIGTERM']);
  });

  test('dependencies besides agentctl are installed, agentctl links to the running package, the build command runs first', async () => {
    open();
    const spec = specFor('with-deps');
    await driver.start(spec, testSecrets());
    await happenings.next(spec.versionId, 'ready');
    const answer = await (await fetch(`http://127.0.0.1:${portOf(spec.versionId)}/api`, { method: 'POST', body: '{}' })).json();
    expect(answer).toEqual({ greeting: 'hello from a dependency', agentctl: 'agentctl' });
    const source = join(data.path, 'runtime', 'versions', spec.versionId, 'source');
    expect(readdirSync(join(source, 'node_modules')).sort()).toEqual(
      ['.package-lock.json', 'agentctl', 'greeting'].filter((n) => existsSync(join(source, 'node_modules', n))),
    );
    expect(existsSync(join(source, 'node_modules', 'never-installed-dev-only'))).toBe(false);
    expect(JSON.parse(readFileSync(join(source, 'package.json'), 'utf8')).dependencies.agentctl).toBe('*');
  });

  test('a missing entry fails the version before any process starts', async () => {
    open();
    const spec = specFor('plain', { entry: 'src/missing.ts' });
    await driver.start(spec, testSecrets());
    const failed = await happenings.next(spec.versionId, 'failed');
    expect(failed).toMatchObject({
      reason: 'source_unavailable',
      diagnostics: { title: 'The entry file is missing', description: `src/missing.ts is not in the source of version ${spec.versionId}.` },
    });
    expect(happenings.kinds(spec.versionId)).toEqual([]);
  });

  describe('logs', () => {
    test('every replica’s stdout and stderr, with tail and since', async () => {
      open();
      const spec = specFor('plain', { replicas: 2 });
      await driver.start(spec, testSecrets());
      await happenings.next(spec.versionId, 'ready');
      await happenings.next(spec.versionId, 'ready');
      const before = new Date();
      await fetch(`http://127.0.0.1:${portOf(spec.versionId, 1)}/test/health`, { method: 'POST', body: '{"ok":true}' });
      await waitFor('the stderr line', async () => (await collect(driver.logs(spec.versionId))).some((l) => l.stream === 'stderr'));

      const all = await collect(driver.logs(spec.versionId));
      expect(all.map((l) => [l.replica, l.stream, l.line]).sort()).toEqual([
        [0, 'stdout', `plain agent ${spec.versionId} replica 0 listening on ${portOf(spec.versionId, 0)}`],
        [1, 'stderr', 'health set to true'],
        [1, 'stdout', `plain agent ${spec.versionId} replica 1 listening on ${portOf(spec.versionId, 1)}`],
      ]);
      expect((await collect(driver.logs(spec.versionId, { tail: 1 }))).map((l) => l.line)).toEqual(['health set to true']);
      expect((await collect(driver.logs(spec.versionId, { since: before }))).map((l) => l.line)).toEqual(['health set to true']);
    });

    test('follow yields the stored lines, then new ones as they are written, until aborted', async () => {
      open();
      const spec = specFor('plain');
      await driver.start(spec, testSecrets());
      await happenings.next(spec.versionId, 'ready');
      const abort = new AbortController();
      const seen: string[] = [];
      const following = (async () => {
        for await (const line of driver.logs(spec.versionId, { follow: true, signal: abort.signal })) {
          seen.push(line.line);
          if (seen.length === 3) abort.abort();
        }
      })();
      await waitFor('the stored line', () => seen.length === 1);
      for (const ok of [false, true]) await fetch(`http://127.0.0.1:${portOf(spec.versionId)}/test/health`, { method: 'POST', body: JSON.stringify({ ok }) });
      await following;
      expect(seen).toEqual([`plain agent ${spec.versionId} replica 0 listening on ${portOf(spec.versionId)}`, 'health set to false', 'health set to true']);
    });

    test('files rotate by size and the rotated lines are still read, oldest first', async () => {
      open({ rotation: { maxBytes: 200, keep: 5 } });
      const spec = specFor('plain');
      await driver.start(spec, testSecrets());
      await happenings.next(spec.versionId, 'ready');
      for (const ok of [false, true, false, true])
        await fetch(`http://127.0.0.1:${portOf(spec.versionId)}/test/health`, { method: 'POST', body: JSON.stringify({ ok }) });
      await waitFor('four lines', async () => (await collect(driver.logs(spec.versionId))).length === 5);
      const files = readdirSync(join(data.path, 'runtime', 'logs', spec.versionId)).sort();
      expect(files.length).toBeGreaterThan(1);
      expect(files[0]).toBe('replica-0.log');
      expect((await collect(driver.logs(spec.versionId))).slice(1).map((l) => l.line)).toEqual([
        'health set to false',
        'health set to true',
        'health set to false',
        'health set to true',
      ]);
    });
  });

  test('no orphans: when the process hosting the driver is killed with SIGKILL, its agents exit', async () => {
    const host = spawn(process.execPath, ['--import', 'tsx', 'test/runtime/support/driver-host.ts', data.path, 'plain'], {
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    try {
      const first = await new Promise<string>((done) => createInterface({ input: host.stdout! }).once('line', done));
      const { pid } = JSON.parse(first) as { pid: number };
      expect(alive(pid)).toBe(true);
      host.kill('SIGKILL');
      await waitFor(`agent ${pid} to exit after its server died`, () => !alive(pid));
    } finally {
      if (host.exitCode === null && host.signalCode === null) host.kill('SIGKILL');
    }
  });
});
