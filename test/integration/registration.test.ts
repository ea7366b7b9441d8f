import { describe, expect, test } from 'vitest';
import { engines, useService } from '../support/service.js';
import { createTask, deploy, deployActive } from '../support/fixtures.js';
import { scopedKey } from '../support/scoped-key.js';
import { issueRegistrationToken, markReplicaGone } from '../../src/server/domain/registration.js';

const ACP_URL = 'http://127.0.0.1:9/agent';

describe.each(engines)('registration with a token, runtime keys (%s)', (engine) => {
  const svc = useService(engine);

  /** `POST /versions/register` as an agent process: no key, the token in the body. */
  const registerWith = (body: Record<string, unknown>) => svc.api('POST', '/versions/register', { key: null, body: { acp_url: ACP_URL, ...body } });

  const versionOf = (id: string) => svc.client().getVersion({ params: { version_id: id } });
  const tokenFor = (versionId: string, options?: { reusable?: boolean; ttlMs?: number }) => issueRegistrationToken(svc.store.db, versionId, options);

  /** A registered agent process of a fresh `support-bot` version: its runtime key. */
  async function runtimeKey(): Promise<{ key: string; agentId: string; versionId: string }> {
    const v = await deploy(svc);
    const res = await registerWith({ version_id: v.version_id, registration_token: await tokenFor(v.version_id) });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    return { key: res.body.agent_api_key, agentId: v.agent_id, versionId: v.version_id };
  }

  test('a one-time token registers the process once: the version becomes ACTIVE and the answer carries a runtime key', async () => {
    const v = await deploy(svc);
    const token = await tokenFor(v.version_id);
    const res = await registerWith({ version_id: v.version_id, branch_id: v.branch_id, registration_token: token });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({
      agent_id: v.agent_id,
      agent_name: 'default/support-bot',
      branch_id: v.branch_id,
      version_status: 'ACTIVE',
      tasks_migrated: 0,
      version: { id: v.version_id, status: 'ACTIVE' },
    });
    expect(res.body.agent_api_key).toMatch(/^agk_[0-9A-Za-z]{49}$/);

    const again = await registerWith({ version_id: v.version_id, registration_token: token });
    expect(again.status).toBe(401);
    expect(again.body).toEqual({ detail: 'The registration token has already been used; issue a new one', code: 'invalid_registration_token' });
  });

  test('a token of another version is refused with 401', async () => {
    const v1 = await deploy(svc);
    const v2 = await deploy(svc);
    const res = await registerWith({ version_id: v2.version_id, registration_token: await tokenFor(v1.version_id) });
    expect(res.status).toBe(401);
    expect(res.body).toEqual({ detail: `The registration token is not for version ${v2.version_id}`, code: 'invalid_registration_token' });
    expect((await versionOf(v2.version_id)).status).toBe('DEPLOYING');
  });

  test('a token for another branch is refused with 401', async () => {
    const v = await deploy(svc);
    const dev = await deploy(svc, { branch: 'dev' });
    const res = await registerWith({ version_id: v.version_id, branch_id: dev.branch_id, registration_token: await tokenFor(v.version_id) });
    expect(res.status).toBe(401);
    expect(res.body.detail).toBe(`The registration token is not for branch ${dev.branch_id}`);
  });

  test('an expired token is refused with 401', async () => {
    const v = await deploy(svc);
    const res = await registerWith({ version_id: v.version_id, registration_token: await tokenFor(v.version_id, { ttlMs: -1 }) });
    expect(res.status).toBe(401);
    expect(res.body).toEqual({ detail: 'The registration token has expired; issue a new one', code: 'invalid_registration_token' });
  });

  test('an unknown token, or no token and no key, is a 401', async () => {
    const v = await deploy(svc);
    const unknown = await registerWith({ version_id: v.version_id, registration_token: 'agrt_made-up' });
    expect(unknown.status).toBe(401);
    expect(unknown.body.detail).toBe('Unknown registration token');
    const neither = await registerWith({ version_id: v.version_id });
    expect(neither.status).toBe(401);
    expect(neither.headers.get('www-authenticate')).toBe('Bearer');
    expect(neither.body).toEqual({ detail: 'Send an API key, or a registration_token in the body', code: 'unauthorized' });
  });

  test('a token registration without acp_url is a 422 naming it', async () => {
    const v = await deploy(svc);
    const res = await svc.api('POST', '/versions/register', {
      key: null,
      body: { version_id: v.version_id, registration_token: await tokenFor(v.version_id) },
    });
    expect(res.status).toBe(422);
    expect(res.body.detail).toEqual([{ loc: ['body', 'acp_url'], msg: 'A registration with a token needs acp_url: where the agent listens', type: 'missing' }]);
  });

  test('a reusable token registers every replica, each with its own runtime key', async () => {
    const v = await deploy(svc);
    const token = await tokenFor(v.version_id, { reusable: true });
    const a = await registerWith({ version_id: v.version_id, registration_token: token, acp_url: 'http://10.0.0.1:8000' });
    const b = await registerWith({ version_id: v.version_id, registration_token: token, acp_url: 'http://10.0.0.2:8000' });
    expect([a.status, b.status]).toEqual([200, 200]);
    expect(a.body.agent_api_key).not.toBe(b.body.agent_api_key);
    const replicas = await svc.store.db
      .selectFrom('version_replicas')
      .select(['acp_url', 'live'])
      .where('version_id', '=', v.version_id)
      .orderBy('acp_url')
      .execute();
    expect(replicas).toEqual([
      { acp_url: 'http://10.0.0.1:8000', live: true },
      { acp_url: 'http://10.0.0.2:8000', live: true },
    ]);
  });

  test('the first registration of a new version hands over: the previous version drains while a task remains on it', async () => {
    const v1 = await deployActive(svc, { are_tasks_sticky: true });
    await createTask(svc);
    const v2 = await deploy(svc, { are_tasks_sticky: true });
    const res = await registerWith({ version_id: v2.version_id, registration_token: await tokenFor(v2.version_id) });
    expect(res.body.version_status).toBe('ACTIVE');
    expect((await versionOf(v1.version_id)).status).toBe('DRAINING');
    expect((await svc.client().getBranch({ params: { branch_id: v2.branch_id } })).current_version?.id).toBe(v2.version_id);
  });

  test('a retired version’s process cannot register (409)', async () => {
    const v1 = await deployActive(svc);
    await deployActive(svc);
    const token = await tokenFor(v1.version_id);
    const res = await registerWith({ version_id: v1.version_id, registration_token: token });
    expect(res.status).toBe(409);
    expect(res.body).toEqual({ detail: `Version v1 (${v1.version_id}) is RETIRED; its processes cannot register`, code: 'invalid_transition' });
  });

  test('POST /versions/{id}/registration-tokens needs write on the agent and issues a token that registers', async () => {
    const v = await deploy(svc);
    const viewer = await scopedKey(svc, [{ resource_type: 'agent', resource_id: v.agent_id, role: 'viewer' }]);
    const stranger = await scopedKey(svc, []);
    expect((await svc.api('POST', `/versions/${v.version_id}/registration-tokens`, { key: viewer })).status).toBe(403);
    expect((await svc.api('POST', `/versions/${v.version_id}/registration-tokens`, { key: stranger })).status).toBe(404);
    expect((await svc.api('POST', '/versions/ver_nope/registration-tokens')).status).toBe(404);

    const editor = await scopedKey(svc, [{ resource_type: 'agent', resource_id: v.agent_id, role: 'editor' }]);
    const issued = await svc.api('POST', `/versions/${v.version_id}/registration-tokens`, { key: editor });
    expect(issued.status).toBe(201);
    expect(Object.keys(issued.body).sort()).toEqual(['expires_at', 'registration_token']);
    expect(new Date(issued.body.expires_at).getTime()).toBeGreaterThan(Date.now());
    expect((await registerWith({ version_id: v.version_id, registration_token: issued.body.registration_token })).status).toBe(200);
  });

  test('the signing secret: only admins on the agent read it, and no other response carries it', async () => {
    const v = await deploy(svc);
    const editor = await scopedKey(svc, [{ resource_type: 'agent', resource_id: v.agent_id, role: 'editor' }]);
    expect((await svc.api('GET', `/versions/${v.version_id}/signing-secret`, { key: editor })).status).toBe(403);
    const res = await svc.api('GET', `/versions/${v.version_id}/signing-secret`);
    expect(res.status).toBe(200);
    expect(res.body.signing_secret).toMatch(/^[0-9a-f]{64}$/);
    // Stable: the secret is created once.
    expect((await svc.api('GET', `/versions/${v.version_id}/signing-secret`)).body).toEqual(res.body);
    const version = await svc.api('GET', `/versions/${v.version_id}`);
    const listed = await svc.api('GET', `/branches/${v.branch_id}/versions`);
    expect(JSON.stringify([version.body, listed.body])).not.toContain(res.body.signing_secret);
  });

  test('a runtime key works on its own agent’s tasks: tasks, events, messages, states, its agent', async () => {
    const { key, agentId } = await runtimeKey();
    expect((await svc.api('GET', `/agents/${agentId}`, { key })).status).toBe(200);
    const task = await svc.api('POST', '/tasks', { key, body: { agent_id: agentId } });
    expect(task.status).toBe(201);
    expect((await svc.api('POST', `/tasks/${task.body.id}/events`, { key, body: { content: 'hi' } })).status).toBe(201);
    expect((await svc.api('POST', '/messages', { key, body: { task_id: task.body.id, content: 'hello' } })).status).toBe(201);
    const state = await svc.api('POST', '/states', { key, body: { task_id: task.body.id, agent_id: agentId, state: { n: 1 } } });
    expect(state.status).toBe(200);
    expect((await svc.api('PATCH', `/states/${state.body.id}`, { key, body: { state: { n: 2 } } })).status).toBe(200);
    expect((await svc.api('GET', `/tasks/${task.body.id}`, { key })).body.id).toBe(task.body.id);
  });

  test('a runtime key reaches nothing of another agent (404) and cannot deploy, manage keys or read secrets (403)', async () => {
    const other = await deployActive(svc, { agent: 'other-bot' });
    const otherTask = await createTask(svc, { agent_name: 'default/other-bot' });
    const { key, agentId, versionId } = await runtimeKey();

    expect((await svc.api('GET', `/agents/${other.agent_id}`, { key })).status).toBe(404);
    expect((await svc.api('GET', `/tasks/${otherTask.id}`, { key })).status).toBe(404);
    expect((await svc.api('POST', `/tasks/${otherTask.id}/events`, { key, body: { content: 'x' } })).status).toBe(404);
    expect((await svc.api('POST', '/tasks', { key, body: { agent_id: other.agent_id } })).status).toBe(404);
    const listed = await svc.api('GET', '/tasks', { key });
    expect(listed.body.tasks.every((t: { agent_id: string }) => t.agent_id === agentId)).toBe(true);

    const deployRes = await svc.api('POST', '/agents/deploy', {
      key,
      body: {
        agent_name: 'support-bot',
        branch: 'main',
        git_hash: 'f'.repeat(40),
        git_message: 'm',
        author_name: 'a',
        author_email: 'a@example.com',
        image_url: 'x',
        sdk_type: 'alpha_agent_sdk',
        acp_type: 'async',
      },
    });
    // It may see its own agent, so the refusal is a 403 rather than a 404.
    expect(deployRes.status).toBe(403);
    expect((await svc.api('POST', `/versions/${versionId}/registration-tokens`, { key })).status).toBe(403);
    expect((await svc.api('GET', `/versions/${versionId}/signing-secret`, { key })).status).toBe(403);
    expect((await svc.api('POST', '/versions/register', { key, body: { version_id: versionId, status: 'UNHEALTHY' } })).status).toBe(403);
    expect((await svc.api('GET', '/api_keys', { key })).status).toBe(403);
    expect((await svc.api('POST', '/namespaces', { key, body: { name: 'x', slug: 'xyz' } })).status).toBe(403);
  });

  test('when the runtime marks a replica gone, its runtime key stops working', async () => {
    const { key, agentId, versionId } = await runtimeKey();
    expect((await svc.api('GET', `/agents/${agentId}`, { key })).status).toBe(200);
    await markReplicaGone(svc.store.db, versionId, ACP_URL);
    // Lookups are cached for at most a second.
    await new Promise((r) => setTimeout(r, 1100));
    const res = await svc.api('GET', `/agents/${agentId}`, { key });
    expect(res.status).toBe(401);
    expect(res.body.detail).toBe('API key has been revoked');
  });
});
