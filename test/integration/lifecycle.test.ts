import { afterAll, beforeAll, beforeEach, describe, expect, test } from 'vitest';
import { sql } from 'kysely';
import { Version } from '../../src/contract/resources.js';
import { engines, openTestService, type TestService } from '../support/service.js';
import { createTask, createTasks, deploy, deployActive, nextHash, register } from '../support/fixtures.js';

describe.each(engines)('version lifecycle: deploy, register, rollback, retire (%s)', (engine) => {
  let svc: TestService;
  beforeAll(async () => {
    svc = await openTestService(engine);
  });
  afterAll(async () => svc?.close());
  beforeEach(async () => svc.reset());

  const version = async (id: string) => Version.parse((await svc.api('GET', `/versions/${id}`)).body);
  const task = async (id: string) => (await svc.api('GET', `/tasks/${id}`)).body;
  const eventTypes = async (branchId: string) => (await svc.api('GET', `/branches/${branchId}/events`)).body.events.map((e: any) => e.type);

  describe('deploy', () => {
    test('the first deploy creates the agent, its branch and a DEPLOYING version', async () => {
      const res = await svc.api('POST', '/agents/deploy', {
        body: { agent_name: 'support-bot', branch: 'Feature/Login_Page', git_hash: 'abc1234', author_name: 'Ada', author_email: 'ada@example.com', image_url: 'img:1', sdk_type: 'alpha_agent_sdk', acp_type: 'sync' },
      });
      expect(res.status).toBe(201);
      expect(res.body).toMatchObject({ version_status: 'DEPLOYING', tasks_migrated: 0 });
      expect(res.body.agent_id).toMatch(/^agt_/);
      expect(res.body.branch_id).toMatch(/^br_/);
      expect(res.body.version_id).toMatch(/^ver_/);
      const v = await version(res.body.version_id);
      expect(v).toMatchObject({ status: 'DEPLOYING', git_branch: 'Feature/Login_Page', git_message: '', is_dirty: false, replicas: 0, rollback_count: 0 });
      expect(new Date(v.image_expires_at!).getTime() - new Date(v.deployed_at).getTime()).toBe(30 * 86_400_000);
      const branch = (await svc.api('GET', `/branches/${res.body.branch_id}`)).body;
      expect(branch.git_branch_normalized).toBe('feature-login-page');
    });

    test('a new agent gets a production (main) and a preview (*) environment', async () => {
      await deploy(svc);
      const envs = (await svc.api('GET', '/agents/default/support-bot/environments')).body.environments;
      expect(envs.map((e: any) => [e.name, e.is_prod, e.branch_rules]).sort()).toEqual([
        ['preview', false, ['*']],
        ['production', true, ['main']],
      ]);
    });

    test('a deploy to an unknown namespace is a 404', async () => {
      const res = await svc.api('POST', '/agents/deploy', {
        body: { namespace: 'nowhere', agent_name: 'a', branch: 'main', git_hash: 'abc1234', author_name: 'A', author_email: 'a@x', image_url: 'i', sdk_type: 'alpha_agent_sdk', acp_type: 'sync' },
      });
      expect(res).toMatchObject({ status: 404, body: { detail: 'Namespace nowhere was not found', code: 'not_found' } });
    });

    test('bad deploy bodies are 422s naming each field', async () => {
      const res = await svc.api('POST', '/agents/deploy', { body: { agent_name: 'Bad Name', branch: 'main', git_hash: 'xyz', replicas: 11, sdk_type: 'gamma' } });
      expect(res.status).toBe(422);
      const locs = res.body.detail.map((d: any) => d.loc.join('.'));
      expect(locs).toEqual(expect.arrayContaining(['body.agent_name', 'body.git_hash', 'body.replicas', 'body.sdk_type', 'body.author_name', 'body.image_url', 'body.acp_type']));
      expect(res.body.detail.find((d: any) => d.loc[1] === 'author_name')).toEqual({ loc: ['body', 'author_name'], msg: 'Field required', type: 'missing' });
    });

    test('a non-sticky deploy migrates the RUNNING tasks of the current version', async () => {
      const v1 = await deployActive(svc);
      const [t1, t2] = await createTasks(svc, 2);
      await svc.api('PATCH', `/tasks/${t2.id}`, { body: { status: 'IDLE' } });
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
      await svc.api('PATCH', `/tasks/${t1.id}`, { body: { status: 'COMPLETED' } });
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
      const events = (await svc.api('GET', `/branches/${v1.branch_id}/events`)).body.events;
      expect(events.map((e: any) => e.type)).toEqual(['VERSION_CREATED', 'VERSION_ACTIVATED', 'VERSION_CREATED', 'VERSION_ACTIVATED', 'VERSION_DRAINING', 'VERSION_RETIRED']);
      expect(events.map((e: any) => e.sequence)).toEqual([1, 2, 3, 4, 5, 6]);
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
        body: { version_id: v2.version_id, status: 'FAILED', failure_reason: 'image_pull_failed', failure_diagnostics: { title: 'Image not found', description: 'img:1 does not exist', action: 'Push the image' } },
      });
      expect(res.status).toBe(200);
      expect(res.body.tasks_migrated).toBe(1);
      expect(res.body.version).toMatchObject({ status: 'FAILED', failure_reason: 'image_pull_failed', failure_diagnostics: { title: 'Image not found', description: 'img:1 does not exist', action: 'Push the image' } });
      expect((await task(t1.id)).current_version_id).toBe(v1.version_id);
      expect((await version(v1.version_id)).status).toBe('ACTIVE');
      const branch = (await svc.api('GET', `/branches/${v1.branch_id}`)).body;
      expect(branch.current_version.id).toBe(v1.version_id);
    });

    test('an impossible transition is a 409', async () => {
      const v1 = await deployActive(svc);
      const res = await svc.api('POST', '/versions/register', { body: { version_id: v1.version_id, status: 'FAILED' } });
      expect(res).toMatchObject({ status: 409, body: { code: 'invalid_transition', detail: `Version v1 (${v1.version_id}) is ACTIVE; it cannot become FAILED` } });
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
      expect((await svc.api('GET', `/branches/${v1.branch_id}`)).body.current_version.id).toBe(v1.version_id);
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
      await svc.api('POST', `/branches/${v1.branch_id}/retire`, { body: { reason: 'paused' } });
      const v2 = await deploy(svc, { git_hash: nextHash() });
      expect(v2.branch_id).toBe(v1.branch_id);
      expect((await svc.api('GET', `/branches/${v1.branch_id}`)).body.retired_at).toBeNull();
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
