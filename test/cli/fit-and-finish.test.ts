import { writeFileSync } from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { engines } from '../support/service.js';
import { createTask as createTaskOn, deployActive, nextHash } from '../support/fixtures.js';
import { gitRepo, runCli, useCliService } from './support.js';

describe.each(engines)('agentctl fit and finish (%s)', (engine) => {
  const { svc, scratch, env } = useCliService(engine, (dir) => path.join(dir, 'config'));

  const createTask = async () => (await createTaskOn(svc, { agent_name: 'default/bot' })).id;

  test('deploy --json that times out prints the version on stdout and the error on stderr, exit 1', async () => {
    await gitRepo(scratch.dir);
    const result = await runCli(['deploy', '--agent', 'default/bot', '--image', 'img:1', '--timeout', '0', '--json'], { env, cwd: scratch.dir });
    expect(result.code).toBe(1);
    expect(result.json()).toMatchObject({ number: 1, status: 'DEPLOYING', image_url: 'img:1' });
    const versionId = result.json().id;
    expect(JSON.parse(result.stderr).error).toMatchObject({ code: 'timeout', message: `${versionId} is still DEPLOYING after 0 s` });
  });

  describe('lists cut by --limit', () => {
    const fiveTasks = async () => {
      await deployActive(svc, { agent: 'default/bot' });
      const ids: string[] = [];
      for (let i = 0; i < 5; i++) ids.push(await createTask());
      return ids;
    };

    test('on a terminal, a cut list says how many there are and how to see the rest', async () => {
      await fiveTasks();
      const result = await runCli(['tasks', 'list', '--agent', 'default/bot', '--limit', '2'], { env, tty: true });
      expect(result.code).toBe(0);
      expect(result.stderr).toBe('showing 2 of 5; --page 2 or --all\n');
      const later = await runCli(['tasks', 'list', '--agent', 'default/bot', '--limit', '2', '--page', '2'], { env, tty: true });
      expect(later.stderr).toBe('showing 3-4 of 5; --page 3 or --all\n');
    });

    test('piped, the rows are the only output', async () => {
      await fiveTasks();
      const result = await runCli(['tasks', 'list', '--agent', 'default/bot', '--limit', '2'], { env });
      expect(result.stderr).toBe('');
      expect(result.stdout.trim().split('\n')).toHaveLength(2);
    });

    test('--all pages through every row; --json keeps total', async () => {
      const ids = await fiveTasks();
      const result = await runCli(['tasks', 'list', '--agent', 'default/bot', '--limit', '2', '--all', '--json'], { env });
      expect(result.code).toBe(0);
      const listed = result.json();
      expect(listed.total).toBe(5);
      expect(listed.tasks.map((t: { id: string }) => t.id).sort()).toEqual([...ids].sort());
    });
  });

  test('a validation error names the flag the user typed, not the API field', async () => {
    const result = await runCli(['tasks', 'list', '--limit', '5000'], { env });
    expect(result.code).toBe(2);
    expect(result.stderr).toContain('error: Invalid request: --limit: ');
    expect(result.stderr).not.toContain('query.limit');
  });

  test('a conflict on a finished task says what to do instead', async () => {
    await deployActive(svc, { agent: 'default/bot' });
    const task = await createTask();
    await svc.client().cancelTask({ params: { task_id: task } });
    const result = await runCli(['tasks', 'cancel', task, '--yes'], { env });
    expect(result.code).toBe(5);
    expect(result.stderr).toContain('hint: The task has ended (COMPLETED, FAILED, CANCELED, ...): it takes no more changes; create a new task instead.');
  });

  test('enum flags take any case', async () => {
    await deployActive(svc, { agent: 'default/bot' });
    const task = await createTask();
    const result = await runCli(['tasks', 'list', '--agent', 'default/bot', '--status', 'running', '--json'], { env });
    expect(result.code).toBe(0);
    expect(result.json().tasks.map((t: { id: string }) => t.id)).toEqual([task]);
    const wrong = await runCli(['tasks', 'list', '--status', 'sleeping'], { env });
    expect(wrong.code).toBe(2);
    expect(wrong.stderr).toContain('Allowed choices are IDLE, CANCELED, COMPLETED, FAILED, RUNNING, TERMINATED, TIMED_OUT, DELETED.');
  });

  test('ls and rm are list and delete', async () => {
    await deployActive(svc, { agent: 'default/bot' });
    const task = await createTask();
    const listed = await runCli(['tasks', 'ls', '--agent', 'default/bot', '--json'], { env });
    expect(listed.json().tasks.map((t: { id: string }) => t.id)).toEqual([task]);
    const removed = await runCli(['agents', 'rm', 'default/bot', '--yes', '--json'], { env });
    expect(removed.code).toBe(0);
    expect((await svc.api('GET', '/agents/name/default/bot')).status).toBe(404);
  });

  describe('version numbers', () => {
    test('tasks migrate --from v1 --to-latest --agent default/bot moves the tasks of v1 to the newest version', async () => {
      const v1 = await deployActive(svc, { agent: 'default/bot' });
      const task = await createTask();
      const v2 = await deployActive(svc, { agent: 'default/bot', are_tasks_sticky: true });
      const result = await runCli(['tasks', 'migrate', '--from', 'v1', '--to-latest', '--agent', 'default/bot', '--yes', '--json'], { env });
      expect(result.stderr).toBe('');
      expect(result.code).toBe(0);
      expect(result.json().tasks.map((t: { id: string }) => t.id)).toEqual([task]);
      expect((await svc.client().getTask({ params: { task_id: task } })).current_version_id).toBe(v2.version_id);
      expect(v1.version_id).not.toBe(v2.version_id);
    });

    test('versions list shows each version as vN', async () => {
      const v1 = await deployActive(svc, { agent: 'default/bot' });
      const v2 = await deployActive(svc, { agent: 'default/bot' });
      const result = await runCli(['versions', 'list', '--agent', 'default/bot'], { env });
      expect(result.code).toBe(0);
      const rows = result.stdout
        .trim()
        .split('\n')
        .map((line) => line.split('\t').slice(0, 2));
      expect(rows).toEqual([
        ['v2', v2.version_id],
        ['v1', v1.version_id],
      ]);
    });

    test('the agentctl.json of the current directory gives --agent its default', async () => {
      await deployActive(svc, { agent: 'default/bot' });
      const v2 = await deployActive(svc, { agent: 'default/bot' });
      writeFileSync(path.join(scratch.dir, 'agentctl.json'), JSON.stringify({ agent: 'default/bot' }));
      const result = await runCli(['versions', 'get', 'v2', '--json'], { env, cwd: scratch.dir });
      expect(result.stderr).toBe('');
      expect(result.json()).toMatchObject({ id: v2.version_id, number: 2 });
    });

    test('--agent wins over agentctl.json', async () => {
      await deployActive(svc, { agent: 'default/bot' });
      const other = await deployActive(svc, { agent: 'default/other' });
      writeFileSync(path.join(scratch.dir, 'agentctl.json'), JSON.stringify({ agent: 'default/bot' }));
      const result = await runCli(['versions', 'get', 'v1', '--agent', 'default/other', '--json'], { env, cwd: scratch.dir });
      expect(result.json().id).toBe(other.version_id);
    });

    test('an invalid agentctl.json is a usage error naming the file', async () => {
      writeFileSync(path.join(scratch.dir, 'agentctl.json'), JSON.stringify({ agent: 'Not A Name' }));
      const result = await runCli(['versions', 'list'], { env, cwd: scratch.dir });
      expect(result.code).toBe(2);
      expect(result.stderr).toContain(`${path.join(scratch.dir, 'agentctl.json')} is not a valid agentctl.json: agent: namespace/name, e.g. default/my-bot`);
    });

    test('vN without an agent says to add --agent or an agentctl.json', async () => {
      const result = await runCli(['versions', 'get', 'v1'], { env, cwd: scratch.dir });
      expect(result.code).toBe(2);
      expect(result.stderr).toContain('version v1 names a version of an agent: add --agent namespace/name (or run where agentctl.json names the agent)');
    });

    test('a three-character hash is refused with the minimum length', async () => {
      const result = await runCli(['versions', 'get', 'abc', '--agent', 'default/bot'], { env });
      expect(result.code).toBe(2);
      expect(result.stderr).toContain('version abc is not a version reference');
      expect(result.stderr).toContain('a git-hash prefix of at least 4 hex characters');
    });

    test('two deploys of one commit are told apart by number and deploy time', async () => {
      const hash = nextHash();
      await deployActive(svc, { agent: 'default/bot', branch: 'main', hash });
      await deployActive(svc, { agent: 'default/bot', branch: 'feature/x', hash });
      const result = await runCli(['rollback', '--agent', 'default/bot', '--branch', 'main', '--to', hash.slice(0, 6), '--yes'], { env });
      expect(result.code).toBe(2);
      expect(result.stderr).toMatch(
        new RegExp(
          `--to ${hash.slice(0, 6)} matches several versions of default/bot: v2 \\(${hash.slice(0, 12)}, deployed \\S+\\), v1 \\(${hash.slice(0, 12)}, deployed \\S+\\)`,
        ),
      );
      expect(result.stderr).toContain('Name the version by its number (vN) or give more characters of the hash.');
    });

    test('a number the agent has not reached is exit 3 pointing at versions list', async () => {
      await deployActive(svc, { agent: 'default/bot' });
      const result = await runCli(['versions', 'get', 'v7', '--agent', 'default/bot'], { env });
      expect(result.code).toBe(3);
      expect(result.stderr).toContain('Agent default/bot has no version v7');
      expect(result.stderr).toContain('agentctl versions list --agent default/bot');
    });
  });
});

