import { beforeAll, beforeEach, describe, expect, test } from 'vitest';
import { engines, useService } from '../support/service.js';
import { createTask, deployActive } from '../support/fixtures.js';
import { neverEndingStdin, runCli, serviceEnv, tempDir, type CliOptions, type CliResult } from './support.js';

/** Fails the test instead of hanging when a command waits for input. */
async function withinSeconds(seconds: number, args: string[], options: CliOptions): Promise<CliResult> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_resolve, reject) => {
    timer = setTimeout(() => reject(new Error(`agentctl ${args.join(' ')} waited for input`)), seconds * 1000);
  });
  try {
    return await Promise.race([runCli(args, options), timeout]);
  } finally {
    clearTimeout(timer);
  }
}

describe.each(engines)('agentctl never prompts without a terminal (%s)', (engine) => {
  // One setup for every case: each command stops before it changes anything.
  const svc = useService(engine, {}, { resetBeforeEach: false });
  let config: ReturnType<typeof tempDir>;
  let env: Record<string, string>;
  let ids: { versionId: string; branchId: string; taskId: string; stateId: string; keyId: string; groupId: string };
  beforeAll(async () => {
    const v1 = await deployActive(svc, { agent: 'default/bot' });
    const task = await createTask(svc, { agent_name: 'default/bot' });
    const state = await svc.client().createState({ body: { task_id: task.id, agent_id: v1.agent_id, state: {} } });
    const key = await svc.client().whoami();
    const group = await svc.client().createGroup({ body: { name: 'platform' } });
    await svc.api('PUT', `/groups/${group.id}/members/${key.id}`);
    ids = { versionId: v1.version_id, branchId: v1.branch_id, taskId: task.id, stateId: state.id, keyId: key.id, groupId: group.id };
  });
  beforeEach(() => {
    config?.remove();
    config = tempDir();
    env = { ...serviceEnv(svc, config.dir), CI: 'true' };
  });

  test('auth login without a key fails at once with exit 2 naming --api-key', async () => {
    const { AGENTCTL_API_KEY: _key, ...noKey } = env;
    const result = await withinSeconds(10, ['auth', 'login'], { env: noKey, stdin: neverEndingStdin() });
    expect(result.code).toBe(2);
    expect(result.stdout).toBe('');
    expect(result.stderr).toContain('pass --api-key');
  });

  const cases: [string, () => string[], string][] = [
    ['agents delete', () => ['agents', 'delete', 'default/bot'], '--yes'],
    ['branches retire without a reason', () => ['branches', 'retire', ids.branchId], '--reason'],
    ['branches retire', () => ['branches', 'retire', ids.branchId, '--reason', 'done'], '--yes'],
    ['envs delete', () => ['envs', 'delete', 'preview', '--agent', 'default/bot'], '--yes'],
    ['tasks delete', () => ['tasks', 'delete', ids.taskId], '--yes'],
    ['tasks migrate', () => ['tasks', 'migrate', '--from', ids.versionId, '--to-latest'], '--yes'],
    ['rollback', () => ['rollback', '--agent', 'default/bot', '--branch', 'main'], '--yes'],
    ['states delete', () => ['states', 'delete', ids.stateId], '--yes'],
    ['keys create without flags', () => ['keys', 'create'], '--scope'],
    ['keys create without a name', () => ['keys', 'create', '--scope', 'namespace:default:admin'], '--name'],
    ['keys revoke', () => ['keys', 'revoke', ids.keyId], '--yes'],
    ['keys rotate', () => ['keys', 'rotate', ids.keyId], '--yes'],
    ['groups remove-member', () => ['groups', 'remove-member', ids.groupId, ids.keyId], '--yes'],
  ];

  test.each(cases.map(([name, args, flag]) => ({ name, args, flag })))('$name fails at once with exit 2 naming $flag', async ({ args, flag }) => {
    const result = await withinSeconds(10, args(), { env, stdin: neverEndingStdin() });
    expect(result.code).toBe(2);
    expect(result.stdout).toBe('');
    expect(result.stderr).toContain(`pass ${flag}`);
  });

  test('on a terminal, CI=true still never prompts', async () => {
    const result = await withinSeconds(10, ['tasks', 'delete', ids.taskId], { env, tty: true, stdin: neverEndingStdin() });
    expect(result.code).toBe(2);
    expect(result.stderr).toContain('pass --yes');
  });

  test('on a terminal, --non-interactive never prompts', async () => {
    const { CI: _ci, ...noCi } = env;
    const result = await withinSeconds(10, ['keys', 'revoke', ids.keyId, '--non-interactive'], { env: noCi, tty: true, stdin: neverEndingStdin() });
    expect(result.code).toBe(2);
    expect(result.stderr).toContain('pass --yes');
  });

  test('--json on a terminal never prompts', async () => {
    const { CI: _ci, ...noCi } = env;
    const result = await withinSeconds(10, ['agents', 'delete', 'default/bot', '--json'], { env: noCi, tty: true, stdin: neverEndingStdin() });
    expect(result.code).toBe(2);
    expect(JSON.parse(result.stderr).error.code).toBe('needs_flag');
  });

  test('states put with nothing on standard input fails naming --data', async () => {
    const result = await withinSeconds(10, ['states', 'put', ids.stateId], { env, stdin: '' });
    expect(result.code).toBe(2);
    expect(result.stderr).toContain('Pass --data JSON');
  });
});
