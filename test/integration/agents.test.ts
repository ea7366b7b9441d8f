import { describe, expect, test } from 'vitest';
import { Agent } from '../../src/contract/resources.js';
import { engines, useService } from '../support/service.js';
import { createTask, deploy, deployActive } from '../support/fixtures.js';
import { orgId, scopedKey } from '../support/scoped-key.js';
import { expectError, expectInvalid, expectMalformed } from '../support/bad-input.js';

describe.each(engines)('agents (%s)', (engine) => {
  const svc = useService(engine);

  const names = (res: { body: { agents: Agent[] } }) => res.body.agents.map((a) => a.name);

  describe('GET /agents', () => {
    test('lists live agents, newest first, with the spec’s fields', async () => {
      await deploy(svc, { agent: 'first' });
      await deploy(svc, { agent: 'second', description: 'Second agent', agent_input_type: 'json' });
      const res = await svc.api('GET', '/agents');
      expect(res.status).toBe(200);
      expect(res.body.total).toBe(2);
      expect(names(res)).toEqual(['second', 'first']);
      const agent = Agent.parse(res.body.agents[0]);
      expect(agent).toMatchObject({ description: 'Second agent', agent_input_type: 'json', status: 'ACTIVE', status_reason: null });
      expect(agent.id).toMatch(/^agt_/);
    });

    test('the namespace filter takes a slug; an unknown slug is 404', async () => {
      await svc.client().createNamespace({ body: { name: 'Other', slug: 'other' } });
      await deploy(svc, { agent: 'here' });
      await deploy(svc, { agent: 'other/there' });
      expect(names(await svc.api('GET', '/agents?namespace=other'))).toEqual(['there']);
      expect(names(await svc.api('GET', '/agents?namespace=default'))).toEqual(['here']);
      expectError(await svc.api('GET', '/agents?namespace=nowhere'), 404, 'not_found', 'Namespace nowhere was not found');
    });

    test('a key sees only the agents it can discover', async () => {
      const seen = await deploy(svc, { agent: 'seen' });
      await deploy(svc, { agent: 'unseen' });
      const discoverer = await scopedKey(svc, [{ resource_type: 'agent', resource_id: seen.agent_id, role: 'discoverer' }]);
      const res = await svc.api('GET', '/agents', { key: discoverer });
      expect(res.body).toMatchObject({ total: 1, agents: [{ id: seen.agent_id }] });
      const nothing = await scopedKey(svc, []);
      expect((await svc.api('GET', '/agents', { key: nothing })).body).toEqual({ agents: [], total: 0 });
    });

    test('a namespace admin discovers every agent of its namespace, plus those it holds a role on elsewhere', async () => {
      const other = await svc.client().createNamespace({ body: { name: 'Other', slug: 'other' } });
      const there1 = await deploy(svc, { agent: 'other/there-1' });
      const there2 = await deploy(svc, { agent: 'other/there-2' });
      const here = await deploy(svc, { agent: 'here' });
      await deploy(svc, { agent: 'hidden' });
      const key = await scopedKey(svc, [
        { resource_type: 'namespace', resource_id: other.id, role: 'admin' },
        { resource_type: 'agent', resource_id: here.agent_id, role: 'viewer' },
      ]);
      const res = await svc.api('GET', '/agents?order_direction=asc&limit=2', { key });
      expect(res.body.total).toBe(3);
      expect(res.body.agents.map((a: Agent) => a.id)).toEqual([there1.agent_id, there2.agent_id]);
      const page2 = await svc.api('GET', '/agents?order_direction=asc&limit=2&page_number=2', { key });
      expect(page2.body.agents.map((a: Agent) => a.id)).toEqual([here.agent_id]);
    });

    test('an org member discovers every agent, paged in the database', async () => {
      for (const name of ['a1', 'a2', 'a3']) await deploy(svc, { agent: name });
      const member = await scopedKey(svc, [{ resource_type: 'org', resource_id: await orgId(svc), role: 'member' }]);
      const res = await svc.api('GET', '/agents?limit=2&page_number=2&order_direction=asc', { key: member });
      expect(res.body.total).toBe(3);
      expect(names(res)).toEqual(['a3']);
    });

    test('deleted agents are not listed', async () => {
      const gone = await deploy(svc, { agent: 'gone' });
      await deploy(svc, { agent: 'kept' });
      await svc.client().deleteAgent({ params: { agent_id: gone.agent_id } });
      expect(names(await svc.api('GET', '/agents'))).toEqual(['kept']);
    });

    test('bad paging parameters are 422', async () => {
      expectInvalid(await svc.api('GET', '/agents?limit=1001'), ['query', 'limit']);
      expectInvalid(await svc.api('GET', '/agents?page_number=0'), ['query', 'page_number']);
    });
  });

  describe('GET /agents/{id} and /agents/name/{ns}/{name}', () => {
    test('an agent by id and by name: the same record', async () => {
      const { agent_id } = await deploy(svc);
      const byId = await svc.api('GET', `/agents/${agent_id}`);
      expect(byId.status).toBe(200);
      expect(byId.body).toMatchObject({ id: agent_id, name: 'support-bot', status: 'ACTIVE' });
      const byName = await svc.api('GET', '/agents/name/default/support-bot');
      expect(byName.body).toEqual(byId.body);
    });

    test('unknown ids and names are 404', async () => {
      expectError(await svc.api('GET', '/agents/agt_nope'), 404, 'not_found', 'Agent agt_nope was not found');
      expectError(await svc.api('GET', '/agents/name/default/nope'), 404, 'not_found', 'Agent default/nope was not found');
      expectError(await svc.api('GET', '/agents/name/nowhere/nope'), 404, 'not_found', 'Agent nowhere/nope was not found');
    });

    test('an agent the key cannot discover is a 404, not a 403', async () => {
      const { agent_id } = await deploy(svc);
      const nothing = await scopedKey(svc, []);
      expectError(await svc.api('GET', `/agents/${agent_id}`, { key: nothing }), 404, 'not_found', `Agent ${agent_id} was not found`);
    });
  });

  describe('DELETE /agents/{id} and /agents/name/{ns}/{name}', () => {
    test('soft delete: the agent becomes DELETED, then answers 404', async () => {
      const { agent_id } = await deploy(svc);
      const res = await svc.api('DELETE', `/agents/${agent_id}`);
      expect(res.status).toBe(200);
      expect(res.body).toEqual({ id: agent_id, message: `Agent support-bot (${agent_id}) deleted: 0 tasks terminated, 1 version retired` });
      const row = await svc.store.db.selectFrom('agents').select(['status', 'status_reason']).where('id', '=', agent_id).executeTakeFirstOrThrow();
      expect(row).toEqual({ status: 'DELETED', status_reason: 'Agent deleted by API key bootstrap' });
      expectError(await svc.api('GET', `/agents/${agent_id}`), 404, 'not_found');
      expectError(await svc.api('DELETE', `/agents/${agent_id}`), 404, 'not_found');
    });

    test('its RUNNING and IDLE tasks become TERMINATED; terminal tasks keep their status', async () => {
      await deployActive(svc);
      const running = await createTask(svc);
      const idle = await createTask(svc);
      const done = await createTask(svc);
      await svc.client().updateTask({ params: { task_id: idle.id }, body: { status: 'IDLE' } });
      await svc.client().updateTask({ params: { task_id: done.id }, body: { status: 'COMPLETED' } });
      const res = await svc.api('DELETE', '/agents/name/default/support-bot');
      expect(res.body.message).toBe('Agent default/support-bot deleted: 2 tasks terminated, 1 version retired');
      const statuses = await svc.store.db.selectFrom('tasks').select(['id', 'status', 'status_reason']).orderBy('id').execute();
      expect(statuses).toEqual([
        { id: running.id, status: 'TERMINATED', status_reason: 'Agent deleted' },
        { id: idle.id, status: 'TERMINATED', status_reason: 'Agent deleted' },
        { id: done.id, status: 'COMPLETED', status_reason: null },
      ]);
    });

    test('its branches’ live versions become RETIRED, with a VERSION_RETIRED event each; failed versions stay FAILED', async () => {
      const main = await deployActive(svc);
      const failed = await deploy(svc);
      await svc.client().registerVersion({ body: { version_id: failed.version_id, status: 'FAILED', failure_reason: 'crash_loop' } });
      const feature = await deploy(svc, { branch: 'feature/x' });
      await svc.client().deleteAgent({ params: { agent_id: main.agent_id } });
      const versions = await svc.store.db.selectFrom('versions').select(['id', 'status', 'retired_at']).orderBy('id').execute();
      expect(versions.map((v) => [v.id, v.status, v.retired_at !== null])).toEqual([
        [main.version_id, 'RETIRED', true],
        [failed.version_id, 'FAILED', false],
        [feature.version_id, 'RETIRED', true],
      ]);
      const retiredEvents = await svc.store.db
        .selectFrom('version_events')
        .select(['version_id', 'data'])
        .where('type', '=', 'VERSION_RETIRED')
        .orderBy('version_id')
        .execute();
      expect(retiredEvents).toEqual([
        { version_id: main.version_id, data: { reason: 'agent_deleted' } },
        { version_id: feature.version_id, data: { reason: 'agent_deleted' } },
      ]);
      const branches = await svc.store.db.selectFrom('branches').select(['retired_reason']).execute();
      expect(branches).toEqual([{ retired_reason: 'Agent deleted' }, { retired_reason: 'Agent deleted' }]);
    });

    test('a deleted agent frees its name: the next deploy creates a new agent', async () => {
      const first = await deploy(svc);
      await svc.client().deleteAgent({ params: { agent_id: first.agent_id } });
      const second = await deploy(svc);
      expect(second.agent_id).not.toBe(first.agent_id);
      expect((await svc.client().getAgentByName({ params: { namespace_slug: 'default', agent_name: 'support-bot' } })).id).toBe(second.agent_id);
    });

    test('deleting needs admin on the agent: an editor gets 403, a key that cannot discover it 404, an owner may', async () => {
      const { agent_id } = await deploy(svc);
      const editor = await scopedKey(svc, [{ resource_type: 'agent', resource_id: agent_id, role: 'editor' }]);
      expectError(await svc.api('DELETE', `/agents/${agent_id}`, { key: editor }), 403, 'forbidden', `This API key may not admin Agent ${agent_id}`);
      const nothing = await scopedKey(svc, []);
      expectError(await svc.api('DELETE', '/agents/name/default/support-bot', { key: nothing }), 404, 'not_found', 'Agent default/support-bot was not found');
      const owner = await scopedKey(svc, [{ resource_type: 'agent', resource_id: agent_id, role: 'owner' }]);
      expect((await svc.api('DELETE', `/agents/${agent_id}`, { key: owner })).status).toBe(200);
    });

    test('bad requests: unknown ids and names are 404, a malformed body is 422', async () => {
      expectError(await svc.api('DELETE', '/agents/agt_nope'), 404, 'not_found', 'Agent agt_nope was not found');
      expectError(await svc.api('DELETE', '/agents/name/default/nope'), 404, 'not_found', 'Agent default/nope was not found');
      expectMalformed(await svc.api('DELETE', '/agents/agt_nope', { rawBody: '{"a":' }));
    });
  });
});
