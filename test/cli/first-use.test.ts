// What a new user tripped over (issue 18, items 9-17), each through the built CLI (bin/agentctl.js)
// against a real service.
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { execa } from 'execa';
import { describe, expect, test } from 'vitest';
import { deployActive } from '../support/fixtures.js';
import { engines } from '../support/service.js';
import { gitRepo, useCliService } from './support.js';

const BIN = path.resolve('bin/agentctl.js');
/** An address where nothing listens. */
const NOWHERE = 'http://127.0.0.1:9';

describe.each(engines)('a new user’s first hour (%s)', (engine) => {
  const { svc, scratch, env } = useCliService(engine, (dir) => path.join(dir, 'config'));
  const agentctl = (args: string[], options: { cwd?: string; env?: Record<string, string> } = {}) =>
    execa(process.execPath, [BIN, ...args], {
      env: { PATH: process.env.PATH!, HOME: scratch.dir, ...env, ...options.env },
      extendEnv: false,
      cwd: options.cwd ?? scratch.dir,
      reject: false,
      stdin: 'ignore',
      stripFinalNewline: false,
    });

  test('keys rm revokes a key, as rm removes with every noun', async () => {
    const created = await svc.client().createKey({ body: { name: 'old-ci', scopes: [{ resource_type: 'namespace', resource_id: 'default', role: 'admin' }] } });
    const removed = await agentctl(['keys', 'rm', 'old-ci', '--yes']);
    expect(removed.exitCode, removed.stderr).toBe(0);
    expect(removed.stderr).toContain(`✓ Revoked key old-ci (${created.api_key.key_prefix}…)`);
    expect((await svc.api('GET', '/whoami', { key: created.secret })).status).toBe(401);
  });

  test('keys create --json: the record is api_key, the one-time secret is secret', async () => {
    const result = await agentctl(['keys', 'create', '--name', 'reader', '--scope', 'namespace:default:admin', '--json']);
    expect(result.exitCode, result.stderr).toBe(0);
    const created = JSON.parse(result.stdout);
    expect(Object.keys(created).sort()).toEqual(['api_key', 'secret']);
    expect(created.api_key.key_prefix).toBe(created.secret.slice(0, 12));
    expect((await svc.api('GET', '/whoami', { key: created.secret })).body.name).toBe('reader');
  });

  describe('deploy', () => {
    test('with no server answering, it fails before saying Deploying', async () => {
      await gitRepo(scratch.dir);
      const result = await agentctl(['deploy', '--agent', 'default/bot', '--image', 'img:1'], { env: { AGENTCTL_BASE_URL: NOWHERE } });
      expect(result.exitCode).toBe(6);
      expect(result.stderr).not.toContain('Deploying');
      expect(result.stderr).toContain(`error: Cannot reach the agentctl service at ${NOWHERE}`);
    });

    test('with a key the server refuses, it fails before saying Deploying', async () => {
      await gitRepo(scratch.dir);
      const result = await agentctl(['deploy', '--agent', 'default/bot', '--image', 'img:1'], { env: { AGENTCTL_API_KEY: 'agk_not_a_key' } });
      expect(result.exitCode).toBe(4);
      expect(result.stderr).not.toContain('Deploying');
    });

    test('the same commit again is refused, naming the live version; --force deploys it', async () => {
      const repo = await gitRepo(scratch.dir, 'Add the search tool');
      const hash = (await repo.head()).slice(0, 7);
      const first = await agentctl(['deploy', '--agent', 'default/bot', '--image', 'img:1', '--detach']);
      expect(first.exitCode, first.stderr).toBe(0);
      const again = await agentctl(['deploy', '--agent', 'default/bot', '--image', 'img:1', '--detach']);
      expect(again.exitCode).toBe(5);
      expect(again.stderr).toBe(
        `error: v1 of default/bot on main already runs ${hash} "Add the search tool" (DEPLOYING): deploying it again would make an identical v2\n` +
          'hint: Commit a change first, or pass --force to deploy the same commit again (a fresh start of it).\n' +
          'try:  agentctl deploy --agent default/bot --image img:1 --force\n',
      );
      const forced = await agentctl(['deploy', '--agent', 'default/bot', '--image', 'img:1', '--detach', '--force', '--json', 'version_number']);
      expect(forced.exitCode, forced.stderr).toBe(0);
      expect(JSON.parse(forced.stdout)).toEqual({ version_number: 2 });
    });

    test('a new commit, or another image of the same commit, deploys without --force', async () => {
      const repo = await gitRepo(scratch.dir);
      expect((await agentctl(['deploy', '--agent', 'default/bot', '--image', 'img:1', '--detach'])).exitCode).toBe(0);
      expect((await agentctl(['deploy', '--agent', 'default/bot', '--image', 'img:2', '--detach'])).exitCode).toBe(0);
      await repo.commit('second');
      expect((await agentctl(['deploy', '--agent', 'default/bot', '--image', 'img:2', '--detach'])).exitCode).toBe(0);
    });
  });

  describe('init', () => {
    test('with no server answering, the next step starts one first', async () => {
      const result = await agentctl(['init', 'bot', '--no-git'], { env: { AGENTCTL_BASE_URL: NOWHERE } });
      expect(result.exitCode, result.stderr).toBe(0);
      expect(result.stderr).toContain(
        `Next: no agentctl service answers at ${NOWHERE}; start one, then deploy: agentctl server start --detach && cd bot && agentctl deploy\n`,
      );
    });

    test('with the server up, the next step is deploy', async () => {
      const result = await agentctl(['init', 'bot', '--no-git']);
      expect(result.exitCode, result.stderr).toBe(0);
      expect(result.stderr).toContain('Next: cd bot && agentctl deploy\n');
    });
  });

  describe('the no-group warning', () => {
    test('is not given to a Read-Only key, which creates nothing to share', async () => {
      await deployActive(svc, { agent: 'default/bot' });
      const result = await agentctl(['keys', 'create', '--preset', 'read-only', '--scope', 'agent:default/bot', '--name', 'dashboard']);
      expect(result.exitCode, result.stderr).toBe(0);
      expect(result.stderr).not.toContain('No sharing group chosen');
    });

    test('is given to a namespace admin key, which creates agents and projects', async () => {
      const result = await agentctl(['keys', 'create', '--scope', 'namespace:default:admin', '--name', 'deployer']);
      expect(result.exitCode, result.stderr).toBe(0);
      expect(result.stderr).toContain('warning: No sharing group chosen: only this key (and org admins) will reach the agents and projects it creates.\n');
    });
  });

  describe('usage', () => {
    test('a verb given without its noun points at the command that has it', async () => {
      const result = await agentctl(['retire']);
      expect(result.exitCode).toBe(2);
      expect(result.stderr).toBe(
        "error: 'retire' is not an agentctl command; did you mean agentctl branches retire?\nRun 'agentctl --help' for the commands.\n",
      );
    });

    test('a missing argument shows the usage line and where the help is', async () => {
      const result = await agentctl(['tasks', 'get']);
      expect(result.exitCode).toBe(2);
      expect(result.stderr).toBe(
        "error: missing required argument 'task'\nusage: agentctl tasks get [options] <task>\nRun 'agentctl tasks get --help' for its flags and examples.\n",
      );
    });

    test('--help lists commands and flags, not commander’s help command', async () => {
      const top = await agentctl(['--help']);
      const noun = await agentctl(['keys', '--help']);
      expect(top.stdout).toContain('  keys ');
      expect(top.stdout).not.toContain('help [command]');
      expect(noun.stdout).toContain('revoke|rm <key>');
      expect(noun.stdout).not.toContain('help [command]');
    });
  });

  describe('field selection, jq and completion', () => {
    const twoVersions = async () => {
      await deployActive(svc, { agent: 'default/bot', image_url: 'img:1' });
      await deployActive(svc, { agent: 'default/bot', image_url: 'img:2' });
    };

    test('--json FIELDS prints those fields of each record of a list', async () => {
      await twoVersions();
      const result = await agentctl(['versions', 'list', '--agent', 'default/bot', '--json', 'number,image_url']);
      expect(result.exitCode, result.stderr).toBe(0);
      expect(JSON.parse(result.stdout)).toEqual([
        { number: 2, image_url: 'img:2' },
        { number: 1, image_url: 'img:1' },
      ]);
    });

    test('--json FIELD after the arguments picks from one record; before a missing argument it stays bare --json', async () => {
      await twoVersions();
      const picked = await agentctl(['versions', 'get', 'v1', '--agent', 'default/bot', '--json', 'status']);
      expect(JSON.parse(picked.stdout)).toEqual({ status: 'RETIRED' });
      const whole = await agentctl(['versions', 'get', '--agent', 'default/bot', '--json', 'v1']);
      expect(JSON.parse(whole.stdout)).toMatchObject({ number: 1, image_url: 'img:1' });
    });

    test('an unknown field exits 2 naming the fields there are, and still prints the whole answer', async () => {
      await twoVersions();
      const result = await agentctl(['versions', 'get', 'v2', '--agent', 'default/bot', '--json', 'numbr']);
      expect(result.exitCode).toBe(2);
      expect(JSON.parse(result.stdout)).toMatchObject({ number: 2 });
      const error = JSON.parse(result.stderr).error;
      expect(error).toMatchObject({ code: 'unknown_field', message: 'Unknown JSON field: numbr' });
      expect(error.hint).toMatch(/^Available fields: .*\bnumber\b/);
    });

    test('--jq filters the answer through jq, strings raw', async () => {
      await twoVersions();
      const result = await agentctl(['versions', 'list', '--agent', 'default/bot', '--jq', '.versions[] | "v\\(.number) \\(.image_url)"']);
      expect(result.exitCode, result.stderr).toBe(0);
      expect(result.stdout).toBe('v2 img:2\nv1 img:1\n');
      const broken = await agentctl(['versions', 'list', '--agent', 'default/bot', '--jq', '.versions[']);
      expect(broken.exitCode).toBe(2);
      expect(JSON.parse(broken.stderr).error.code).toBe('jq_error');
    });

    test('completion offers version references, branches and tasks of the agent in agentctl.json', async () => {
      await twoVersions();
      const task = await svc.client().createTask({ body: { agent_name: 'default/bot', name: 'nightly-report' } });
      writeFileSync(path.join(scratch.dir, 'agentctl.json'), JSON.stringify({ agent: 'default/bot' }));
      const complete = async (kind: string) => (await agentctl(['__complete', kind])).stdout;
      expect(await complete('versions')).toBe('v2\nv1\n');
      expect(await complete('branches')).toBe('main\n');
      expect(await complete('tasks')).toBe(`nightly-report\n${task.id}\n`);
      const script = readFileSync('completions/agentctl.bash', 'utf8');
      expect(script).toContain('--to) COMPREPLY=($(compgen -W "$(_agentctl_dynamic versions)" -- "$cur")); return ;;');
      expect(script).toContain(`'keys rm') verb=revoke ;;`);
    });
  });
});

describe('the changelog', () => {
  test('CHANGELOG.md keeps a changelog with an Unreleased section', () => {
    expect(existsSync('CHANGELOG.md')).toBe(true);
    const text = readFileSync('CHANGELOG.md', 'utf8');
    expect(text).toMatch(/^# Changelog\n/);
    expect(text).toContain('[Keep a Changelog](https://keepachangelog.com/en/1.1.0/)');
    expect(text).toMatch(/\n## \[Unreleased\]\n\n### Added\n/);
  });
});
