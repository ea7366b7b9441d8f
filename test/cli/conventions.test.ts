import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { beforeEach, describe, expect, test } from 'vitest';
import { TaskStatus, VersionStatus } from '../../src/contract/common.js';
import { registry } from '../../src/cli/registry.js';
import { engines } from '../support/service.js';
import { deployActive } from '../support/fixtures.js';
import { runCli, useCliService } from './support.js';

/** The CLI conventions of the README's CLI section, each through the real CLI against a real service. */
describe.each(engines)('agentctl conventions (%s)', (engine) => {
  const { svc, scratch, env } = useCliService(engine, (dir) => path.join(dir, 'config'));
  const configDir = () => path.join(scratch.dir, 'config');
  /** No key or URL in the environment: only the config file. */
  const bare = () => ({ AGENTCTL_CONFIG_DIR: configDir(), AGENTCTL_RETRIES: '0' });
  const createTask = async (body: Record<string, unknown> = {}) =>
    (await svc.api('POST', '/tasks', { body: { agent_name: 'default/bot', ...body } })).body.id as string;

  describe('auth login --with-token', () => {
    test('reads the key from standard input, checks it and saves it', async () => {
      const result = await runCli(['auth', 'login', '--with-token', '--base-url', svc.url, '--profile', 'ci'], { env: bare(), stdin: `${svc.adminKey}\n` });
      expect(result.stderr).toContain(`Logged in to ${svc.url} as bootstrap`);
      expect(result.code).toBe(0);
      expect(JSON.parse(readFileSync(path.join(configDir(), 'config.json'), 'utf8'))).toEqual({
        profiles: { ci: { base_url: svc.url, api_key: svc.adminKey } },
        current_profile: 'ci',
      });
    });

    test('refuses an empty standard input, a terminal, and --api-key beside it', async () => {
      const empty = await runCli(['auth', 'login', '--with-token', '--base-url', svc.url], { env: bare(), stdin: '\n' });
      expect([empty.code, empty.stderr.split('\n')[0]]).toEqual([2, 'error: --with-token read no key from standard input']);
      const tty = await runCli(['auth', 'login', '--with-token', '--base-url', svc.url], { env: { ...bare(), NO_COLOR: '1' }, tty: true });
      expect([tty.code, tty.stderr.split('\n')[0]]).toEqual([2, 'error: --with-token reads the key from standard input: pipe it in']);
      const both = await runCli(['auth', 'login', '--with-token', '--api-key', svc.adminKey, '--base-url', svc.url], { env: bare(), stdin: svc.adminKey });
      expect([both.code, both.stderr.split('\n')[0]]).toEqual([2, 'error: Give the key with --with-token (standard input) or --api-key, not both']);
    });

    test('a wrong key from standard input is refused and nothing is saved', async () => {
      const result = await runCli(['auth', 'login', '--with-token', '--base-url', svc.url, '--profile', 'ci'], { env: bare(), stdin: 'agk_wrong\n' });
      expect(result.code).toBe(4);
      expect((await runCli(['config', 'list', '--json'], { env: bare() })).json().profiles).toEqual([]);
    });
  });

  describe('--profile names a profile that exists', () => {
    const twoProfiles = async () => {
      for (const name of ['staging', 'prod']) expect((await runCli(['config', 'set', 'base_url', svc.url, '--profile', name], { env: bare() })).code).toBe(0);
    };

    test('an unknown --profile fails (exit 3) listing the profiles there are', async () => {
      await twoProfiles();
      const result = await runCli(['agents', 'list', '--profile', 'stagign'], { env: bare() });
      expect(result.code).toBe(3);
      expect(result.stderr).toBe(
        'error: No profile named "stagign" (--profile); the profiles are: prod, staging\nhint: Check the spelling, or create it by logging in with it.\ntry:  agentctl auth login --profile stagign\n',
      );
      const json = await runCli(['auth', 'status', '--profile', 'stagign', '--json'], { env: bare() });
      expect(JSON.parse(json.stderr).error).toMatchObject({
        code: 'unknown_profile',
        message: 'No profile named "stagign" (--profile); the profiles are: prod, staging',
      });
    });

    test('so does AGENTCTL_PROFILE; with no config at all it says there are none', async () => {
      await twoProfiles();
      const result = await runCli(['agents', 'list'], { env: { ...bare(), AGENTCTL_PROFILE: 'qa' } });
      expect([result.code, result.stderr.split('\n')[0]]).toEqual([3, 'error: No profile named "qa" (AGENTCTL_PROFILE); the profiles are: prod, staging']);
      const none = await runCli(['agents', 'list', '--profile', 'qa'], { env: { AGENTCTL_CONFIG_DIR: path.join(scratch.dir, 'empty') } });
      expect([none.code, none.stderr.split('\n')[0]]).toEqual([3, 'error: No profile named "qa" (--profile); there are no profiles yet']);
    });

    test('auth login and config set still create a profile by naming it', async () => {
      expect((await runCli(['auth', 'login', '--api-key', svc.adminKey, '--base-url', svc.url, '--profile', 'new'], { env: bare() })).code).toBe(0);
      expect((await runCli(['config', 'set', 'base_url', svc.url, '--profile', 'newer'], { env: bare() })).code).toBe(0);
      expect((await runCli(['agents', 'list', '--profile', 'new'], { env: bare() })).code).toBe(0);
    });
  });

  describe('JSON options take @file and - (standard input)', () => {
    beforeEach(async () => {
      await deployActive(svc, { agent: 'default/bot' });
    });

    test('tasks create --params: inline, @file.json and -', async () => {
      writeFileSync(path.join(scratch.dir, 'params.json'), '{"topic": "from a file"}');
      const fromFile = await runCli(['tasks', 'create', '--agent', 'default/bot', '--params', '@params.json', '--json'], { env, cwd: scratch.dir });
      expect(fromFile.stderr).toBe('');
      expect(fromFile.json().params).toEqual({ topic: 'from a file' });
      const fromStdin = await runCli(['tasks', 'create', '--agent', 'default/bot', '--params', '-', '--json'], { env, stdin: '{"topic": "from stdin"}' });
      expect(fromStdin.json().params).toEqual({ topic: 'from stdin' });
      const inline = await runCli(['tasks', 'create', '--agent', 'default/bot', '--params', '{"topic": "inline"}', '--json'], { env });
      expect(inline.json().params).toEqual({ topic: 'inline' });
    });

    test('tasks send --data: @file.json and -', async () => {
      const task = await createTask();
      writeFileSync(path.join(scratch.dir, 'event.json'), '{"action": "approve"}');
      const fromFile = await runCli(['tasks', 'send', task, '--data', '@event.json', '--json'], { env, cwd: scratch.dir });
      expect(fromFile.json().content).toEqual({ type: 'data', data: { action: 'approve' } });
      const fromStdin = await runCli(['tasks', 'send', task, '--data', '-', '--json'], { env, stdin: '{"action": "reject"}' });
      expect(fromStdin.json().content).toEqual({ type: 'data', data: { action: 'reject' } });
    });

    test('states put --data: @file.json and - (create, then merge)', async () => {
      const task = await createTask();
      writeFileSync(path.join(scratch.dir, 'state.json'), '{"step": 1}');
      const created = await runCli(['states', 'put', '--task', task, '--agent', 'default/bot', '--data', '@state.json', '--json'], { env, cwd: scratch.dir });
      expect(created.json().state).toEqual({ step: 1 });
      const merged = await runCli(['states', 'put', '--task', task, '--agent', 'default/bot', '--merge', '--data', '-', '--json'], {
        env,
        stdin: '{"done": true}',
      });
      expect(merged.json().state).toEqual({ step: 1, done: true });
    });

    test('a missing file, a file that is not an object, and a bare @ are usage errors naming the flag', async () => {
      writeFileSync(path.join(scratch.dir, 'list.json'), '[1, 2]');
      const cases: [string, string][] = [
        ['@missing.json', 'error: Cannot read --params @missing.json: no such file'],
        ['@list.json', 'error: --params @list.json must be a JSON object ({...})'],
        ['@', 'error: --params @ names no file'],
      ];
      for (const [value, message] of cases) {
        const result = await runCli(['tasks', 'create', '--agent', 'default/bot', '--params', value], { env, cwd: scratch.dir });
        expect([value, result.code, result.stderr.split('\n')[0]]).toEqual([value, 2, message]);
      }
      const notJson = await runCli(['tasks', 'create', '--agent', 'default/bot', '--params', '-'], { env, stdin: '{oops' });
      expect(notJson.code).toBe(2);
      expect(notJson.stderr).toMatch(/^error: --params - \(standard input\) is not valid JSON: /);
      expect((await svc.api('GET', '/tasks')).body.total).toBe(0);
    });
  });

  describe('groups add-member and remove-member', () => {
    test('add a key to a group by names, then remove it; the key’s groups follow', async () => {
      const group = (await svc.api('POST', '/groups', { body: { name: 'platform' } })).body;
      const namespaceId = (await svc.api('GET', '/namespaces')).body.namespaces[0].id;
      const key = (
        await svc.api('POST', '/api_keys', { body: { name: 'ci-deploy', scopes: [{ resource_type: 'namespace', resource_id: namespaceId, role: 'admin' }] } })
      ).body;

      const added = await runCli(['groups', 'add-member', 'platform', 'ci-deploy', '--json'], { env });
      expect(added.code).toBe(0);
      expect(added.json()).toMatchObject({ group_id: group.id, member_id: key.api_key.id, name: 'ci-deploy' });
      expect((await svc.api('GET', '/whoami', { key: key.secret })).body.sharing_group_ids).toEqual([group.id]);
      // Adding again is not an error (PUT).
      const again = await runCli(['groups', 'add-member', group.id, key.api_key.id], { env });
      expect([again.code, again.stdout.split('\n')[0]]).toEqual([0, `Group\t${group.id}`]);

      const refused = await runCli(['groups', 'remove-member', 'platform', 'ci-deploy'], { env });
      expect([refused.code, refused.stderr.split('\n')[0]]).toEqual([
        2,
        'error: This needs confirmation: pass --yes (no prompt without a terminal, or under CI, --non-interactive or --json)',
      ]);
      const removed = await runCli(['groups', 'remove-member', 'platform', 'ci-deploy', '--yes'], { env });
      expect(removed.code).toBe(0);
      expect(removed.stderr).toBe(`✓ ci-deploy (${key.api_key.id}) is no longer a member of platform\n`);
      expect((await svc.api('GET', '/whoami', { key: key.secret })).body.sharing_group_ids).toEqual([]);

      const notMember = await runCli(['groups', 'remove-member', 'platform', 'ci-deploy', '--yes'], { env });
      expect([notMember.code, notMember.stderr.split('\n')[0]]).toEqual([
        3,
        `error: API key ${key.api_key.id} is not a member of sharing group platform (404 not_found)`,
      ]);
    });

    test('an unknown group or key name is exit 3 pointing at the list', async () => {
      const group = await runCli(['groups', 'add-member', 'nobody', 'bootstrap'], { env });
      expect([group.code, group.stderr.split('\n')[0]]).toEqual([3, 'error: group nobody: no sharing group of that name']);
      expect(group.stderr).toContain('try:  agentctl groups list');
      await svc.api('POST', '/groups', { body: { name: 'platform' } });
      const key = await runCli(['groups', 'add-member', 'platform', 'ghost'], { env });
      expect([key.code, key.stderr.split('\n')[0]]).toEqual([3, 'error: key ghost: no API key of that name']);
    });
  });

  describe('tasks migrate --dry-run says it is a plan', () => {
    const sticky = async () => {
      const v1 = await deployActive(svc, { agent: 'default/bot' });
      const task = await createTask();
      const v2 = await deployActive(svc, { agent: 'default/bot', are_tasks_sticky: true });
      return { v1, v2, task };
    };

    test('--json: the server’s plan with dry_run: true; nothing moves', async () => {
      const { v1, v2, task } = await sticky();
      const result = await runCli(['tasks', 'migrate', '--from', 'v1', '--to-latest', '--agent', 'default/bot', '--dry-run', '--json'], { env });
      expect(result.code).toBe(0);
      expect(result.json()).toMatchObject({
        dry_run: true,
        branch_id: v1.branch_id,
        to_version: { id: v2.version_id },
        tasks: [{ id: task, current_version_id: v2.version_id }],
      });
      expect((await svc.api('GET', `/tasks/${task}`)).body.current_version_id).toBe(v1.version_id);
      const applied = await runCli(['tasks', 'migrate', '--from', 'v1', '--to-latest', '--agent', 'default/bot', '--json', '--yes'], { env });
      expect(applied.json().dry_run).toBe(false);
    });

    test('on a terminal the table has a heading; piped, only the rows', async () => {
      const { task } = await sticky();
      const tty = await runCli(['tasks', 'migrate', '--from', 'v1', '--to-latest', '--agent', 'default/bot', '--dry-run'], {
        env: { ...env, NO_COLOR: '1' },
        tty: true,
      });
      expect(tty.code).toBe(0);
      expect(tty.stdout.split('\n')[0]).toBe('Dry run: the plan (nothing has moved)');
      expect(tty.stdout).toContain(task);
      const piped = await runCli(['tasks', 'migrate', '--from', 'v1', '--to-latest', '--agent', 'default/bot', '--dry-run'], { env });
      expect(piped.stdout.split('\t')[0]).toBe(task);
    });
  });

  describe('keys create: one default expiry, said when the key is made', () => {
    test('without --expires a key lives 90 days, as the wizard’s default, and the CLI says until when', async () => {
      const result = await runCli(['keys', 'create', '--name', 'ci', '--scope', 'namespace:default:admin'], { env });
      expect(result.code).toBe(0);
      const whoami = (await svc.api('GET', '/whoami', { key: result.stdout.trim() })).body;
      expect(Math.round((Date.parse(whoami.expires_at) - Date.now()) / 86_400_000)).toBe(90);
      const when = `${whoami.expires_at.slice(0, 16).replace('T', ' ')} UTC`;
      expect(result.stderr).toContain(`✓ Created key ci (${whoami.id}); it expires ${when} (in 90 days)\n`);
      const never = await runCli(['keys', 'create', '--name', 'forever', '--scope', 'namespace:default:admin', '--expires', 'never'], { env });
      expect(never.stderr).toMatch(/✓ Created key forever \(key_\w+\); it never expires\n/);
    });
  });

  describe('aliases and enum flags', () => {
    test('ls and rm are list and delete of every noun that has them', async () => {
      const nouns = [...new Set(registry.filter((s) => s.path.length === 2 && ['list', 'delete'].includes(s.path[1])).map((s) => s.path.join(' ')))];
      expect(nouns.length).toBeGreaterThan(10);
      for (const command of nouns) {
        const [noun, verb] = command.split(' ');
        const alias = verb === 'list' ? 'ls' : 'rm';
        const help = await runCli([noun, alias, '--help'], { env });
        expect([command, help.code, help.stdout.split(' [options]')[0]]).toEqual([command, 0, `Usage: agentctl ${noun} ${verb}|${alias}`]);
      }
    });

    test('status flags take any case and offer the contract’s statuses', async () => {
      await deployActive(svc, { agent: 'default/bot' });
      const listed = await runCli(['versions', 'list', '--agent', 'default/bot', '--status', 'active', '--json'], { env });
      expect(listed.json().versions.map((v: { status: string }) => v.status)).toEqual(['ACTIVE']);
      const tasks = await runCli(['tasks', 'list', '--status', 'sleeping'], { env });
      expect(tasks.stderr).toContain(`Allowed choices are ${TaskStatus.options.join(', ')}.`);
      const versions = await runCli(['versions', 'list', '--agent', 'default/bot', '--status', 'gone'], { env });
      expect(versions.stderr).toContain(`Allowed choices are ${VersionStatus.options.join(', ')}.`);
    });
  });
});
