import { describe, expect, test } from 'vitest';
import { sql } from 'kysely';
import { engines, useService } from '../support/service.js';
import { createTask, createTasks, deploy, deployActive, nextHash, register } from '../support/fixtures.js';
import { expectError, expectInvalid } from '../support/bad-input.js';
import { DEFAULT_ACP_TYPE, DEFAULT_SDK_TYPE } from '../../src/contract/enums.js';

describe.each(engines)('version lifecycle: deploy, register, rollback, retire (%s)', (engine) => {
  const svc = useService(engine);

  const version = (id: string) => svc.client().getVersion({ params: { version_id: id } });
  const task = (id: string) => svc.client().getTask({ params: { task_id: id } });
  const branch = (id: string) => svc.client().getBranch({ params: { branch_id: id } });
  const branchEvents = async (branchId: string) => (await svc.client().listBranchEvents({ params: { branch_id: branchId } })).events;
  const eventTypes = async (branchId: string) => (await branchEvents(branchId)).map((e) => e.type);

  describe('deploy', () => {
    test('the first deploy creates the agent, its branch and a DEPLOYING version', async () => {
      const res = await svc.api('POST', '/agents/deploy', {
        body: {
          agent_name: 'support-bot',
          branch: 'Feature/Login_Page',
          git_hash: 'abc1234',
          author_name: 'Ada',
          author_email: 'ada@example.com',
          image_url: 'img:1',
          sdk_type: 'alpha_agent_sdk',
          acp_type: 'sync',
        },
      });
      expect(res.status).toBe(201);
      expect(res.body).toMatchObject({ version_status: 'DEPLOYING', tasks_migrated: 0 });
      expect(res.body.agent_id).toMatch(/^agt_/);
      expect(res.body.branch_id).toMatch(/^br_/);
      expect(res.body.version_id).toMatch(/^ver_/);
      // The raw answer: the typed client would fill these defaults in if the server left them out.
      const v = (await svc.api('GET', `/versions/${res.body.version_id}`)).body;
      expect(v).toMatchObject({ status: 'DEPLOYING', git_branch: 'Feature/Login_Page', git_message: '', is_dirty: false, replicas: 0, rollback_count: 0 });
      expect(new Date(v.image_expires_at!).getTime() - new Date(v.deployed_at).getTime()).toBe(30 * 86_400_000);
      expect((await branch(res.body.branch_id)).git_branch_normalized).toBe('feature-login-page');
    });

    test('a new agent gets a production (main) and a preview (*) environment', async () => {
      await deploy(svc);
      const envs = (await svc.client().listEnvironments({ params: { namespace_slug: 'default', agent_name: 'support-bot' } })).environments;
      expect(envs.map((e) => [e.name, e.is_prod, e.branch_rules]).sort()).toEqual([
        ['preview', false, ['*']],
        ['production', true, ['main']],
      ]);
    });

    test('a deploy to an unknown namespace is a 404', async () => {
      const res = await svc.api('POST', '/agents/deploy', {
        body: {
          namespace: 'nowhere',
          agent_name: 'a',
          branch: 'main',
          git_hash: 'abc1234',
          author_name: 'A',
          author_email: 'a@x',
          image_url: 'i',
          sdk_type: 'alpha_agent_sdk',
          acp_type: 'sync',
        },
      });
      expect(res).toMatchObject({ status: 404, body: { detail: 'Namespace nowhere was not found', code: 'not_found' } });
    });

    test('bad deploy bodies are 422s naming each field', async () => {
      const res = await svc.api('POST', '/agents/deploy', {
        body: { agent_name: 'Bad Name', branch: 'main', git_hash: 'xyz', replicas: 11, sdk_type: 'gamma' },
      });
      expect(res.status).toBe(422);
      const locs = res.body.detail.map((d: any) => d.loc.join('.'));
      expect(locs).toEqual(
        expect.arrayContaining(['body.agent_name', 'body.git_hash', 'body.replicas', 'body.sdk_type', 'body.author_name', 'body.image_url']),
      );
      // acp_type may be left out (it defaults, as the CLI's does).
      expect(locs).not.toContain('body.acp_type');
      expect(res.body.detail.find((d: any) => d.loc[1] === 'author_name')).toEqual({ loc: ['body', 'author_name'], msg: 'Field required', type: 'missing' });
    });

    describe('the upstream API’s deploy body', () => {
      const commit = () => ({ branch: 'main', git_hash: nextHash(), author_name: 'Ada', author_email: 'ada@example.com', image_url: 'registry.local/bot:1' });

      test('agent_name may be namespace/name; namespace, when also given, must agree (422 at body.agent_name otherwise)', async () => {
        const client = svc.client();
        await client.createNamespace({ body: { name: 'Team', slug: 'team' } });
        const first = await client.deploy({ body: { agent_name: 'team/bot', ...commit() } });
        const agent = await client.getAgentByName({ params: { namespace_slug: 'team', agent_name: 'bot' } });
        expect(first.agent_id).toBe(agent.id);
        expect(first.message).toBe(`Version v1 (${first.version_id}) of team/bot is deploying on branch main`);
        // The same agent, addressed the older way and with both agreeing.
        expect((await client.deploy({ body: { namespace: 'team', agent_name: 'bot', ...commit() } })).agent_id).toBe(agent.id);
        expect((await client.deploy({ body: { namespace: 'team', agent_name: 'team/bot', ...commit() } })).version_number).toBe(3);
        expect((await client.deploy({ body: { agent_name: 'bot', ...commit() } })).agent_id).not.toBe(agent.id);
        expectInvalid(await svc.api('POST', '/agents/deploy', { body: { namespace: 'default', agent_name: 'team/bot', ...commit() } }), ['body', 'agent_name']);
        for (const name of ['team/', '/bot', 'team/bot/x', 'Team/bot', 'te/bot', `${'n'.repeat(64)}/bot`, `team/${'b'.repeat(64)}`]) {
          expectInvalid(await svc.api('POST', '/agents/deploy', { body: { agent_name: name, ...commit() } }), ['body', 'agent_name']);
        }
        expectError(
          await svc.api('POST', '/agents/deploy', { body: { agent_name: 'nowhere/bot', ...commit() } }),
          404,
          'not_found',
          'Namespace nowhere was not found',
        );
      });

      test('sdk_type and acp_type may be left out: the version gets the CLI’s defaults', async () => {
        const client = svc.client();
        const d = await client.deploy({ body: { agent_name: 'bot', ...commit() } });
        expect(await client.getVersion({ params: { version_id: d.version_id } })).toMatchObject({ sdk_type: DEFAULT_SDK_TYPE, acp_type: DEFAULT_ACP_TYPE });
        expect([DEFAULT_SDK_TYPE, DEFAULT_ACP_TYPE]).toEqual(['alpha_agent_sdk', 'async']);
        const explicit = await client.deploy({ body: { agent_name: 'bot', ...commit(), sdk_type: 'beta_agent_sdk', acp_type: 'sync' } });
        expect(await client.getVersion({ params: { version_id: explicit.version_id } })).toMatchObject({ sdk_type: 'beta_agent_sdk', acp_type: 'sync' });
      });

      test('resources are stored on the version as given (numbers as their decimal text); none is null', async () => {
        const client = svc.client();
        const sized = await client.deploy({
          body: { agent_name: 'bot', ...commit(), resources: { requests: { cpu: 0.5, memory: '256Mi' }, limits: { memory: 1073741824 } } },
        });
        expect((await client.getVersion({ params: { version_id: sized.version_id } })).resources).toEqual({
          requests: { cpu: '0.5', memory: '256Mi' },
          limits: { memory: '1073741824' },
        });
        const plain = await client.deploy({ body: { agent_name: 'bot', ...commit() } });
        expect((await svc.api('GET', `/versions/${plain.version_id}`)).body.resources).toBeNull();
        const listed = await client.listBranchVersions({ params: { branch_id: sized.branch_id } });
        expect(listed.versions.map((v) => v.resources)).toEqual([null, { requests: { cpu: '0.5', memory: '256Mi' }, limits: { memory: '1073741824' } }]);
      });

      test('a rollback target keeps its own resources', async () => {
        const client = svc.client();
        const v1 = await deployActive(svc, { resources: { requests: { cpu: '100m' } } });
        await deployActive(svc, { resources: { requests: { cpu: '2' } } });
        const rolled = await client.rollbackBranch({ params: { branch_id: v1.branch_id }, body: {} });
        expect(rolled.target_version.resources).toEqual({ requests: { cpu: '100m' } });
      });

      test('bad resources are 422s at the quantity: malformed, non-positive, unknown keys, a request above its limit', async () => {
        const bad = async (resources: unknown) =>
          (await svc.api('POST', '/agents/deploy', { body: { agent_name: 'bot', ...commit(), resources } })).body.detail?.map((d: { loc: unknown }) => d.loc);
        expect(await bad({ requests: { cpu: 'lots', memory: '1GB' } })).toEqual([
          ['body', 'resources', 'requests', 'cpu'],
          ['body', 'resources', 'requests', 'memory'],
        ]);
        expect(await bad({ limits: { cpu: 0, memory: -1 } })).toEqual([
          ['body', 'resources', 'limits', 'cpu'],
          ['body', 'resources', 'limits', 'memory'],
        ]);
        expect(await bad({ limits: { cpu: 0.0001 } })).toEqual([['body', 'resources', 'limits', 'cpu']]);
        expect(await bad({ requests: { gpu: '1' } })).toEqual([['body', 'resources', 'requests']]);
        expect(await bad({ reservations: {} })).toEqual([['body', 'resources']]);
        expect(await bad({ requests: { cpu: '1500m', memory: '2Gi' }, limits: { cpu: '1', memory: '2G' } })).toEqual([
          ['body', 'resources', 'requests', 'cpu'],
          ['body', 'resources', 'requests', 'memory'],
        ]);
        expect(await bad('1 cpu')).toEqual([['body', 'resources']]);
        // Equal request and limit, and a limit alone, are fine.
        expect(await bad({ requests: { cpu: '1000m', memory: '1Gi' }, limits: { cpu: 1, memory: '1024Mi' } })).toBeUndefined();
      });
    });

    test('a non-sticky deploy migrates the RUNNING tasks of the current version', async () => {
      const v1 = await deployActive(svc);
      const [t1, t2] = await createTasks(svc, 2);
      await svc.client().updateTask({ params: { task_id: t2.id }, body: { status: 'IDLE' } });
      const v2 = await deploy(svc, { are_tasks_sticky: false });
      expect(v2.tasks_migrated).toBe(1);
      expect((await task(t1.id)).current_version_id).toBe(v2.version_id);
      expect((await task(t1.id)).created_version_id).toBe(v1.version_id);
      expect((await task(t2.id)).current_version_id).toBe(v1.version_id);
    });

    test('a sticky deploy leaves tasks where they are', async () => {
      const v1 = await deployActive(svc);
      const [t1] = await createTasks(svc, 1);
      const v2 = await deploy(svc, { are_tasks_sticky: true });
      expect(v2.tasks_migrated).toBe(0);
      expect((await task(t1.id)).current_version_id).toBe(v1.version_id);
    });
  });

  describe('register', () => {
    test('DEPLOYING -> ACTIVE; the previous version drains while tasks remain, then retires', async () => {
      const v1 = await deployActive(svc);
      const [t1] = await createTasks(svc, 1);
      const v2 = await deploy(svc, { are_tasks_sticky: true });
      const res = await register(svc, v2.version_id);
      expect(res.version.status).toBe('ACTIVE');
      expect(res.version.replicas).toBe(1);
      expect((await version(v1.version_id)).status).toBe('DRAINING');
      await svc.client().updateTask({ params: { task_id: t1.id }, body: { status: 'COMPLETED' } });
      const v1After = await version(v1.version_id);
      expect(v1After.status).toBe('RETIRED');
      expect(v1After.retired_at).not.toBeNull();
    });

    test('the previous version retires at once when no task runs on it', async () => {
      const v1 = await deployActive(svc);
      await deployActive(svc);
      expect((await version(v1.version_id)).status).toBe('RETIRED');
    });

    test('every transition appends an event with a per-branch sequence', async () => {
      const v1 = await deployActive(svc);
      await deployActive(svc);
      const events = await branchEvents(v1.branch_id);
      expect(events.map((e) => e.type)).toEqual([
        'VERSION_CREATED',
        'VERSION_ACTIVATED',
        'VERSION_CREATED',
        'VERSION_ACTIVATED',
        'VERSION_DRAINING',
        'VERSION_RETIRED',
      ]);
      expect(events.map((e) => e.sequence)).toEqual([1, 2, 3, 4, 5, 6]);
    });

    test('ACTIVE <-> UNHEALTHY on failing and recovering health checks', async () => {
      const v1 = await deployActive(svc);
      expect((await register(svc, v1.version_id, undefined, 'UNHEALTHY')).version.status).toBe('UNHEALTHY');
      expect((await register(svc, v1.version_id, undefined, 'ACTIVE')).version.status).toBe('ACTIVE');
      expect(await eventTypes(v1.branch_id)).toEqual(['VERSION_CREATED', 'VERSION_ACTIVATED', 'VERSION_UNHEALTHY', 'VERSION_RECOVERED']);
    });

    test('DEPLOYING -> FAILED keeps the previous version serving and moves its tasks back', async () => {
      const v1 = await deployActive(svc);
      const [t1] = await createTasks(svc, 1);
      const v2 = await deploy(svc);
      expect((await task(t1.id)).current_version_id).toBe(v2.version_id);
      const res = await svc.api('POST', '/versions/register', {
        body: {
          version_id: v2.version_id,
          status: 'FAILED',
          failure_reason: 'image_pull_failed',
          failure_diagnostics: { title: 'Image not found', description: 'img:1 does not exist', action: 'Push the image' },
        },
      });
      expect(res.status).toBe(200);
      expect(res.body.tasks_migrated).toBe(1);
      expect(res.body.version).toMatchObject({
        status: 'FAILED',
        failure_reason: 'image_pull_failed',
        failure_diagnostics: { title: 'Image not found', description: 'img:1 does not exist', action: 'Push the image' },
      });
      expect((await task(t1.id)).current_version_id).toBe(v1.version_id);
      expect((await version(v1.version_id)).status).toBe('ACTIVE');
      expect((await branch(v1.branch_id)).current_version?.id).toBe(v1.version_id);
    });

    test('an impossible transition is a 409', async () => {
      const v1 = await deployActive(svc);
      const res = await svc.api('POST', '/versions/register', { body: { version_id: v1.version_id, status: 'FAILED' } });
      expect(res).toMatchObject({
        status: 409,
        body: { code: 'invalid_transition', detail: `Version v1 (${v1.version_id}) is ACTIVE; it cannot become FAILED` },
      });
    });

    test('registering an unknown version is a 404', async () => {
      const res = await svc.api('POST', '/versions/register', { body: { version_id: 'ver_missing' } });
      expect(res).toMatchObject({ status: 404, body: { detail: 'Version ver_missing was not found', code: 'not_found' } });
    });
  });

  describe('rollback', () => {
    test('the current version becomes ROLLED_BACK, the previous one ACTIVE again, RUNNING tasks follow', async () => {
      const v1 = await deployActive(svc);
      const v2 = await deployActive(svc);
      const [t1] = await createTasks(svc, 1);
      expect(t1.current_version_id).toBe(v2.version_id);
      const res = await svc.api('POST', `/branches/${v1.branch_id}/rollback`, { body: {} });
      expect(res.status).toBe(200);
      expect(res.body).toMatchObject({ branch_id: v1.branch_id, rolled_back_version_id: v2.version_id, tasks_migrated: 1 });
      expect(res.body.target_version).toMatchObject({ id: v1.version_id, status: 'ACTIVE', rollback_count: 1, retired_at: null });
      expect(res.body.target_version.last_rollback_at).not.toBeNull();
      const rolledBack = await version(v2.version_id);
      expect(rolledBack.status).toBe('ROLLED_BACK');
      expect(rolledBack.rolled_back_at).not.toBeNull();
      expect((await task(t1.id)).current_version_id).toBe(v1.version_id);
      expect((await branch(v1.branch_id)).current_version?.id).toBe(v1.version_id);
      expect((await eventTypes(v1.branch_id)).slice(-4)).toEqual(['VERSION_ROLLED_BACK_FROM', 'VERSION_ROLLED_BACK_TO', 'VERSION_ACTIVATED', 'TASKS_MIGRATED']);
    });

    test('an explicit target of another branch is a 422', async () => {
      const v1 = await deployActive(svc);
      await deployActive(svc);
      const other = await deployActive(svc, { branch: 'dev' });
      const res = await svc.api('POST', `/branches/${v1.branch_id}/rollback`, { body: { target_version_id: other.version_id } });
      expect(res.status).toBe(422);
      expect(res.body.detail[0].loc).toEqual(['body', 'target_version_id']);
    });

    test('a target past image_expires_at is a 409 image_expired', async () => {
      const v1 = await deployActive(svc);
      await deployActive(svc);
      await sql`UPDATE versions SET image_expires_at = now() - interval '1 day' WHERE id = ${v1.version_id}`.execute(svc.store.db);
      const res = await svc.api('POST', `/branches/${v1.branch_id}/rollback`, { body: { target_version_id: v1.version_id } });
      expect(res.status).toBe(409);
      expect(res.body.code).toBe('image_expired');
    });

    test('without a target, expired images are skipped and none left is a 409', async () => {
      const v1 = await deployActive(svc);
      await deployActive(svc);
      await sql`UPDATE versions SET image_expires_at = now() - interval '1 day' WHERE id = ${v1.version_id}`.execute(svc.store.db);
      const res = await svc.api('POST', `/branches/${v1.branch_id}/rollback`, { body: {} });
      expect(res).toMatchObject({ status: 409, body: { code: 'no_rollback_target' } });
    });

    test('dry_run names the target and changes nothing', async () => {
      const v1 = await deployActive(svc);
      const v2 = await deployActive(svc);
      const res = await svc.api('POST', `/branches/${v1.branch_id}/rollback`, { body: { dry_run: true } });
      expect(res.body.target_version.id).toBe(v1.version_id);
      expect((await version(v2.version_id)).status).toBe('ACTIVE');
    });

    test('the answer carries the upstream API’s from/to ids and hashes, the serving status and a message (dry run too)', async () => {
      const client = svc.client();
      const [h1, h2] = ['1111111aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa', '2222222bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb'];
      const v1 = await deployActive(svc, { hash: h1 });
      const v2 = await deployActive(svc, { hash: h2 });
      await createTask(svc);
      const plan = await client.rollbackBranch({ params: { branch_id: v1.branch_id }, body: { dry_run: true } });
      expect(plan).toMatchObject({
        from_version_id: v2.version_id,
        to_version_id: v1.version_id,
        from_git_hash: h2,
        to_git_hash: h1,
        // As the target is now: retired when v2 took over with no task left on it.
        version_status: 'RETIRED',
        message: `Branch main would roll back from v2 (${h2.slice(0, 7)}) to v1 (${h1.slice(0, 7)}); 1 running task would move`,
      });
      const done = await client.rollbackBranch({ params: { branch_id: v1.branch_id }, body: {} });
      expect(done).toMatchObject({
        branch_id: v1.branch_id,
        rolled_back_version_id: v2.version_id,
        from_version_id: v2.version_id,
        to_version_id: v1.version_id,
        from_git_hash: h2,
        to_git_hash: h1,
        version_status: 'ACTIVE',
        tasks_migrated: 1,
        message: `Branch main rolled back from v2 (${h2.slice(0, 7)}) to v1 (${h1.slice(0, 7)}); 1 running task moved`,
      });
      expect(done.to_version_id).toBe(done.target_version.id);
      expect(done.version_status).toBe(done.target_version.status);
    });

    test('rolling back an unknown branch is a 404', async () => {
      const res = await svc.api('POST', '/branches/br_missing/rollback', { body: {} });
      expect(res).toMatchObject({ status: 404, body: { detail: 'Branch br_missing was not found', code: 'not_found' } });
    });
  });

  describe('retire', () => {
    test('a branch with live tasks refuses to retire without force (409)', async () => {
      const v1 = await deployActive(svc);
      await createTasks(svc, 1);
      const res = await svc.api('POST', `/branches/${v1.branch_id}/retire`, { body: { reason: 'done' } });
      expect(res).toMatchObject({ status: 409, body: { code: 'branch_has_tasks' } });
    });

    test('force terminates the live tasks and retires every version', async () => {
      const v1 = await deployActive(svc);
      const [t1] = await createTasks(svc, 1);
      const res = await svc.api('POST', `/branches/${v1.branch_id}/retire`, { body: { reason: 'feature merged', force: true } });
      expect(res.status).toBe(200);
      expect(res.body).toMatchObject({ id: v1.branch_id, retired_reason: 'feature merged' });
      expect(res.body.retired_at).not.toBeNull();
      expect((await task(t1.id)).status).toBe('TERMINATED');
      expect((await version(v1.version_id)).status).toBe('RETIRED');
    });

    test('a deploy to a retired branch revives it', async () => {
      const v1 = await deployActive(svc);
      await svc.client().retireBranch({ params: { branch_id: v1.branch_id }, body: { reason: 'paused' } });
      const v2 = await deploy(svc, { hash: nextHash() });
      expect(v2.branch_id).toBe(v1.branch_id);
      expect((await branch(v1.branch_id)).retired_at).toBeNull();
    });

    test('a reason is required (422)', async () => {
      const v1 = await deployActive(svc);
      const res = await svc.api('POST', `/branches/${v1.branch_id}/retire`, { body: {} });
      expect(res.body).toEqual({ detail: [{ loc: ['body', 'reason'], msg: 'Field required', type: 'missing' }] });
    });
  });

  test('a task created while only a DEPLOYING version exists runs on it', async () => {
    const v1 = await deploy(svc);
    const t = await createTask(svc);
    expect(t.current_version_id).toBe(v1.version_id);
  });
});
