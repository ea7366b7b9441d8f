import { beforeEach, describe, expect, test } from 'vitest';
import { Environment } from '../../src/contract/resources.js';
import { engines, useService } from '../support/service.js';
import { deploy, type Deployed } from '../support/fixtures.js';
import { scopedKey } from '../support/scoped-key.js';
import { expectError, expectInvalid, expectMalformed, expectOversize, MALFORMED_JSON, OVERSIZE_BODY } from '../support/bad-input.js';

const BASE = '/agents/default/support-bot/environments';

describe.each(engines)('environments (%s)', (engine) => {
  const svc = useService(engine);
  let agent: Deployed;
  beforeEach(async () => {
    agent = await deploy(svc);
  });

  const create = (body: unknown, key?: string) => svc.api('POST', BASE, { body, key });
  const update = (name: string, body: unknown, key?: string) => svc.api('PATCH', `${BASE}/${name}`, { body, key });
  const agentPath = { namespace_slug: 'default', agent_name: 'support-bot' };
  /** Setup: an environment through the typed client. */
  const newEnv = (name: string, branch_rules: string[]) => svc.client().createEnvironment({ params: agentPath, body: { name, branch_rules } });
  const resolve = (branch: string) => svc.api('GET', `/agents/default/support-bot/resolve-env?branch=${encodeURIComponent(branch)}`);

  describe('GET .../environments', () => {
    test('a new agent has production (main) and preview (*)', async () => {
      const res = await svc.api('GET', BASE);
      expect(res.status).toBe(200);
      expect(res.body.total).toBe(2);
      const envs = res.body.environments.map((e: unknown) => Environment.parse(e));
      expect(envs.map((e: Environment) => [e.name, e.is_prod, e.branch_rules, e.agent_id])).toEqual([
        ['production', true, ['main'], agent.agent_id],
        ['preview', false, ['*'], agent.agent_id],
      ]);
    });

    test('an unknown agent is 404', async () => {
      expectError(await svc.api('GET', '/agents/default/nope/environments'), 404, 'not_found', 'Agent default/nope was not found');
    });
  });

  describe('POST .../environments', () => {
    test('creates an environment: 201, never production', async () => {
      const res = await create({ name: 'staging', description: 'Pre-release', branch_rules: ['release/*', 'staging'] });
      expect(res.status).toBe(201);
      const env = Environment.parse(res.body);
      expect(env).toMatchObject({
        name: 'staging',
        description: 'Pre-release',
        is_prod: false,
        branch_rules: ['release/*', 'staging'],
        agent_id: agent.agent_id,
      });
      expect(env.id).toMatch(/^env_/);
      expect((await svc.api('GET', `${BASE}/staging`)).body).toEqual(res.body);
    });

    test('a name the agent already uses is 409 environment_exists', async () => {
      expectError(
        await create({ name: 'preview', branch_rules: ['x'] }),
        409,
        'environment_exists',
        'Agent default/support-bot already has an environment named preview',
      );
    });

    test('a rule another environment holds is 409 branch_rule_conflict, so every branch resolves to one environment', async () => {
      expectError(
        await create({ name: 'staging', branch_rules: ['staging', 'main'] }),
        409,
        'branch_rule_conflict',
        'Rule main already belongs to environment production',
      );
      expectError(await create({ name: 'everything', branch_rules: ['*'] }), 409, 'branch_rule_conflict', 'Rule * already belongs to environment preview');
    });

    test('is_prod cannot be set through the API: 422 at body.is_prod', async () => {
      expectInvalid(await create({ name: 'prod2', branch_rules: ['x'], is_prod: true }), ['body', 'is_prod'], 'extra_forbidden');
      expectInvalid(await update('preview', { is_prod: true }), ['body', 'is_prod'], 'extra_forbidden');
    });

    test('a star anywhere but at the end of a rule is 422 at its index', async () => {
      expectInvalid(await create({ name: 'odd', branch_rules: ['ok', 'release/*/hotfix'] }), ['body', 'branch_rules', 1]);
    });

    test('duplicate rules are folded into one', async () => {
      expect((await create({ name: 'staging', branch_rules: ['staging', 'staging'] })).body.branch_rules).toEqual(['staging']);
    });

    test('bad bodies: malformed JSON, wrong types, missing fields, empty rule lists, oversize', async () => {
      expectMalformed(await svc.api('POST', BASE, { rawBody: MALFORMED_JSON }));
      expectInvalid(await create({ name: 'staging', branch_rules: 'staging' }), ['body', 'branch_rules'], 'invalid_type');
      expectInvalid(await create({ name: 'staging' }), ['body', 'branch_rules'], 'missing');
      expectInvalid(await create({ name: 'staging', branch_rules: [] }), ['body', 'branch_rules'], 'too_small');
      expectInvalid(await create({ name: 'Staging Env', branch_rules: ['x'] }), ['body', 'name']);
      expectOversize(await svc.api('POST', BASE, { rawBody: OVERSIZE_BODY }));
    });
  });

  describe('GET .../environments/{env}', () => {
    test('an unknown environment is 404', async () => {
      expectError(await svc.api('GET', `${BASE}/nope`), 404, 'not_found', 'Environment nope of agent default/support-bot was not found');
    });
  });

  describe('PATCH .../environments/{env}', () => {
    test('updates the description and the rules', async () => {
      await newEnv('staging', ['staging']);
      const res = await update('staging', { description: 'Now with releases', branch_rules: ['staging', 'release/*'] });
      expect(res.status).toBe(200);
      expect(res.body).toMatchObject({ name: 'staging', description: 'Now with releases', branch_rules: ['staging', 'release/*'] });
      expect(res.body.updated_at > res.body.created_at).toBe(true);
    });

    test('an empty body changes nothing', async () => {
      const before = (await svc.api('GET', `${BASE}/preview`)).body;
      const res = await update('preview', {});
      expect(res.status).toBe(200);
      expect(res.body).toEqual(before);
    });

    test('the production environment keeps exactly one literal rule', async () => {
      expectInvalid(await update('production', { branch_rules: ['main', 'release'] }), ['body', 'branch_rules']);
      expectInvalid(await update('production', { branch_rules: ['release/*'] }), ['body', 'branch_rules']);
      expectInvalid(await update('production', { branch_rules: ['*'] }), ['body', 'branch_rules']);
      const res = await update('production', { branch_rules: ['trunk'] });
      expect(res.body).toMatchObject({ is_prod: true, branch_rules: ['trunk'] });
    });

    test('a rule another environment holds is 409; keeping its own rules is fine', async () => {
      await newEnv('staging', ['staging']);
      expectError(await update('staging', { branch_rules: ['main'] }), 409, 'branch_rule_conflict', 'Rule main already belongs to environment production');
      expect((await update('staging', { branch_rules: ['staging'] })).status).toBe(200);
    });

    test('bad bodies and unknown environments', async () => {
      expectMalformed(await svc.api('PATCH', `${BASE}/preview`, { rawBody: MALFORMED_JSON }));
      expectInvalid(await update('preview', { description: 5 }), ['body', 'description'], 'invalid_type');
      expectInvalid(await update('preview', { branch_rules: ['a*b'] }), ['body', 'branch_rules', 0]);
      expectOversize(await svc.api('PATCH', `${BASE}/preview`, { rawBody: OVERSIZE_BODY }));
      expectError(await update('nope', { description: 'x' }), 404, 'not_found', 'Environment nope of agent default/support-bot was not found');
    });
  });

  describe('DELETE .../environments/{env}', () => {
    test('deletes an environment: {id, message}', async () => {
      const env = await newEnv('staging', ['staging']);
      const res = await svc.api('DELETE', `${BASE}/staging`);
      expect(res.status).toBe(200);
      expect(res.body).toEqual({ id: env.id, message: 'Environment staging of agent default/support-bot deleted' });
      expectError(await svc.api('GET', `${BASE}/staging`), 404, 'not_found');
    });

    test('the production environment cannot be deleted: 409', async () => {
      expectError(
        await svc.api('DELETE', `${BASE}/production`),
        409,
        'prod_environment',
        'Environment production is the production environment and cannot be deleted',
      );
    });

    test('an unknown environment is 404', async () => {
      expectError(await svc.api('DELETE', `${BASE}/nope`), 404, 'not_found');
    });
  });

  describe('GET .../resolve-env?branch=', () => {
    beforeEach(async () => {
      await newEnv('features', ['feature/*']);
      await newEnv('ui', ['feature/ui/*', 'feature/login']);
    });

    test('a specific rule wins over every wildcard', async () => {
      expect((await resolve('main')).body).toMatchObject({ branch: 'main', environment: { name: 'production' } });
      expect((await resolve('feature/login')).body.environment.name).toBe('ui');
    });

    test('else the longest matching prefix wildcard', async () => {
      expect((await resolve('feature/ui/button')).body.environment.name).toBe('ui');
      expect((await resolve('feature/search')).body.environment.name).toBe('features');
    });

    test('else the catch-all wildcard', async () => {
      const res = await resolve('hotfix/1');
      expect(res.status).toBe(200);
      expect(res.body.environment).toMatchObject({ name: 'preview', branch_rules: ['*'] });
    });

    test('no matching rule is 404 no_environment', async () => {
      await svc.client().deleteEnvironment({ params: { ...agentPath, env_name: 'preview' } });
      expectError(await resolve('hotfix/1'), 404, 'no_environment', 'No environment of agent default/support-bot has a rule matching branch hotfix/1');
    });

    test('a missing branch parameter is 422 at query.branch', async () => {
      expectInvalid(await svc.api('GET', '/agents/default/support-bot/resolve-env'), ['query', 'branch'], 'missing');
    });
  });

  describe('permissions', () => {
    test('a viewer may read and resolve but not write: 403', async () => {
      const viewer = await scopedKey(svc, [{ resource_type: 'agent', resource_id: agent.agent_id, role: 'viewer' }]);
      expect((await svc.api('GET', BASE, { key: viewer })).status).toBe(200);
      expect((await svc.api('GET', `${BASE}/preview`, { key: viewer })).status).toBe(200);
      expect((await svc.api('GET', '/agents/default/support-bot/resolve-env?branch=x', { key: viewer })).status).toBe(200);
      const denied = 'This API key may not write Agent default/support-bot';
      expectError(await create({ name: 'staging', branch_rules: ['s'] }, viewer), 403, 'forbidden', denied);
      expectError(await update('preview', { description: 'x' }, viewer), 403, 'forbidden', denied);
      expectError(await svc.api('DELETE', `${BASE}/preview`, { key: viewer }), 403, 'forbidden', denied);
    });

    test('an editor may write', async () => {
      const editor = await scopedKey(svc, [{ resource_type: 'agent', resource_id: agent.agent_id, role: 'editor' }]);
      expect((await create({ name: 'staging', branch_rules: ['s'] }, editor)).status).toBe(201);
    });

    test('a discoverer may not read: 403; a key without access gets 404', async () => {
      const discoverer = await scopedKey(svc, [{ resource_type: 'agent', resource_id: agent.agent_id, role: 'discoverer' }]);
      expectError(await svc.api('GET', BASE, { key: discoverer }), 403, 'forbidden', 'This API key may not read Agent default/support-bot');
      const nothing = await scopedKey(svc, []);
      expectError(await svc.api('GET', BASE, { key: nothing }), 404, 'not_found', 'Agent default/support-bot was not found');
    });
  });
});
