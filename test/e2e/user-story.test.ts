import { mkdirSync } from 'node:fs';
import { beforeAll, describe, expect, test } from 'vitest';
import { endpoints, MigrateTasksResponse } from '../../src/contract/endpoints.js';
import { Task } from '../../src/contract/resources.js';
import { gitRepo } from '../cli/support.js';
import { freePort } from '../support/ports.js';
import { useE2e } from '../support/e2e.js';

// The built binary, as a user runs it, against `agentctl server start --detach` in a real process.
describe('e2e: start a server, deploy two versions, migrate tasks', () => {
  const e2e = useE2e('pglite', {
    scratch: 'agentctl-e2e',
    project: 'agent',
    init: false,
    async prepare() {
      mkdirSync(e2e.projectDir, { recursive: true });
      await gitRepo(e2e.projectDir, 'First version of the story agent');
    },
  });
  const agentctl = (...args: string[]) => e2e.agentctl(args);
  const json = (...args: string[]) => e2e.json(args);
  let baseUrl = '';
  let key = '';
  /** What the agent's container does once it is up. */
  const register = async (versionId: string) => {
    const res = await fetch(`${baseUrl}/versions/register`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ version_id: versionId }),
    });
    expect(res.status).toBe(200);
  };

  beforeAll(async () => {
    baseUrl = e2e.server.url;
    key = (await agentctl('config', 'get', 'api_key', '--reveal', '--profile', 'local')).stdout.trim();
  });

  test('server start saved the bootstrap key into the local profile, made it current, and status reports health', async () => {
    expect(key).toMatch(/^agk_[0-9A-Za-z]{49}$/);
    expect((await agentctl('config', 'get', 'current_profile')).stdout).toBe('local');
    const status = await json('server', 'status');
    expect(status).toMatchObject({ url: baseUrl, engine: 'pglite', healthy: true, health: 'ok' });
    const whoami = await json('auth', 'status');
    expect(endpoints.whoami.response.parse(whoami.whoami).name).toBe('bootstrap');
  });

  test('deploy two versions, run tasks on the first, migrate them to the latest', async () => {
    const v1 = endpoints.deploy.response.parse(await json('deploy', '--agent', 'default/story', '--image', 'registry.local/story:1', '--detach'));
    await register(v1.version_id);
    const tasks = [];
    for (let i = 0; i < 3; i++) tasks.push(Task.parse(await json('tasks', 'create', '--agent', 'default/story')));
    expect(tasks.every((t) => t.current_version_id === v1.version_id)).toBe(true);

    await e2e.git(['commit', '-q', '--allow-empty', '-m', 'Second version']);
    const v2 = endpoints.deploy.response.parse(await json('deploy', '--agent', 'default/story', '--image', 'registry.local/story:2', '--sticky', '--detach'));
    await register(v2.version_id);

    const migrated = MigrateTasksResponse.parse(await json('tasks', 'migrate', '--from', v1.version_id, '--to-latest', '--yes'));
    expect(migrated.from_version_id).toBe(v1.version_id);
    expect(migrated.to_version.id).toBe(v2.version_id);
    expect(migrated.tasks.map((t) => t.id).sort()).toEqual(tasks.map((t) => t.id).sort());

    const versions = endpoints.listAgentVersions.response.parse(await json('versions', 'list', '--agent', 'default/story'));
    expect(versions.versions.map((v) => [v.id, v.status])).toEqual([
      [v2.version_id, 'ACTIVE'],
      [v1.version_id, 'RETIRED'],
    ]);
    const listed = endpoints.listTasks.response.parse(await json('tasks', 'list', '--agent', 'default/story'));
    expect(listed.tasks.map((t) => [t.current_version_id, t.created_version_id])).toEqual(tasks.map(() => [v2.version_id, v1.version_id]));

    const table = await agentctl('versions', 'list', '--agent', 'default/story');
    const columns = table.stdout.split('\n').map((l) => l.split('\t'));
    expect(columns.map((c) => [c[0], c[4]])).toEqual([
      ['v2', 'ACTIVE'],
      ['v1', 'RETIRED'],
    ]);
  });

  test('Ctrl-C (SIGINT) while a deploy waits exits 130', async () => {
    await e2e.git(['commit', '-q', '--allow-empty', '-m', 'Third']);
    const waiting = agentctl('deploy', '--agent', 'default/story', '--image', 'registry.local/story:3');
    for (;;) {
      const res = await fetch(`${baseUrl}/agents/default/story/versions?status=DEPLOYING`, { headers: { authorization: `Bearer ${key}` } });
      if ((await res.json()).total === 1) break;
      await new Promise((r) => setTimeout(r, 50));
    }
    waiting.kill('SIGINT');
    const result = await waiting;
    expect(result.exitCode).toBe(130);
    expect(result.stderr).toContain('Stopped waiting;');
    expect(result.stderr).toContain('error: Interrupted');
  });

  test('a second start on the same data directory refuses with exit 5', async () => {
    const again = await agentctl('server', 'start', '--detach', '--port', String(await freePort()));
    expect(again.exitCode).toBe(5);
    expect(again.stderr).toContain('already running');
  });

  test('server stop ends it by its pid file; status then exits 3', async () => {
    const stopped = await agentctl('server', 'stop', '--json');
    expect(stopped.exitCode, stopped.stderr).toBe(0);
    expect(JSON.parse(stopped.stdout)).toMatchObject({ url: baseUrl, stopped: true, killed: false });
    await expect(fetch(`${baseUrl}/healthz`)).rejects.toThrow();
    expect((await agentctl('server', 'status')).exitCode).toBe(3);
  });
});
