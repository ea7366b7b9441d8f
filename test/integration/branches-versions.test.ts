import { describe, expect, test } from 'vitest';
import { BranchList, VersionList } from '../../src/contract/endpoints.js';
import { Version, VersionEvent } from '../../src/contract/resources.js';
import { engines, useService } from '../support/service.js';
import { deploy, deployActive, register, type DeployOptions, type Deployed } from '../support/fixtures.js';
import { scopedKey } from '../support/scoped-key.js';
import { expectError, expectInvalid } from '../support/bad-input.js';

describe.each(engines)('branches, versions and their events (%s)', (engine) => {
  const svc = useService(engine);

  const get = async (path: string) => svc.api('GET', path);
  const ids = (list: { versions: { id: string }[] }) => list.versions.map((v) => v.id);
  const setDeployedAt = (versionId: string, at: string) => svc.store.db.updateTable('versions').set({ deployed_at: at }).where('id', '=', versionId).execute();
  const deployMany = async (count: number, overrides: DeployOptions = {}): Promise<Deployed[]> => {
    const out: Deployed[] = [];
    for (let i = 0; i < count; i++) out.push(await deploy(svc, overrides));
    return out;
  };

  describe('GET /branches/{id}/versions', () => {
    test('versions are ordered by deployed_at descending, not by creation', async () => {
      const [v1, v2, v3] = await deployMany(3);
      await setDeployedAt(v3.version_id, '2020-01-01T00:00:00.000Z');
      await setDeployedAt(v1.version_id, '2030-01-01T00:00:00.000Z');
      const res = await get(`/branches/${v1.branch_id}/versions`);
      expect(res.status).toBe(200);
      const list = VersionList.parse(res.body);
      expect(ids(list)).toEqual([v1.version_id, v2.version_id, v3.version_id]);
      expect(list).toMatchObject({ total: 3, branch_id: v1.branch_id });
      expect(list.versions[2].deployed_at).toBe('2020-01-01T00:00:00.000Z');
    });

    test('the default limit is 20; total counts every version of the branch', async () => {
      const deployed = await deployMany(21);
      const list = (await get(`/branches/${deployed[0].branch_id}/versions`)).body;
      expect(list.total).toBe(21);
      expect(ids(list)).toEqual(
        deployed
          .slice(1)
          .reverse()
          .map((d) => d.version_id),
      );
    });

    test('limit 1 and limit 100 are accepted', async () => {
      const [v1, v2] = await deployMany(2);
      expect((await get(`/branches/${v1.branch_id}/versions?limit=1`)).body).toMatchObject({ total: 2, versions: [{ id: v2.version_id }] });
      expect((await get(`/branches/${v1.branch_id}/versions?limit=100`)).body.versions).toHaveLength(2);
    });

    test('limit 0 and limit 101 are 422 at query.limit', async () => {
      const { branch_id } = await deploy(svc);
      for (const limit of ['0', '101', '-1', '1.5', 'ten']) {
        expectInvalid(await get(`/branches/${branch_id}/versions?limit=${limit}`), ['query', 'limit']);
      }
    });

    test('versions carry every Version field', async () => {
      const { branch_id, version_id } = await deploy(svc, { git_message: 'Fix login', is_dirty: true });
      const [v] = (await get(`/branches/${branch_id}/versions`)).body.versions;
      expect(Version.strict().parse(v)).toMatchObject({
        id: version_id,
        branch_id,
        git_branch: 'main',
        git_message: 'Fix login',
        author_name: 'Ada',
        author_email: 'ada@example.com',
        status: 'DEPLOYING',
        is_dirty: true,
        sdk_type: 'alpha_agent_sdk',
        acp_type: 'async',
        rollback_count: 0,
        retired_at: null,
      });
    });

    test('an unknown branch is 404, and so is one the key cannot discover', async () => {
      expectError(await get('/branches/br_nope/versions'), 404, 'not_found', 'Branch br_nope was not found');
      const { branch_id } = await deploy(svc);
      const nothing = await scopedKey(svc, []);
      expectError(await svc.api('GET', `/branches/${branch_id}/versions`, { key: nothing }), 404, 'not_found');
    });

    test('a discoverer may not read versions: 403', async () => {
      const { agent_id, branch_id } = await deploy(svc);
      const discoverer = await scopedKey(svc, [{ resource_type: 'agent', resource_id: agent_id, role: 'discoverer' }]);
      expectError(await svc.api('GET', `/branches/${branch_id}/versions`, { key: discoverer }), 403, 'forbidden');
    });
  });

  describe('GET /agents/{ns}/{agent}/versions', () => {
    test('lists versions across all branches, newest deployed_at first, with branch_id null', async () => {
      const main = await deploy(svc);
      const feature = await deploy(svc, { branch: 'feature/x' });
      const res = await get('/agents/default/support-bot/versions');
      expect(res.status).toBe(200);
      expect(res.body).toMatchObject({ total: 2, branch_id: null });
      expect(ids(res.body)).toEqual([feature.version_id, main.version_id]);
    });

    test('the branch filter takes a git branch name and sets branch_id', async () => {
      await deployMany(2);
      const [f1, f2] = await deployMany(2, { branch: 'feature/x' });
      const res = await get('/agents/default/support-bot/versions?branch=feature%2Fx');
      expect(res.body).toMatchObject({ total: 2, branch_id: f1.branch_id });
      expect(ids(res.body)).toEqual([f2.version_id, f1.version_id]);
    });

    test('the status filter, with total counting the matches rather than the page', async () => {
      const [v1, v2, v3] = await deployMany(3);
      await register(svc, v1.version_id);
      await deploy(svc, { branch: 'other' });
      expect(ids((await get('/agents/default/support-bot/versions?status=DEPLOYING&branch=main')).body)).toEqual([v3.version_id, v2.version_id]);
      const page = (await get('/agents/default/support-bot/versions?status=DEPLOYING&limit=1')).body;
      expect(page.total).toBe(3);
      expect(page.versions).toHaveLength(1);
      expect(ids((await get('/agents/default/support-bot/versions?status=ACTIVE')).body)).toEqual([v1.version_id]);
    });

    test('limit 0 and 101 are 422 at query.limit, 1 and 100 are accepted', async () => {
      await deployMany(2);
      expectInvalid(await get('/agents/default/support-bot/versions?limit=0'), ['query', 'limit']);
      expectInvalid(await get('/agents/default/support-bot/versions?limit=101'), ['query', 'limit']);
      expect((await get('/agents/default/support-bot/versions?limit=1')).body.versions).toHaveLength(1);
      expect((await get('/agents/default/support-bot/versions?limit=100')).body.versions).toHaveLength(2);
    });

    test('an unknown status is 422 at query.status; an unknown branch or agent is 404', async () => {
      await deploy(svc);
      expectInvalid(await get('/agents/default/support-bot/versions?status=RUNNING'), ['query', 'status']);
      expectError(await get('/agents/default/support-bot/versions?branch=nope'), 404, 'not_found', 'Agent default/support-bot has no branch nope');
      expectError(await get('/agents/default/nope/versions'), 404, 'not_found', 'Agent default/nope was not found');
    });
  });

  describe('GET /agents/{ns}/{agent}/branches', () => {
    test('each branch with its current version summary, most recently updated first', async () => {
      const main = await deployActive(svc, { git_message: 'Main work' });
      const feature = await deploy(svc, { branch: 'Feature/Login_Page' });
      const res = await get('/agents/default/support-bot/branches');
      expect(res.status).toBe(200);
      const list = BranchList.parse(res.body);
      expect(list.total).toBe(2);
      expect(list.branches.map((b) => b.id)).toEqual([feature.branch_id, main.branch_id]);
      expect(list.branches[1]).toMatchObject({
        agent_id: main.agent_id,
        git_branch: 'main',
        git_branch_normalized: 'main',
        replicas: 1,
        retired_at: null,
        retired_reason: null,
        current_version: { id: main.version_id, status: 'ACTIVE', git_message: 'Main work', source_filesystem_id: null },
      });
      expect(list.branches[0]).toMatchObject({ git_branch_normalized: 'feature-login-page', current_version: { id: feature.version_id, status: 'DEPLOYING' } });
    });

    test('retired branches are hidden unless include_retired=true', async () => {
      const main = await deploy(svc);
      const old = await deploy(svc, { branch: 'old' });
      await svc.client().retireBranch({ params: { branch_id: old.branch_id }, body: { reason: 'merged' } });
      const live = (await get('/agents/default/support-bot/branches')).body;
      expect(live).toMatchObject({ total: 1, branches: [{ id: main.branch_id }] });
      expect((await get('/agents/default/support-bot/branches?include_retired=false')).body.total).toBe(1);
      const all = (await get('/agents/default/support-bot/branches?include_retired=true')).body;
      expect(all.total).toBe(2);
      expect(all.branches.find((b: { id: string }) => b.id === old.branch_id)).toMatchObject({ retired_reason: 'merged' });
      expect(all.branches.find((b: { id: string }) => b.id === old.branch_id).retired_at).toMatch(/Z$/);
    });

    test('include_retired must be a boolean: 422 otherwise', async () => {
      await deploy(svc);
      expectInvalid(await get('/agents/default/support-bot/branches?include_retired=maybe'), ['query', 'include_retired']);
    });

    test('an unknown agent is 404', async () => {
      expectError(await get('/agents/default/nope/branches'), 404, 'not_found', 'Agent default/nope was not found');
    });
  });

  describe('GET /agents/{ns}/{agent}/environments/{env}/branches', () => {
    const envBranches = async (env: string) => (await get(`/agents/default/support-bot/environments/${env}/branches`)).body;

    test('a wildcard environment lists every non-retired branch, updated_at descending', async () => {
      const main = await deploy(svc);
      const a = await deploy(svc, { branch: 'feature/a' });
      const b = await deploy(svc, { branch: 'feature/b' });
      const old = await deploy(svc, { branch: 'old' });
      await svc.client().retireBranch({ params: { branch_id: old.branch_id }, body: { reason: 'gone' } });
      await deploy(svc, { branch: 'feature/a' }); // touches feature/a: it moves to the top
      const list = await envBranches('preview');
      expect(list.total).toBe(3);
      expect(list.branches.map((x: { id: string }) => x.id)).toEqual([a.branch_id, b.branch_id, main.branch_id]);
    });

    test('a specific rule lists only the branch it names', async () => {
      const main = await deploy(svc);
      await deploy(svc, { branch: 'mainline' });
      expect(await envBranches('production')).toMatchObject({ total: 1, branches: [{ id: main.branch_id }] });
    });

    test('a prefix wildcard lists the branches under it', async () => {
      await deploy(svc);
      const a = await deploy(svc, { branch: 'feature/a' });
      await deploy(svc, { branch: 'featured' });
      await svc
        .client()
        .createEnvironment({ params: { namespace_slug: 'default', agent_name: 'support-bot' }, body: { name: 'features', branch_rules: ['feature/*'] } });
      expect(await envBranches('features')).toMatchObject({ total: 1, branches: [{ id: a.branch_id }] });
    });

    test('an unknown environment is 404', async () => {
      await deploy(svc);
      expectError(
        await get('/agents/default/support-bot/environments/nope/branches'),
        404,
        'not_found',
        'Environment nope of agent default/support-bot was not found',
      );
    });
  });

  describe('GET /branches/{id} and /versions/{id}', () => {
    test('a branch with its current version, and a version', async () => {
      const d = await deployActive(svc);
      const branch = (await get(`/branches/${d.branch_id}`)).body;
      expect(branch).toMatchObject({ id: d.branch_id, git_branch: 'main', current_version: { id: d.version_id, status: 'ACTIVE' } });
      const version = await get(`/versions/${d.version_id}`);
      expect(version.status).toBe(200);
      expect(Version.strict().parse(version.body)).toMatchObject({ id: d.version_id, branch_id: d.branch_id, status: 'ACTIVE' });
    });

    test('unknown ids are 404', async () => {
      expectError(await get('/branches/br_nope'), 404, 'not_found', 'Branch br_nope was not found');
      expectError(await get('/versions/ver_nope'), 404, 'not_found', 'Version ver_nope was not found');
    });

    test('a key with no access gets 404 for both', async () => {
      const d = await deploy(svc);
      const nothing = await scopedKey(svc, []);
      expectError(await svc.api('GET', `/branches/${d.branch_id}`, { key: nothing }), 404, 'not_found');
      expectError(await svc.api('GET', `/versions/${d.version_id}`, { key: nothing }), 404, 'not_found');
    });
  });

  describe('GET /versions/{id}/events and /branches/{id}/events', () => {
    test('a version’s events in sequence order', async () => {
      const v1 = await deployActive(svc);
      await deployActive(svc);
      const res = await get(`/versions/${v1.version_id}/events`);
      expect(res.status).toBe(200);
      const events = res.body.events.map((e: unknown) => VersionEvent.parse(e));
      expect(events.map((e: VersionEvent) => e.type)).toEqual(['VERSION_CREATED', 'VERSION_ACTIVATED', 'VERSION_DRAINING', 'VERSION_RETIRED']);
      expect(res.body.total).toBe(4);
      expect(events.every((e: VersionEvent) => e.version_id === v1.version_id && e.branch_id === v1.branch_id)).toBe(true);
      const sequences = events.map((e: VersionEvent) => e.sequence);
      expect(sequences).toEqual([...sequences].sort((a, b) => a - b));
    });

    test('a branch’s events: every version’s and its own, sequence 1, 2, 3, ...', async () => {
      const v1 = await deployActive(svc);
      const v2 = await deploy(svc);
      await svc.client().retireBranch({ params: { branch_id: v1.branch_id }, body: { reason: 'done' } });
      const res = await get(`/branches/${v1.branch_id}/events`);
      const events: VersionEvent[] = res.body.events;
      expect(events.map((e) => e.sequence)).toEqual(events.map((_, i) => i + 1));
      expect(events.map((e) => [e.type, e.version_id])).toEqual([
        ['VERSION_CREATED', v1.version_id],
        ['VERSION_ACTIVATED', v1.version_id],
        ['VERSION_CREATED', v2.version_id],
        ['VERSION_RETIRED', expect.any(String)],
        ['VERSION_RETIRED', expect.any(String)],
        ['BRANCH_RETIRED', null],
      ]);
    });

    test('unknown ids are 404', async () => {
      expectError(await get('/versions/ver_nope/events'), 404, 'not_found', 'Version ver_nope was not found');
      expectError(await get('/branches/br_nope/events'), 404, 'not_found', 'Branch br_nope was not found');
    });
  });
});