describe('answers that are not the service’s JSON', () => {
  let answer: { status: number; type?: string; body: string } = { status: 200, body: '' };
  let server: http.Server;
  let baseUrl: string;
  beforeAll(async () => {
    server = http.createServer((_req, res) => {
      res.writeHead(answer.status, answer.type ? { 'content-type': answer.type } : {});
      res.end(answer.body);
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  afterAll(async () => {
    await new Promise((resolve) => server.close(resolve));
  });
  const env = () => ({ AGENTCTL_BASE_URL: baseUrl, AGENTCTL_API_KEY: 'ak_test', AGENTCTL_RETRIES: '0', AGENTCTL_CONFIG_DIR: '/nonexistent/agentctl-test' });

  test.each([
    { status: 502, type: 'text/html', body: '<html><body><h1>502 Bad Gateway</h1></body></html>', what: 'an HTML page' },
    { status: 404, type: undefined, body: '', what: 'an empty body' },
    { status: 200, type: undefined, body: '', what: 'an empty body' },
    { status: 500, type: 'text/plain', body: 'upstream connect error', what: 'a body that is not JSON' },
  ])('HTTP $status with $what: exit 6 asking whether AGENTCTL_BASE_URL is right', async ({ status, type, body, what }) => {
    answer = { status, type, body };
    const result = await runCli(['versions', 'list', '--agent', 'default/bot'], { env: env() });
    expect(result.code).toBe(6);
    expect(result.stdout).toBe('');
    expect(result.stderr).toContain(
      `error: HTTP ${status} with ${what} from GET ${baseUrl}/agents/default/bot/versions?limit=20: that is not an answer of the agentctl service`,
    );
    expect(result.stderr).toContain(`hint: Is AGENTCTL_BASE_URL right? This agentctl talks to ${baseUrl}`);
  });

  test('JSON cut short is exit 1 saying the answer was cut off', async () => {
    answer = { status: 200, type: 'application/json', body: '{"versions": [{"id": "ver_' };
    const result = await runCli(['versions', 'list', '--agent', 'default/bot', '--json'], { env: env() });
    expect(result.code).toBe(1);
    expect(result.stdout).toBe('');
    expect(JSON.parse(result.stderr).error).toMatchObject({
      code: 'truncated_response',
      status: 200,
      hint: 'A proxy or the network cut the answer short; run the command again.',
    });
  });
});
