import { beforeEach, describe, expect, test } from 'vitest';
import { PRESETS } from '../../src/contract/presets.js';
import type { Scope } from '../../src/contract/resources.js';
import { engines, useService } from '../support/service.js';
import { deploy, deployActive, nextHash, register } from '../support/fixtures.js';

/** The spec's presets and sharing rules as people use them, over HTTP. */

describe.each(engines)('access scenarios (%s)', (engine) => {
  const svc = useService(engine);
  let orgId: string;
  let namespaceId: string;
  let bot: { agent_id: string; branch_id: string; version_id: string };
  let docsId: string;

  beforeEach(async () => {
    const client = svc.client();
    orgId = (await client.whoami()).org_id;
    namespaceId = (await client.listNamespaces()).namespaces[0].id;
    bot = await deployActive(svc);
    docsId = (await client.createProject({ body: { name: 'docs' } })).id;
  });

  /** A key with `preset`'s scopes, each on the resource of its type: the default namespace, support-bot, docs. */
  async function presetKey(presetId: string, groups: string[] = []) {
    const preset = PRESETS.find((p) => p.id === presetId)!;
    const target = { namespace: namespaceId, agent: bot.agent_id, project: docsId, org: orgId };
    const scopes = preset.scopes.map((s) => ({ resource_type: s.resource_type, resource_id: target[s.resource_type], role: s.role }));
    return svc.client().createKey({ body: { name: presetId, scopes, sharing_group_ids: groups } });
  }

  const keyWith = (scopes: Scope[], groups: string[] = []) => svc.client().createKey({ body: { name: 'custom', scopes, sharing_group_ids: groups } });
  const newGroup = (name: string) => svc.client().createGroup({ body: { name } });

  const task = async (key: string) => svc.api('POST', '/tasks', { key, body: { agent_id: bot.agent_id } });

  test('a Deploy key deploys, rolls back and migrates, but cannot create keys', async () => {
    const { secret: key } = await presetKey('deploy');
    const t = await task(key);
    expect(t.status).toBe(201);
    // Deploy a sticky v2: the running task stays on v1 until migrated.
    const v2 = await deploy(svc, { are_tasks_sticky: true, key });
    await register(svc, v2.version_id, key);
    const migrated = await svc.api('POST', '/tasks/migrate', { key, body: { from_version_id: bot.version_id, to_latest: true } });
    expect(migrated.status).toBe(200);
    expect(migrated.body.tasks.map((x: { id: string; current_version_id: string }) => [x.id, x.current_version_id])).toEqual([[t.body.id, v2.version_id]]);
    const rolledBack = await svc.api('POST', `/branches/${bot.branch_id}/rollback`, { key, body: { target_version_id: bot.version_id } });
    expect(rolledBack.status).toBe(200);
    expect(rolledBack.body).toMatchObject({ rolled_back_version_id: v2.version_id, target_version: { id: bot.version_id, status: 'ACTIVE' } });
    // A new agent in its namespace too.
    expect((await deploy(svc, { agent: 'new-bot', key })).agent_id).toMatch(/^agt_/);
    const keys = await svc.api('POST', '/api_keys', {
      key,
      body: { name: 'x', scopes: [{ resource_type: 'namespace', resource_id: namespaceId, role: 'admin' }] },
    });
    expect([keys.status, keys.body]).toEqual([403, { detail: 'Only org admins may manage API keys', code: 'forbidden' }]);
  });

  test('a Read-Only key lists versions, cannot migrate (403), and cannot see another namespace’s agent (404)', async () => {
    await svc.client().createNamespace({ body: { name: 'Other', slug: 'other' } });
    const other = await deployActive(svc, { agent: 'other/hidden' });
    const running = await svc.client().createTask({ body: { agent_id: bot.agent_id } });
    const { secret: key } = await presetKey('read-only');

    const branchVersions = await svc.api('GET', `/branches/${bot.branch_id}/versions`, { key });
    expect(branchVersions.status).toBe(200);
    expect(branchVersions.body.versions.map((v: { id: string }) => v.id)).toEqual([bot.version_id]);
    expect((await svc.api('GET', '/agents/default/support-bot/versions', { key })).body.total).toBe(1);

    const migrate = await svc.api('POST', '/tasks/migrate', { key, body: { task_ids: [running.id], to_latest: true } });
    expect(migrate.status).toBe(403);
    expect(migrate.body.code).toBe('forbidden');

    for (const path of [`/agents/${other.agent_id}`, '/agents/other/hidden/versions', `/branches/${other.branch_id}/versions`]) {
      const res = await svc.api('GET', path, { key });
      expect([path, res.status, res.body.code]).toEqual([path, 404, 'not_found']);
    }
    const listed = await svc.api('GET', '/agents', { key });
    expect(listed.body.agents.map((a: { id: string }) => a.id)).toEqual([bot.agent_id]);
  });

  test('an Agent Runner key creates tasks (on its project’s files too) but cannot deploy', async () => {
    const { secret: key } = await presetKey('agent-runner');
    expect((await task(key)).status).toBe(201);
    const withFiles = await svc.api('POST', '/tasks', { key, body: { agent_id: bot.agent_id, project_id: docsId } });
    expect(withFiles.status).toBe(201);
    const body = {
      agent_name: 'support-bot',
      branch: 'main',
      git_hash: nextHash(),
      author_name: 'A',
      author_email: 'a@x',
      image_url: 'img',
      sdk_type: 'alpha_agent_sdk',
      acp_type: 'async',
    };
    const redeploy = await svc.api('POST', '/agents/deploy', { key, body });
    expect([redeploy.status, redeploy.body]).toEqual([403, { detail: 'This API key may not write Agent default/support-bot', code: 'forbidden' }]);
    const newAgent = await svc.api('POST', '/agents/deploy', { key, body: { ...body, agent_name: 'another' } });
    expect([newAgent.status, newAgent.body]).toEqual([403, { detail: 'This API key may not admin Namespace default', code: 'forbidden' }]);
  });

  test('an executor scope runs tasks and nothing more', async () => {
    const { secret: key } = await keyWith([{ resource_type: 'agent', resource_id: bot.agent_id, role: 'executor' }]);
    const t = await task(key);
    expect(t.status).toBe(201);
    expect((await svc.api('POST', `/tasks/${t.body.id}/cancel`, { key })).status).toBe(200);
    const env = await svc.api('POST', '/agents/default/support-bot/environments', { key, body: { name: 'qa', branch_rules: ['qa'] } });
    expect(env.status).toBe(403);
  });

  test('a sharing-group member gets owner access to an agent another key created', async () => {
    const group = await newGroup('platform');
    const creator = await presetKey('deploy', [group.id]);
    const teammate = await keyWith([{ resource_type: 'agent', resource_id: bot.agent_id, role: 'discoverer' }], [group.id]);
    const created = await deploy(svc, { agent: 'team-bot', key: creator.secret });
    await register(svc, created.version_id, creator.secret);

    expect((await svc.api('GET', `/agents/${created.agent_id}`, { key: teammate.secret })).status).toBe(200);
    expect((await svc.api('POST', '/tasks', { key: teammate.secret, body: { agent_id: created.agent_id } })).status).toBe(201);
    expect((await svc.api('POST', '/agents/default/team-bot/environments', { key: teammate.secret, body: { name: 'qa', branch_rules: ['qa'] } })).status).toBe(
      201,
    );
    expect((await svc.api('DELETE', `/agents/${created.agent_id}`, { key: teammate.secret })).status).toBe(200);
    const owners = await svc.store.db
      .selectFrom('grants')
      .select(['principal_type', 'principal_id', 'role'])
      .where('resource_id', '=', created.agent_id)
      .orderBy('principal_type', 'desc')
      .execute();
    expect(owners).toEqual([
      { principal_type: 'key', principal_id: creator.api_key.id, role: 'owner' },
      { principal_type: 'group', principal_id: group.id, role: 'owner' },
    ]);
  });

  test('leaving the group takes the shared access away at once', async () => {
    const group = await newGroup('platform');
    const creator = await presetKey('deploy', [group.id]);
    const teammate = await keyWith([{ resource_type: 'agent', resource_id: bot.agent_id, role: 'discoverer' }], [group.id]);
    const created = await deploy(svc, { agent: 'team-bot', key: creator.secret });
    expect((await svc.api('GET', `/agents/${created.agent_id}`, { key: teammate.secret })).status).toBe(200);
    await svc.client().removeGroupMember({ params: { group_id: group.id, member_id: teammate.api_key.id } });
    expect((await svc.api('GET', `/agents/${created.agent_id}`, { key: teammate.secret })).status).toBe(404);
  });

  test('a key with no groups creates an agent that a second non-admin key cannot see; the creator owns it', async () => {
    const creator = await presetKey('deploy');
    const second = await presetKey('read-only');
    const created = await deploy(svc, { agent: 'private-bot', key: creator.secret });

    expect((await svc.api('GET', `/agents/${created.agent_id}`, { key: second.secret })).status).toBe(404);
    expect((await svc.api('GET', '/agents/default/private-bot/versions', { key: second.secret })).status).toBe(404);
    expect((await svc.api('GET', '/agents', { key: second.secret })).body.agents.map((a: { id: string }) => a.id)).toEqual([bot.agent_id]);

    // Without its namespace admin scope, the creator still owns what it created.
    await svc.client().updateKeyScopes({
      params: { key_id: creator.api_key.id },
      body: { scopes: [{ resource_type: 'agent', resource_id: bot.agent_id, role: 'discoverer' }] },
    });
    expect((await svc.api('GET', `/agents/${created.agent_id}`, { key: creator.secret })).status).toBe(200);
    expect((await svc.api('DELETE', `/agents/${created.agent_id}`, { key: creator.secret })).status).toBe(200);
  });

  test('a project created by a key is owned by it and its groups', async () => {
    const group = await newGroup('docs-team');
    const creator = await presetKey('deploy', [group.id]);
    const project = await svc.api('POST', '/projects', { key: creator.secret, body: { name: 'handbook' } });
    expect(project.status).toBe(201);
    const owners = await svc.store.db
      .selectFrom('grants')
      .select(['principal_type', 'role'])
      .where('resource_id', '=', project.body.id)
      .orderBy('principal_type', 'desc')
      .execute();
    expect(owners).toEqual([
      { principal_type: 'key', role: 'owner' },
      { principal_type: 'group', role: 'owner' },
    ]);
    const teammate = await keyWith([{ resource_type: 'agent', resource_id: bot.agent_id, role: 'viewer' }], [group.id]);
    const listed = await svc.api('GET', '/projects', { key: teammate.secret });
    expect(listed.body.projects.map((p: { name: string }) => p.name)).toEqual(['handbook']);
    expect((await svc.api('POST', '/tasks', { key: teammate.secret, body: { agent_id: bot.agent_id, project_id: project.body.id } })).status).toBe(201);
  });
});
