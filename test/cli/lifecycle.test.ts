import { writeFileSync } from 'node:fs';
import path from 'node:path';
import type { z } from 'zod';
import { describe, expect, test } from 'vitest';
import { endpoints } from '../../src/contract/endpoints.js';
import { Version } from '../../src/contract/resources.js';
import { engines } from '../support/service.js';
import { deployActive } from '../support/fixtures.js';
import { gitRepo, runCli, useCliService } from './support.js';

/** stdout parsed and validated with the endpoint’s response schema. */
const parse = <K extends keyof typeof endpoints>(name: K, text: string): any => (endpoints[name].response as z.ZodType).parse(JSON.parse(text));

describe.each(engines)('agentctl deploy, rollback, tasks and states (%s)', (engine) => {
  const { svc, scratch, env } = useCliService(engine, (dir) => path.join(dir, 'config'));

  /** Reports the newest DEPLOYING version of the agent ready once it appears, as its container would. */
  async function registerWhenDeploying(agent: string, status: 'ACTIVE' | 'FAILED' = 'ACTIVE', extra: Record<string, unknown> = {}): Promise<string> {
    for (;;) {
      const res = await svc.api('GET', `/agents/${agent}/versions?status=DEPLOYING`);
      if (res.status === 200 && res.body.versions.length) {
        const id = res.body.versions[0].id;
        await svc.api('POST', '/versions/register', { body: { version_id: id, status, ...extra } });
        return id;
      }
      await new Promise((r) => setTimeout(r, 25));
    }
  }

  test('deploy reads git, waits until the version is ACTIVE, and --json prints the Version', async () => {
    const repo = await gitRepo(scratch.dir, 'Add the search tool');
    const hash = await repo.head();
    const [result, registered] = await Promise.all([
      runCli(['deploy', '--agent', 'default/bot', '--image', 'registry.local/bot:1', '--json'], { env, cwd: scratch.dir }),
      registerWhenDeploying('default/bot'),
    ]);
    expect(result.code).toBe(0);
    expect(result.stderr).toBe('');
    const version = Version.parse(result.json());
    expect(version).toMatchObject({
      id: registered,
      status: 'ACTIVE',
      git_hash: hash,
      git_branch: 'main',
      git_message: 'Add the search tool',
      author_name: 'Ada Lovelace',
      author_email: 'ada@example.com',
      image_url: 'registry.local/bot:1',
      is_dirty: false,
    });
  });

  test('deploy --detach returns the server’s deploy response at once', async () => {
    await gitRepo(scratch.dir);
    const result = await runCli(
      [
        'deploy',
        '--agent',
        'default/bot',
        '--image',
        'img:1',
        '--branch',
        'feature/x',
        '--replicas',
        '2',
        '--sdk-type',
        'beta_agent_sdk',
        '--acp-type',
        'sync',
        '--detach',
        '--json',
      ],
      { env, cwd: scratch.dir },
    );
    expect(result.code).toBe(0);
    const deployed = parse('deploy', result.stdout);
    expect(deployed.version_status).toBe('DEPLOYING');
    const version = (await svc.api('GET', `/versions/${deployed.version_id}`)).body;
    expect(version).toMatchObject({ git_branch: 'feature/x', sdk_type: 'beta_agent_sdk', acp_type: 'sync' });
  });

  test('deploy refuses a dirty tree unless --allow-dirty, which marks the version dirty', async () => {
    await gitRepo(scratch.dir);
    writeFileSync(path.join(scratch.dir, 'agent.py'), 'print("hi")\n');
    const refused = await runCli(['deploy', '--agent', 'default/bot', '--image', 'img:1'], { env, cwd: scratch.dir });
    expect(refused.code).toBe(2);
    expect(refused.stdout).toBe('');
    expect(refused.stderr).toContain('uncommitted changes');
    expect(refused.stderr).toContain('--allow-dirty');
    expect((await svc.api('GET', '/agents')).body.total).toBe(0);

    const allowed = await runCli(['deploy', '--agent', 'default/bot', '--image', 'img:1', '--allow-dirty', '--detach', '--json'], { env, cwd: scratch.dir });
    expect(allowed.code).toBe(0);
    expect((await svc.api('GET', `/versions/${allowed.json().version_id}`)).body.is_dirty).toBe(true);
  });

  test('versions register reports a DEPLOYING version ready, as a runtime without a driver would', async () => {
    await gitRepo(scratch.dir);
    const deployed = (await runCli(['deploy', '--agent', 'default/bot', '--image', 'img:1', '--detach', '--json'], { env, cwd: scratch.dir })).json();
    const result = await runCli(['versions', 'register', deployed.version_id, '--json'], { env, cwd: scratch.dir });
    expect(result.code).toBe(0);
    expect(parse('registerVersion', result.stdout).version).toMatchObject({ id: deployed.version_id, status: 'ACTIVE' });
    const failed = await runCli(['versions', 'register', deployed.version_id, '--status', 'FAILED', '--reason', 'crash_loop'], { env, cwd: scratch.dir });
    expect(failed.code).toBe(5);
    expect(failed.stderr).toContain(`Version v1 (${deployed.version_id}) is ACTIVE; it cannot become FAILED`);
  });

  test('deploy outside a git work tree is a usage error', async () => {
    const result = await runCli(['deploy', '--agent', 'default/bot', '--image', 'img:1'], { env, cwd: scratch.dir });
    expect(result.code).toBe(2);
    expect(result.stderr).toContain('not inside a git work tree');
  });

  test('a version that FAILS ends the deploy with exit 1 and the diagnostics', async () => {
    await gitRepo(scratch.dir);
    const [result] = await Promise.all([
      runCli(['deploy', '--agent', 'default/bot', '--image', 'img:broken'], { env, cwd: scratch.dir }),
      registerWhenDeploying('default/bot', 'FAILED', {
        failure_reason: 'image_pull_failed',
        failure_diagnostics: { title: 'Image not found', description: 'img:broken does not exist', action: 'Push the image, then deploy again' },
      }),
    ]);
    expect(result.code).toBe(1);
    expect(result.stderr).toContain('FAILED: image_pull_failed — Image not found: img:broken does not exist');
    expect(result.stderr).toContain('hint: Push the image, then deploy again');
  });

  test('deploy stops waiting after --timeout with exit 1', async () => {
    await gitRepo(scratch.dir);
    const result = await runCli(['deploy', '--agent', 'default/bot', '--image', 'img:1', '--timeout', '0'], { env, cwd: scratch.dir });
    expect(result.code).toBe(1);
    expect(result.stderr).toMatch(/ver_\w+ is still DEPLOYING after 0 s/);
  });

  test('rollback --yes moves the branch back, names what is not rolled back and the undo command', async () => {
    const first = await deployActive(svc, { agent: 'default/bot' });
    const second = await deployActive(svc, { agent: 'default/bot' });
    const result = await runCli(['rollback', '--agent', 'default/bot', '--branch', 'main', '--yes', '--detach'], { env });
    expect(result.code).toBe(0);
    expect(result.stdout).toContain(`Rolled back\tv2 (${second.version_id})\n`);
    expect(result.stdout).toContain(`Now serving\tv1 (${first.version_id})\n`);
    expect(result.stderr).toContain('Not rolled back: state records, API keys');
    expect(result.stderr).toContain(`Undo with: agentctl rollback --agent default/bot --branch main --to v2 --yes`);
    expect((await svc.api('GET', `/versions/${second.version_id}`)).body.status).toBe('ROLLED_BACK');
  });

  test('rollback --to a git-hash prefix with --json prints the server’s response', async () => {
    const first = await deployActive(svc, { agent: 'default/bot' });
    await deployActive(svc, { agent: 'default/bot' });
    await deployActive(svc, { agent: 'default/bot' });
    const result = await runCli(['rollback', '--agent', 'default/bot', '--branch', 'main', '--to', first.git_hash.slice(0, 9), '--json', '--detach', '--yes'], {
      env,
    });
    expect(result.code).toBe(0);
    expect(parse('rollbackBranch', result.stdout).target_version.id).toBe(first.version_id);
  });

  test('tasks create, get by id and name, list, cancel and delete', async () => {
    const { version_id: versionId } = await deployActive(svc, { agent: 'default/bot' });
    const created = await runCli(['tasks', 'create', '--agent', 'default/bot', '--name', 'report-1', '--params', '{"topic":"sales"}', '--json'], { env });
    expect(created.code).toBe(0);
    const task = parse('createTask', created.stdout);
    expect(task).toMatchObject({ name: 'report-1', status: 'RUNNING', params: { topic: 'sales' }, current_version_id: versionId });

    expect(parse('getTask', (await runCli(['tasks', 'get', 'report-1', '--json'], { env })).stdout).id).toBe(task.id);
    const listed = await runCli(['tasks', 'list', '--agent', 'default/bot', '--status', 'RUNNING'], { env });
    expect(listed.stdout).toMatch(new RegExp(`^${task.id}\treport-1\tdefault/bot\tRUNNING\tv1\t\\S+\n$`));

    const canceled = await runCli(['tasks', 'cancel', task.id, '--json'], { env });
    expect(parse('cancelTask', canceled.stdout).status).toBe('CANCELED');
    const deleted = await runCli(['tasks', 'delete', task.id, '--yes', '--json'], { env });
    expect(parse('deleteTask', deleted.stdout).status).toBe('DELETED');
  });

  test('tasks create with --params that is not a JSON object is a usage error', async () => {
    const result = await runCli(['tasks', 'create', '--agent', 'default/bot', '--params', '[1,2]'], { env });
    expect(result.code).toBe(2);
    expect(result.stderr).toContain('--params must be a JSON object');
  });

  test('tasks migrate --from V1 --to-latest --json moves every running task and prints the server’s response', async () => {
    const v1 = await deployActive(svc, { agent: 'default/bot' });
    const ids = [];
    for (let i = 0; i < 3; i++) ids.push((await svc.api('POST', '/tasks', { body: { agent_name: 'default/bot' } })).body.id);
    const v2 = await deployActive(svc, { agent: 'default/bot', are_tasks_sticky: true });
    const result = await runCli(['tasks', 'migrate', '--from', v1.version_id, '--to-latest', '--json', '--yes'], { env });
    expect(result.code).toBe(0);
    expect(result.stderr).toBe('');
    const response = parse('migrateTasks', result.stdout);
    expect(response).toMatchObject({ branch_id: v1.branch_id, from_version_id: v1.version_id, to_version: { id: v2.version_id } });
    expect(response.tasks.map((t: { id: string }) => t.id).sort()).toEqual([...ids].sort());
    const onV2 = await runCli(['tasks', 'list', '--on-version', v2.version_id, '--json'], { env });
    expect(parse('listTasks', onV2.stdout).total).toBe(3);
  });

  test('--json changes the output, never the confirmation: tasks migrate --json without --yes fails naming --yes and moves nothing', async () => {
    const v1 = await deployActive(svc, { agent: 'default/bot' });
    const task = (await svc.api('POST', '/tasks', { body: { agent_name: 'default/bot' } })).body;
    await deployActive(svc, { agent: 'default/bot', are_tasks_sticky: true });
    const result = await runCli(['tasks', 'migrate', '--from', v1.version_id, '--to-latest', '--json'], { env });
    expect(result.code).toBe(2);
    expect(result.stdout).toBe('');
    expect(JSON.parse(result.stderr).error).toMatchObject({
      code: 'needs_flag',
      message: 'Migrating tasks needs confirmation: pass --yes (no prompt without a terminal, or under CI, --non-interactive or --json)',
    });
    expect((await svc.api('GET', `/tasks/${task.id}`)).body.current_version_id).toBe(v1.version_id);
  });

  test('rollback --json without --yes fails naming --yes, with the command to paste, and the branch keeps its version', async () => {
    await deployActive(svc, { agent: 'default/bot' });
    const second = await deployActive(svc, { agent: 'default/bot' });
    const result = await runCli(['rollback', '--agent', 'default/bot', '--branch', 'main', '--json'], { env });
    expect(result.code).toBe(2);
    expect(result.stdout).toBe('');
    expect(JSON.parse(result.stderr).error).toMatchObject({
      code: 'needs_flag',
      message: 'Rolling back needs confirmation: pass --yes (no prompt without a terminal, or under CI, --non-interactive or --json)',
    });
    const plain = await runCli(['rollback', '--agent', 'default/bot', '--branch', 'main'], { env });
    expect(plain.stderr).toContain('try:  agentctl rollback --agent default/bot --branch main --yes');
    expect((await svc.api('GET', `/branches/${second.branch_id}`)).body.current_version.id).toBe(second.version_id);
  });

  test('tasks migrate --dry-run shows the plan and changes nothing', async () => {
    const v1 = await deployActive(svc, { agent: 'default/bot' });
    const task = (await svc.api('POST', '/tasks', { body: { agent_name: 'default/bot' } })).body;
    const v2 = await deployActive(svc, { agent: 'default/bot', are_tasks_sticky: true });
    const result = await runCli(
      ['tasks', 'migrate', '--agent', 'default/bot', '--from', v1.git_hash.slice(0, 8), '--to', v2.git_hash.slice(0, 8), '--dry-run'],
      { env },
    );
    expect(result.code).toBe(0);
    expect(result.stderr).toContain(
      `Plan: move 1 task on branch main from v1 to v2 (${v2.git_hash.slice(0, 7)} "commit ${v2.git_hash.slice(0, 7)}", ACTIVE).\n`,
    );
    expect(result.stdout).toContain(task.id);
    expect((await svc.api('GET', `/tasks/${task.id}`)).body.current_version_id).toBe(v1.version_id);
  });

  test('tasks migrate --task ... --yes prints what moved and the undo command while the old version still serves', async () => {
    const v1 = await deployActive(svc, { agent: 'default/bot' });
    const a = (await svc.api('POST', '/tasks', { body: { agent_name: 'default/bot' } })).body.id;
    const b = (await svc.api('POST', '/tasks', { body: { agent_name: 'default/bot' } })).body.id;
    // A canary: v2 is still DEPLOYING, so v1 stays ACTIVE and can take the tasks back.
    const v2 = (
      await svc.api('POST', '/agents/deploy', {
        body: {
          agent_name: 'bot',
          branch: 'main',
          git_hash: 'cafe1234',
          author_name: 'Ada',
          author_email: 'ada@example.com',
          image_url: 'img:2',
          sdk_type: 'alpha_agent_sdk',
          acp_type: 'async',
          are_tasks_sticky: true,
        },
      })
    ).body;
    const result = await runCli(['tasks', 'migrate', '--task', a, '--task', b, '--to', v2.version_id, '--yes'], { env });
    expect(result.code).toBe(0);
    expect(result.stderr).toContain(`Moved 2 tasks to v2 (cafe123, DEPLOYING; ${v2.version_id})`);
    expect(result.stderr).toContain(`Undo with: agentctl tasks migrate --task ${a} --task ${b} --to ${v1.version_id} --yes`);
    expect(
      result.stdout
        .trimEnd()
        .split('\n')
        .map((l) => l.split('\t')[0])
        .sort(),
    ).toEqual([a, b].sort());
  });

  test('tasks migrate says there is no undo when the old version retired as its last task left', async () => {
    const _v1 = await deployActive(svc, { agent: 'default/bot' });
    const a = (await svc.api('POST', '/tasks', { body: { agent_name: 'default/bot' } })).body.id;
    const v2 = await deployActive(svc, { agent: 'default/bot', are_tasks_sticky: true });
    const result = await runCli(['tasks', 'migrate', '--task', a, '--to', v2.version_id, '--yes'], { env });
    expect(result.code).toBe(0);
    expect(result.stderr).toContain(
      `v1 is now RETIRED: it takes no tasks, so they cannot be moved back. To serve it again, roll the branch back: agentctl rollback --agent default/bot --branch main --to v1 --yes`,
    );
    expect(result.stderr).not.toContain('Undo with:');
  });

  test('tasks migrate with two sources or no target is a usage error', async () => {
    const both = await runCli(['tasks', 'migrate', '--from', 'ver_x', '--task', 'task_y', '--to-latest'], { env });
    expect(both.code).toBe(2);
    expect(both.stderr).toContain('Give exactly one source');
    const none = await runCli(['tasks', 'migrate', '--from', 'ver_x'], { env });
    expect(none.code).toBe(2);
    expect(none.stderr).toContain('Give exactly one target');
  });

  test('states put creates the record for a new pair, then replaces it, merges with --merge, and honours --if-match', async () => {
    const { agent_id: agentId } = await deployActive(svc, { agent: 'default/bot' });
    const task = (await svc.api('POST', '/tasks', { body: { agent_name: 'default/bot' } })).body.id;
    const pair = ['--task', task, '--agent', 'default/bot'];

    const created = await runCli(['states', 'put', ...pair, '--data', '{"step":1,"notes":"a"}', '--json'], { env });
    expect(created.code).toBe(0);
    const first = parse('createState', created.stdout);
    expect(first).toMatchObject({ task_id: task, agent_id: agentId, state: { step: 1, notes: 'a' } });

    const replaced = await runCli(['states', 'put', ...pair, '--data', '{"step":2}', '--json'], { env });
    expect(parse('replaceState', replaced.stdout)).toMatchObject({ id: first.id, state: { step: 2 } });

    const merged = await runCli(['states', 'put', first.id, '--merge', '--data', '{"done":true}', '--json'], { env });
    const mergedState = parse('mergeState', merged.stdout);
    expect(mergedState.state).toEqual({ step: 2, done: true });

    const stale = await runCli(['states', 'put', first.id, '--data', '{}', '--if-match', String(mergedState.version - 1)], { env });
    expect(stale.code).toBe(5);
    const current = await runCli(['states', 'put', first.id, '--data', '{"step":3}', '--if-match', String(mergedState.version), '--json'], { env });
    expect(current.code).toBe(0);
    expect(current.json().state).toEqual({ step: 3 });
  });

  test('states put reads --file and standard input', async () => {
    await deployActive(svc, { agent: 'default/bot' });
    const task = (await svc.api('POST', '/tasks', { body: { agent_name: 'default/bot' } })).body.id;
    const file = path.join(scratch.dir, 'state.json');
    writeFileSync(file, '{"from":"file"}');
    const fromFile = await runCli(['states', 'put', '--task', task, '--agent', 'default/bot', '--file', file, '--json'], { env });
    expect(fromFile.json().state).toEqual({ from: 'file' });
    const fromStdin = await runCli(['states', 'put', '--task', task, '--agent', 'default/bot', '--json'], { env, stdin: '{"from":"stdin"}' });
    expect(fromStdin.json().state).toEqual({ from: 'stdin' });
  });

  test('states get by pair and by id, list, and delete', async () => {
    const { agent_id: agentId } = await deployActive(svc, { agent: 'default/bot' });
    const task = (await svc.api('POST', '/tasks', { body: { agent_name: 'default/bot' } })).body.id;
    const missing = await runCli(['states', 'get', '--task', task, '--agent', 'default/bot'], { env });
    expect(missing.code).toBe(3);
    expect(missing.stderr).toContain(`agentctl states put --task ${task} --agent default/bot --data '{}'`);

    const state = (await svc.api('POST', '/states', { body: { task_id: task, agent_id: agentId, state: { a: 1 } } })).body;
    expect(parse('getState', (await runCli(['states', 'get', '--task', task, '--agent', 'default/bot', '--json'], { env })).stdout).id).toBe(state.id);
    expect((await runCli(['states', 'get', state.id], { env })).stdout).toContain('State\t{"a":1}\n');
    expect(parse('listStates', (await runCli(['states', 'list', '--task', task, '--json'], { env })).stdout).total).toBe(1);
    const deleted = await runCli(['states', 'delete', state.id, '--yes', '--json'], { env });
    expect(parse('deleteState', deleted.stdout).id).toBe(state.id);
    expect((await runCli(['states', 'get', state.id], { env })).code).toBe(3);
  });

  test('states history: the values the state held before, newest first, with the version that wrote each', async () => {
    const { agent_id: agentId, version_id: versionId } = await deployActive(svc, { agent: 'default/bot' });
    const task = (await svc.api('POST', '/tasks', { body: { agent_name: 'default/bot', name: 'remembers' } })).body.id;
    // Nothing replaced yet: no rows (a pipe gets no "empty" sentence).
    expect(await runCli(['states', 'history', 'remembers'], { env })).toMatchObject({ code: 0, stdout: '' });
    for (const step of [1, 2, 3]) {
      await runCli(['states', 'put', '--task', task, '--agent', 'default/bot', '--data', JSON.stringify({ step })], { env });
      // A message moves the task's sequence on: the next write keeps this value in the history.
      await svc.api('POST', '/messages', { body: { task_id: task, content: `turn ${step}` } });
    }
    const listed = await runCli(['states', 'history', 'remembers', '--json'], { env });
    expect(listed.code).toBe(0);
    const history = parse('listStateHistory', listed.stdout);
    expect(history).toMatchObject({ total: 2, since_migration: null });
    expect(
      history.history.map((h: { state: unknown; agent_id: string; written_by_version_id: string }) => [h.state, h.agent_id, h.written_by_version_id]),
    ).toEqual([
      [{ step: 2 }, agentId, versionId],
      [{ step: 1 }, agentId, versionId],
    ]);
    const table = await runCli(['states', 'history', task, '--agent', 'default/bot'], { env });
    expect(
      table.stdout
        .trim()
        .split('\n')
        .map((line) => line.split('\t').filter((_, i) => i !== 2)),
    ).toEqual([
      [String(history.history[0].sequence_id), agentId, 'v1', '{"step":2}'],
      [String(history.history[1].sequence_id), agentId, 'v1', '{"step":1}'],
    ]);
    const missing = await runCli(['states', 'history', 'task_nope'], { env });
    expect(missing.code).toBe(3);
    expect(missing.stderr).toContain('Task task_nope was not found');
  });
});
