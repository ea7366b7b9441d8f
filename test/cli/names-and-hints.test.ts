import path from 'node:path';
import { beforeEach, describe, expect, test } from 'vitest';
import { engines, type TestService } from '../support/service.js';
import { deployActive, gitRepo, runCli, useCliService, type CliService } from './support.js';

// Issue 13, defects 4-7: every paged list says when it is cut and pages with --all, names where
// there are names, pasteable hints, errors in the user's terms.
describe.each(engines)('agentctl names, paging and hints (%s)', (engine) => {
  const cli = useCliService(engine, (dir) => path.join(dir, 'config'));
  let svc: TestService;
  let scratch: CliService['scratch'];
  let env: Record<string, string>;
  beforeEach(() => {
    ({ svc, scratch, env } = cli);
  });

  describe('every paged list says when it is cut and pages through with --all', () => {
    test('namespaces list', async () => {
      for (const slug of ['alpha', 'beta', 'gamma']) expect((await svc.api('POST', '/namespaces', { body: { slug, name: slug } })).status).toBe(201);
      const cut = await runCli(['namespaces', 'list', '--limit', '2'], { env, tty: true });
      expect(cut.code).toBe(0);
      expect(cut.stderr).toBe('showing 2 of 4; --page 2 or --all\n');
      const all = await runCli(['namespaces', 'list', '--limit', '2', '--all', '--json'], { env });
      expect(all.json().total).toBe(4);
      expect(all.json().namespaces.map((n: { slug: string }) => n.slug).sort()).toEqual(['alpha', 'beta', 'default', 'gamma']);
    });

    test('projects list', async () => {
      for (const name of ['one', 'two', 'three']) expect((await svc.api('POST', '/projects', { body: { name } })).status).toBe(201);
      const cut = await runCli(['projects', 'list', '--limit', '1', '--page', '2'], { env, tty: true });
      expect(cut.stderr).toBe('showing 2-2 of 3; --page 3 or --all\n');
      const all = await runCli(['projects', 'list', '--limit', '1', '--all', '--json'], { env });
      expect(all.json().total).toBe(3);
      expect(all.json().projects.map((p: { name: string }) => p.name).sort()).toEqual(['one', 'three', 'two']);
    });

    test('fs list', async () => {
      const ids: string[] = [];
      for (let i = 0; i < 3; i++) ids.push((await svc.api('POST', '/filesystems', { body: { namespace: 'default' } })).body.id);
      const cut = await runCli(['fs', 'list', '--limit', '2'], { env, tty: true });
      expect(cut.stderr).toBe('showing 2 of 3; --page 2 or --all\n');
      const all = await runCli(['fs', 'list', '--limit', '2', '--all', '--json'], { env });
      expect(all.json().total).toBe(3);
      expect(all.json().filesystems.map((f: { id: string }) => f.id).sort()).toEqual(ids.sort());
    });

    test('versions list (the newest only: it says how far --limit goes)', async () => {
      for (let i = 0; i < 3; i++) await deployActive(svc, 'default/bot');
      const cut = await runCli(['versions', 'list', '--agent', 'default/bot', '--limit', '2'], { env, tty: true });
      expect(cut.stderr).toBe('showing 2 of 3; --limit 3\n');
      const piped = await runCli(['versions', 'list', '--agent', 'default/bot', '--limit', '2'], { env });
      expect(piped.stderr).toBe('');
    });
  });

  describe('validation errors name the flag the user typed', () => {
    test('a body field filled by a flag of another name (--image is image_url)', async () => {
      await gitRepo(scratch.dir);
      const result = await runCli(['deploy', '--agent', 'default/bot', '--image', '', '--detach'], { env, cwd: scratch.dir });
      expect(result.code).toBe(2);
      expect(result.stderr).toContain('error: Invalid request: --image: ');
      expect(result.stderr).not.toContain('image_url');
    });

    test('an item of a repeated flag is counted from 1 (--rule #2)', async () => {
      await deployActive(svc, 'default/bot');
      const result = await runCli(['envs', 'create', 'staging', '--agent', 'default/bot', '--rule', 'staging', '--rule', ''], { env });
      expect(result.code).toBe(2);
      expect(result.stderr).toContain('error: Invalid request: --rule #2: ');
      expect(result.stderr).not.toContain('branch_rules');
    });

    test('a query field of another name (--after is after_sequence_id)', async () => {
      await deployActive(svc, 'default/bot');
      const task = (await svc.api('POST', '/tasks', { body: { agent_name: 'default/bot' } })).body.id;
      const result = await runCli(['tasks', 'events', task, '--after', '-1'], { env });
      expect(result.code).toBe(2);
      expect(result.stderr).toContain('error: Invalid request: --after: ');
    });

    test('an argument is named as the command help names it (SLUG, not body.slug)', async () => {
      const result = await runCli(['namespaces', 'create', 'Not A Slug'], { env });
      expect(result.code).toBe(2);
      expect(result.stderr).toContain('error: Invalid request: SLUG: ');
    });
  });
});
