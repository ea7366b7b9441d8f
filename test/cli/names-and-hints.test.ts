import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { sql } from 'kysely';
import { describe, expect, test } from 'vitest';
import { engines } from '../support/service.js';
import { createTask, deploy, deployActive } from '../support/fixtures.js';
import { gitRepo, runCli, useCliService } from './support.js';

// Issue 13, defects 4-7: every paged list says when it is cut and pages with --all, names where
// there are names, pasteable hints, errors in the user's terms.
describe.each(engines)('agentctl names, paging and hints (%s)', (engine) => {
  const { svc, scratch, env } = useCliService(engine, (dir) => path.join(dir, 'config'));

  describe('every paged list says when it is cut and pages through with --all', () => {
    test('namespaces list', async () => {
      for (const slug of ['alpha', 'beta', 'gamma']) await svc.client().createNamespace({ body: { slug, name: slug } });
      const cut = await runCli(['namespaces', 'list', '--limit', '2'], { env, tty: true });
      expect(cut.code).toBe(0);
      expect(cut.stderr).toBe('showing 2 of 4; --page 2 or --all\n');
      const all = await runCli(['namespaces', 'list', '--limit', '2', '--all', '--json'], { env });
      expect(all.json().total).toBe(4);
      expect(
        all
          .json()
          .namespaces.map((n: { slug: string }) => n.slug)
          .sort(),
      ).toEqual(['alpha', 'beta', 'default', 'gamma']);
    });

    test('projects list', async () => {
      for (const name of ['one', 'two', 'three']) await svc.client().createProject({ body: { name } });
      const cut = await runCli(['projects', 'list', '--limit', '1', '--page', '2'], { env, tty: true });
      expect(cut.stderr).toBe('showing 2-2 of 3; --page 3 or --all\n');
      const all = await runCli(['projects', 'list', '--limit', '1', '--all', '--json'], { env });
      expect(all.json().total).toBe(3);
      expect(
        all
          .json()
          .projects.map((p: { name: string }) => p.name)
          .sort(),
      ).toEqual(['one', 'three', 'two']);
    });

    test('groups list (GET /groups pages since the upstream API’s paging)', async () => {
      for (const name of ['red', 'green', 'blue']) await svc.client().createGroup({ body: { name } });
      const cut = await runCli(['groups', 'list', '--limit', '2'], { env, tty: true });
      expect(cut.code).toBe(0);
      expect(cut.stderr).toBe('showing 2 of 3; --page 2 or --all\n');
      const all = await runCli(['groups', 'list', '--limit', '2', '--all', '--json'], { env });
      expect(all.json().total).toBe(3);
      expect(all.json().groups.map((g: { name: string }) => g.name)).toEqual(['blue', 'green', 'red']);
    });

    test('fs list', async () => {
      const ids: string[] = [];
      for (let i = 0; i < 3; i++) ids.push((await svc.client().createFilesystem({ body: { namespace: 'default' } })).id);
      const cut = await runCli(['fs', 'list', '--limit', '2'], { env, tty: true });
      expect(cut.stderr).toBe('showing 2 of 3; --page 2 or --all\n');
      const all = await runCli(['fs', 'list', '--limit', '2', '--all', '--json'], { env });
      expect(all.json().total).toBe(3);
      expect(
        all
          .json()
          .filesystems.map((f: { id: string }) => f.id)
          .sort(),
      ).toEqual(ids.sort());
    });

    test('versions list (the newest only: it says how far --limit goes)', async () => {
      for (let i = 0; i < 3; i++) await deployActive(svc, { agent: 'default/bot' });
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
      await deployActive(svc, { agent: 'default/bot' });
      const result = await runCli(['envs', 'create', 'staging', '--agent', 'default/bot', '--rule', 'staging', '--rule', ''], { env });
      expect(result.code).toBe(2);
      expect(result.stderr).toContain('error: Invalid request: --rule #2: ');
      expect(result.stderr).not.toContain('branch_rules');
    });

    test('a query field of another name (--after is after_sequence_id)', async () => {
      await deployActive(svc, { agent: 'default/bot' });
      const task = (await createTask(svc, { agent_name: 'default/bot' })).id;
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

  describe('conflicts: the resource by name, and a hint for the code', () => {
    test('branch_has_tasks names the branch and says to migrate or --force', async () => {
      const v1 = await deployActive(svc, { agent: 'default/bot' });
      await createTask(svc, { agent_name: 'default/bot' });
      const result = await runCli(['branches', 'retire', 'main', '--agent', 'default/bot', '--reason', 'merged', '--yes'], { env });
      expect(result.code).toBe(5);
      expect(result.stderr).toBe(
        `error: Branch main (${v1.branch_id}) still has 1 running or idle task; pass force: true to terminate them (409 branch_has_tasks)\n` +
          'hint: Move its tasks first (agentctl tasks migrate), or pass --force to terminate them.\n' +
          `trace: ${traceIdOf(result.stderr)}\n`,
      );
    });

    test('image_expired names the version by number', async () => {
      const v1 = await deployActive(svc, { agent: 'default/bot' });
      await deployActive(svc, { agent: 'default/bot' });
      await sql`UPDATE versions SET image_expires_at = '2020-01-01T00:00:00Z' WHERE id = ${v1.version_id}`.execute(svc.store.db);
      const result = await runCli(['rollback', '--agent', 'default/bot', '--branch', 'main', '--to', 'v1', '--yes'], { env });
      expect(result.code).toBe(5);
      expect(result.stderr).toBe(
        `error: The image of version v1 (${v1.version_id}) expired at 2020-01-01T00:00:00.000Z; deploy it again instead (409 image_expired)\n` +
          'hint: That version’s image is past its retention; pick a newer version.\n' +
          `trace: ${traceIdOf(result.stderr)}\n`,
      );
    });

    test('no_routable_version says to deploy first', async () => {
      await deployActive(svc, { agent: 'default/bot' });
      const feature = await deploy(svc, { agent: 'default/bot', branch: 'feature/x' });
      await svc.client().registerVersion({ body: { version_id: feature.version_id, status: 'FAILED', failure_reason: 'crash_loop' } });
      const result = await runCli(['tasks', 'create', '--agent', 'default/bot', '--branch', 'feature/x'], { env });
      expect(result.code).toBe(5);
      expect(result.stderr).toContain('(409 no_routable_version)\nhint: The branch has no ACTIVE or DEPLOYING version: deploy one first.\n');
    });

    test('task_terminal names the task', async () => {
      await deployActive(svc, { agent: 'default/bot' });
      const task = (await createTask(svc, { agent_name: 'default/bot', name: 'nightly' })).id;
      await svc.client().cancelTask({ params: { task_id: task } });
      const result = await runCli(['tasks', 'send', 'nightly', 'late'], { env });
      expect(result.code).toBe(5);
      expect(result.stderr).toContain(`error: Task nightly (${task}) is CANCELED; a finished task takes no new events or messages (409 task_terminal)\n`);
    });
  });

  describe('printed commands paste into a shell as they are', () => {
    test('branches retire without --yes: the reason is single-quoted ($ and quotes survive)', async () => {
      const v1 = await deployActive(svc, { agent: 'default/bot', branch: 'feature/x' });
      const result = await runCli(['branches', 'retire', 'feature/x', '--agent', 'default/bot', '--reason', "it's $done"], { env });
      expect(result.code).toBe(2);
      expect(result.stderr).toContain(`try:  agentctl branches retire ${v1.branch_id} --reason 'it'\\''s $done' --yes\n`);
    });

    test('rollback without --yes: a branch name with shell characters is quoted', async () => {
      await deployActive(svc, { agent: 'default/bot', branch: 'fix(ui)' });
      await deployActive(svc, { agent: 'default/bot', branch: 'fix(ui)' });
      const result = await runCli(['rollback', '--agent', 'default/bot', '--branch', 'fix(ui)', '--to', 'v1'], { env });
      expect(result.code).toBe(2);
      expect(result.stderr).toContain("try:  agentctl rollback --agent default/bot --branch 'fix(ui)' --to v1 --yes\n");
    });

    test('fs pull without --fs: a directory with a space is quoted, the placeholder is not', async () => {
      const result = await runCli(['fs', 'pull', 'my dir'], { env, cwd: scratch.dir });
      expect(result.code).toBe(2);
      expect(result.stderr).toContain("try:  agentctl fs pull 'my dir' --fs <fs_id>\n");
    });

    test('init: the next step cds into a directory with a space', async () => {
      const result = await runCli(['init', 'my bot', '--no-git'], { env, cwd: scratch.dir });
      expect(result.code).toBe(0);
      expect(result.stderr).toContain("Next: cd 'my bot' && agentctl deploy\n");
    });

    test('deploy of a dirty tree: the --allow-dirty retry keeps the flags given', async () => {
      await gitRepo(scratch.dir);
      writeFileSync(path.join(scratch.dir, 'notes.txt'), 'uncommitted');
      const result = await runCli(['deploy', '--agent', 'default/bot', '--image', 'registry.local/bot:1', '--branch', 'fix(ui)'], { env, cwd: scratch.dir });
      expect(result.code).toBe(2);
      expect(result.stderr).toContain("try:  agentctl deploy --agent default/bot --image registry.local/bot:1 --branch 'fix(ui)' --allow-dirty\n");
    });
  });

  describe('names where there are names; ids under --json and --wide', () => {
    test('agents list: the namespace by slug, its id with --wide', async () => {
      const namespace = await svc.client().createNamespace({ body: { slug: 'research', name: 'Research' } });
      const { agent_id: agentId } = await deployActive(svc, { agent: 'research/bot' });
      const rows = (result: { stdout: string }) =>
        result.stdout
          .trim()
          .split('\n')
          .map((line) => line.split('\t'));
      const plain = await runCli(['agents', 'list'], { env });
      expect(rows(plain).map((row) => row.slice(0, 4))).toEqual([[agentId, 'bot', 'research', 'ACTIVE']]);
      const wide = await runCli(['agents', 'list', '--wide'], { env });
      expect(rows(wide).map((row) => row.slice(0, 5))).toEqual([[agentId, 'bot', 'research', namespace.id, 'ACTIVE']]);
      const json = await runCli(['agents', 'list', '--json'], { env });
      expect(json.json().agents[0].namespace_id).toBe(namespace.id);
    });

    test('keys list: scopes as --scope takes them, ids with --wide', async () => {
      const { agent_id: agentId } = await deployActive(svc, { agent: 'default/bot' });
      const namespaceId = (await svc.client().listNamespaces()).namespaces[0].id;
      const scopes = [
        { resource_type: 'namespace' as const, resource_id: namespaceId, role: 'admin' as const },
        { resource_type: 'agent' as const, resource_id: agentId, role: 'viewer' as const },
      ];
      const key = (await svc.client().createKey({ body: { name: 'ci', scopes } })).api_key;
      const scopesOf = (result: { stdout: string }, column: number) =>
        result.stdout
          .trim()
          .split('\n')
          .map((line) => line.split('\t'))
          .find((row) => row[0] === key.id)![column];
      expect(scopesOf(await runCli(['keys', 'list'], { env }), 3)).toBe('namespace:default:admin, agent:default/bot:viewer');
      expect(scopesOf(await runCli(['keys', 'list', '--wide'], { env }), 4)).toBe(`namespace:${namespaceId}:admin, agent:${agentId}:viewer`);
    });

    test('keys get, revoke and rotate take a key name; a name two keys share is refused naming both', async () => {
      const client = svc.client();
      const scopes = [{ resource_type: 'org' as const, resource_id: (await client.whoami()).org_id, role: 'member' as const }];
      const ci = (await client.createKey({ body: { name: 'ci', scopes } })).api_key;
      const got = await runCli(['keys', 'get', 'ci', '--json'], { env });
      expect(got.json().id).toBe(ci.id);
      const revoked = await runCli(['keys', 'revoke', 'ci', '--yes', '--json'], { env });
      expect(revoked.code).toBe(0);
      expect(revoked.json()).toMatchObject({ id: ci.id, revoked_at: expect.any(String) });
      const gone = await runCli(['keys', 'rotate', 'ci', '--yes'], { env });
      expect(gone.code).toBe(3);
      expect(gone.stderr).toContain('error: No API key is named "ci" (revoked keys left out)\n');
      const a = (await client.createKey({ body: { name: 'bot', scopes } })).api_key;
      const b = (await client.createKey({ body: { name: 'bot', scopes } })).api_key;
      const twice = await runCli(['keys', 'get', 'bot'], { env });
      expect(twice.code).toBe(2);
      expect(twice.stderr).toContain(`error: 2 API keys are named "bot": `);
      expect(twice.stderr).toContain(a.id);
      expect(twice.stderr).toContain(b.id);
    });

    test('tasks cancel, delete, migrate --task and states --task take a task name', async () => {
      await deployActive(svc, { agent: 'default/bot' });
      const v2 = await deployActive(svc, { agent: 'default/bot', are_tasks_sticky: true });
      const create = async (name: string) => (await createTask(svc, { agent_name: 'default/bot', name })).id;
      const [report, digest, old] = [await create('report'), await create('digest'), await create('old')];
      const moved = await runCli(['tasks', 'migrate', '--task', 'report', '--task', digest, '--to', v2.version_id, '--yes', '--json'], { env });
      expect(moved.code).toBe(0);
      expect(
        moved
          .json()
          .tasks.map((t: { id: string }) => t.id)
          .sort(),
      ).toEqual([report, digest].sort());
      expect(moved.json().to_version.id).toBe(v2.version_id);
      const put = await runCli(['states', 'put', '--task', 'report', '--agent', 'default/bot', '--data', '{"step": 1}', '--json'], { env });
      expect(put.code).toBe(0);
      expect(put.json()).toMatchObject({ task_id: report, state: { step: 1 } });
      const got = await runCli(['states', 'get', '--task', 'report', '--agent', 'default/bot', '--json'], { env });
      expect(got.json()).toMatchObject({ task_id: report, state: { step: 1 } });
      const canceled = await runCli(['tasks', 'cancel', 'digest', '--json'], { env });
      expect(canceled.json()).toMatchObject({ id: digest, status: 'CANCELED' });
      const deleted = await runCli(['tasks', 'delete', 'old', '--yes', '--json'], { env });
      expect(deleted.json()).toMatchObject({ id: old, status: 'DELETED' });
    });
  });
});

/** The trace id an error names on its last line (README "Traces"): a user pastes it into agentctl trace. */
function traceIdOf(stderr: string): string {
  const id = /^trace: ([0-9a-f]{32})$/m.exec(stderr)?.[1];
  expect(id, 'the error names its trace').toBeDefined();
  return id!;
}
