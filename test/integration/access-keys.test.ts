import { PRESETS } from '../../src/contract/presets.js';
import { beforeEach, describe, expect, test } from 'vitest';
import { engines, useService, type ApiResponse } from '../support/service.js';
import { deploy } from '../support/fixtures.js';

/** The API key endpoints: create (secret once), list, get, revoke, replace scopes and groups, rotate, whoami, presets. */

const KEY_FORMAT = /^agk_[0-9A-Za-z]{49}$/;

function expectValidation(res: ApiResponse, items: { loc: (string | number)[]; msg?: string; type?: string }[]) {
  expect(res.status, JSON.stringify(res.body)).toBe(422);
  expect(Object.keys(res.body)).toEqual(['detail']);
  expect(res.body.detail.map((d: { loc: unknown }) => d.loc)).toEqual(items.map((i) => i.loc));
  items.forEach((item, i) => {
    expect(typeof res.body.detail[i].msg).toBe('string');
    if (item.msg !== undefined) expect(res.body.detail[i].msg).toBe(item.msg);
    if (item.type !== undefined) expect(res.body.detail[i].type).toBe(item.type);
  });
}

describe.each(engines)('API keys (%s)', (engine) => {
  const svc = useService(engine);
  let orgId: string;
  let namespaceId: string;

  beforeEach(async () => {
    orgId = (await svc.client().whoami()).org_id;
    namespaceId = (await svc.client().listNamespaces()).namespaces.find((n) => n.slug === 'default')!.id;
  });

  const createKey = async (body: Record<string, unknown>, key?: string) => svc.api('POST', '/api_keys', { body: { name: 'ci', ...body }, key });
  const memberKey = async () =>
    (await svc.client().createKey({ body: { name: 'member', scopes: [{ resource_type: 'org', resource_id: orgId, role: 'member' }] } })).secret;
  const newGroup = (name: string) => svc.client().createGroup({ body: { name } });
  const revoke = (keyId: string) => svc.client().revokeKey({ params: { key_id: keyId } });

  test('POST /api_keys answers 201 with the record and the secret, which then authenticates', async () => {
    const res = await createKey({
      name: 'deployer',
      description: 'CI deploys',
      scopes: [{ resource_type: 'namespace', resource_id: namespaceId, role: 'admin' }],
    });
    expect(res.status).toBe(201);
    expect(Object.keys(res.body).sort()).toEqual(['api_key', 'secret']);
    expect(res.body.secret).toMatch(KEY_FORMAT);
    const { api_key } = res.body;
    expect(api_key).toMatchObject({
      org_id: orgId,
      name: 'deployer',
      description: 'CI deploys',
      key_prefix: res.body.secret.slice(0, 12),
      scopes: [{ resource_type: 'namespace', resource_id: namespaceId, role: 'admin' }],
      sharing_group_ids: [],
      expires_at: null,
      revoked_at: null,
      last_used_at: null,
    });
    expect(api_key.id).toMatch(/^key_[0-9A-Z]{26}$/);
    const me = await svc.api('GET', '/whoami', { key: res.body.secret });
    expect(me.status).toBe(200);
    expect(me.body).toEqual({
      id: api_key.id,
      name: 'deployer',
      key_prefix: res.body.secret.slice(0, 12),
      org_id: orgId,
      scopes: [{ resource_type: 'namespace', resource_id: namespaceId, role: 'admin' }],
      sharing_group_ids: [],
      expires_at: null,
    });
  });

  test('the secret is shown once: get and list carry only its prefix', async () => {
    const created = await createKey({ scopes: [{ resource_type: 'org', resource_id: orgId, role: 'member' }] });
    const got = await svc.api('GET', `/api_keys/${created.body.api_key.id}`);
    const listed = await svc.api('GET', '/api_keys');
    expect(got.body).toEqual(created.body.api_key);
    expect(JSON.stringify(got.body)).not.toContain(created.body.secret);
    expect(JSON.stringify(listed.body)).not.toContain(created.body.secret);
    expect(got.body).not.toHaveProperty('key');
  });

  test('scopes may name resources by slug or namespace/name; they are stored by id, duplicates folded', async () => {
    const res = await createKey({
      scopes: [
        { resource_type: 'namespace', resource_id: 'default', role: 'admin' },
        { resource_type: 'namespace', resource_id: namespaceId, role: 'admin' },
        { resource_type: 'org', resource_id: 'default', role: 'member' },
      ],
    });
    expect(res.status).toBe(201);
    expect(res.body.api_key.scopes).toEqual([
      { resource_type: 'namespace', resource_id: namespaceId, role: 'admin' },
      { resource_type: 'org', resource_id: orgId, role: 'member' },
    ]);
  });

  test('executor is stored as viewer with the legacy role kept', async () => {
    const agent = await deploy(svc, { agent: 'bot' });
    const res = await createKey({ scopes: [{ resource_type: 'agent', resource_id: 'default/bot', role: 'executor' }] });
    expect(res.status).toBe(201);
    expect(res.body.api_key.scopes).toEqual([{ resource_type: 'agent', resource_id: agent.agent_id, role: 'viewer' }]);
    const stored = await svc.store.db.selectFrom('grants').select(['role', 'legacy_role', 'source']).where('principal_id', '=', res.body.api_key.id).execute();
    expect(stored).toEqual([{ role: 'viewer', legacy_role: 'executor', source: 'scope' }]);
  });

  test('sharing groups: the key joins each group named at creation', async () => {
    const group = await newGroup('platform');
    const res = await createKey({ scopes: [{ resource_type: 'org', resource_id: orgId, role: 'member' }], sharing_group_ids: [group.id] });
    expect(res.body.api_key.sharing_group_ids).toEqual([group.id]);
    const members = await svc.api('GET', `/groups/${group.id}/members`);
    expect(members.body.members.map((m: { member_id: string; name: string }) => [m.member_id, m.name])).toEqual([[res.body.api_key.id, 'ci']]);
  });

  test('expires_at in the future is kept; the key is refused once it has passed', async () => {
    const soon = new Date(Date.now() + 1500).toISOString();
    const res = await createKey({ scopes: [{ resource_type: 'org', resource_id: orgId, role: 'member' }], expires_at: soon });
    expect(res.body.api_key.expires_at).toBe(soon);
    expect((await svc.api('GET', '/whoami', { key: res.body.secret })).body.expires_at).toBe(soon);
    await new Promise((resolve) => setTimeout(resolve, 1600));
    const after = await svc.api('GET', '/whoami', { key: res.body.secret });
    expect(after.status).toBe(401);
    expect(after.headers.get('www-authenticate')).toBe('Bearer');
    expect(after.body).toEqual({ detail: 'API key has expired', code: 'unauthorized' });
  });

  test('GET /api_keys lists live keys newest first; include_revoked adds the revoked', async () => {
    const a = await createKey({ name: 'a', scopes: [{ resource_type: 'org', resource_id: orgId, role: 'member' }] });
    await createKey({ name: 'b', scopes: [{ resource_type: 'org', resource_id: orgId, role: 'member' }] });
    await revoke(a.body.api_key.id);
    const live = await svc.api('GET', '/api_keys');
    expect(live.body.api_keys.map((k: { name: string }) => k.name)).toEqual(['b', 'bootstrap']);
    expect(live.body.total).toBe(2);
    const all = await svc.api('GET', '/api_keys?include_revoked=true');
    expect(all.body.api_keys.map((k: { name: string }) => k.name)).toEqual(['b', 'a', 'bootstrap']);
    expect(all.body.total).toBe(3);
  });

  test('DELETE /api_keys/{id} revokes at once: 401 on the next request, and the key leaves its groups', async () => {
    const group = await newGroup('platform');
    const created = await createKey({ scopes: [{ resource_type: 'org', resource_id: orgId, role: 'member' }], sharing_group_ids: [group.id] });
    expect((await svc.api('GET', '/whoami', { key: created.body.secret })).status).toBe(200);
    const revoked = await svc.api('DELETE', `/api_keys/${created.body.api_key.id}`);
    expect(revoked.status).toBe(200);
    // The upstream API's {id, message}, beside the record.
    expect(revoked.body).toMatchObject({
      id: created.body.api_key.id,
      name: created.body.api_key.name,
      message: `API key ${created.body.api_key.name} revoked`,
    });
    expect(revoked.body.revoked_at).toMatch(/Z$/);
    expect(revoked.body.sharing_group_ids).toEqual([]);
    const refused = await svc.api('GET', '/whoami', { key: created.body.secret });
    expect(refused.status).toBe(401);
    expect(refused.headers.get('www-authenticate')).toBe('Bearer');
    expect(refused.body).toEqual({ detail: 'API key has been revoked', code: 'unauthorized' });
    expect((await svc.api('GET', `/groups/${group.id}`)).body.member_count).toBe(0);
    // Soft: the record stays, and revoking again answers it unchanged.
    const again = await svc.api('DELETE', `/api_keys/${created.body.api_key.id}`);
    expect(again.status).toBe(200);
    expect(again.body.revoked_at).toBe(revoked.body.revoked_at);
    expect(again.body).toMatchObject({
      id: created.body.api_key.id,
      message: `API key ${created.body.api_key.name} was already revoked at ${revoked.body.revoked_at}`,
    });
  });

  test('PATCH /api_keys/{id} replaces the scopes, effective on the next request', async () => {
    const created = await createKey({ scopes: [{ resource_type: 'org', resource_id: orgId, role: 'member' }] });
    expect((await svc.api('GET', '/namespaces', { key: created.body.secret })).body.total).toBe(1);
    const patched = await svc.api('PATCH', `/api_keys/${created.body.api_key.id}`, {
      body: { scopes: [{ resource_type: 'namespace', resource_id: namespaceId, role: 'admin' }] },
    });
    expect(patched.status).toBe(200);
    expect(patched.body.scopes).toEqual([{ resource_type: 'namespace', resource_id: namespaceId, role: 'admin' }]);
    await svc.client().createNamespace({ body: { name: 'Other', slug: 'other' } });
    // A namespace admin of `default` does not see `other`, which an org member would.
    const seen = await svc.api('GET', '/namespaces', { key: created.body.secret });
    expect(seen.body.namespaces.map((n: { slug: string }) => n.slug)).toEqual(['default']);
  });

  test('PATCH /api_keys/{id}/sharing-groups replaces the memberships', async () => {
    const g1 = await newGroup('one');
    const g2 = await newGroup('two');
    const created = await createKey({ scopes: [{ resource_type: 'org', resource_id: orgId, role: 'member' }], sharing_group_ids: [g1.id] });
    const patched = await svc.api('PATCH', `/api_keys/${created.body.api_key.id}/sharing-groups`, { body: { sharing_group_ids: [g2.id] } });
    expect(patched.status).toBe(200);
    expect(patched.body.sharing_group_ids).toEqual([g2.id]);
    expect((await svc.api('GET', '/whoami', { key: created.body.secret })).body.sharing_group_ids).toEqual([g2.id]);
    const cleared = await svc.api('PATCH', `/api_keys/${created.body.api_key.id}/sharing-groups`, { body: { sharing_group_ids: [] } });
    expect(cleared.body.sharing_group_ids).toEqual([]);
  });

  test('POST /api_keys/{id}/rotate issues a new secret for the same key; the old one stops at once', async () => {
    const created = await createKey({ scopes: [{ resource_type: 'org', resource_id: orgId, role: 'member' }] });
    const rotated = await svc.api('POST', `/api_keys/${created.body.api_key.id}/rotate`);
    expect(rotated.status).toBe(200);
    expect(rotated.body.secret).toMatch(KEY_FORMAT);
    expect(rotated.body.secret).not.toBe(created.body.secret);
    expect(rotated.body.api_key).toMatchObject({
      id: created.body.api_key.id,
      scopes: created.body.api_key.scopes,
      key_prefix: rotated.body.secret.slice(0, 12),
    });
    const old = await svc.api('GET', '/whoami', { key: created.body.secret });
    expect(old.status).toBe(401);
    expect(old.headers.get('www-authenticate')).toBe('Bearer');
    expect((await svc.api('GET', '/whoami', { key: rotated.body.secret })).body.id).toBe(created.body.api_key.id);
  });

  test('a revoked key cannot be rotated or changed (409 key_revoked)', async () => {
    const created = await createKey({ scopes: [{ resource_type: 'org', resource_id: orgId, role: 'member' }] });
    await revoke(created.body.api_key.id);
    const detail = `API key ci (${created.body.api_key.id}) has been revoked`;
    expect((await svc.api('POST', `/api_keys/${created.body.api_key.id}/rotate`)).body).toEqual({ detail, code: 'key_revoked' });
    const patch = await svc.api('PATCH', `/api_keys/${created.body.api_key.id}`, {
      body: { scopes: [{ resource_type: 'org', resource_id: orgId, role: 'member' }] },
    });
    expect([patch.status, patch.body]).toEqual([409, { detail, code: 'key_revoked' }]);
  });

  test('the org keeps at least one org-admin key (409 last_org_admin)', async () => {
    const me = await svc.api('GET', '/whoami');
    const detail = `API key bootstrap (${me.body.id}) is the org's last org-admin key; create another org-admin key first`;
    const revoke = await svc.api('DELETE', `/api_keys/${me.body.id}`);
    expect([revoke.status, revoke.body]).toEqual([409, { detail, code: 'last_org_admin' }]);
    const demote = await svc.api('PATCH', `/api_keys/${me.body.id}`, { body: { scopes: [{ resource_type: 'org', resource_id: orgId, role: 'member' }] } });
    expect([demote.status, demote.body]).toEqual([409, { detail, code: 'last_org_admin' }]);
    const second = await createKey({ name: 'admin-2', scopes: [{ resource_type: 'org', resource_id: orgId, role: 'admin' }] });
    expect((await svc.api('DELETE', `/api_keys/${me.body.id}`)).status).toBe(200);
    expect((await svc.api('GET', '/api_keys', { key: second.body.secret })).body.total).toBe(1);
  });

  test('GET /api_keys/presets: the spec’s four presets, for any valid key', async () => {
    const res = await svc.api('GET', '/api_keys/presets', { key: await memberKey() });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ presets: PRESETS });
    expect(
      res.body.presets.map((p: { id: string; name: string; use: string; scopes: { resource_type: string; role: string }[] }) => [
        p.id,
        p.name,
        p.use,
        p.scopes.map((s) => `${s.resource_type}:${s.role}`),
      ]),
    ).toEqual([
      ['deploy', 'Deploy', 'CI/CD and deployments', ['namespace:admin', 'agent:editor', 'project:editor']],
      ['read-only', 'Read-Only', 'Monitoring, dashboards', ['agent:viewer', 'project:viewer']],
      ['agent-runner', 'Agent Runner', 'Run tasks, manage files', ['agent:viewer', 'project:editor']],
      ['custom', 'Custom', 'Manual scope configuration', []],
    ]);
    // The spec's role table: an agent viewer may run tasks, and the Read-Only preset says so.
    expect(res.body.presets[1].description).toContain('agent viewers can also run tasks');
    expect((await svc.api('GET', '/api_keys/presets', { key: null })).status).toBe(401);
  });

  test('only org admins manage keys: 403 for any other key on every key endpoint', async () => {
    const key = await memberKey();
    const target = (await svc.client().whoami()).id;
    const forbidden = { detail: 'Only org admins may manage API keys', code: 'forbidden' };
    const calls: [string, string, unknown?][] = [
      ['POST', '/api_keys', { name: 'x', scopes: [{ resource_type: 'org', resource_id: orgId, role: 'member' }] }],
      ['GET', '/api_keys'],
      ['GET', `/api_keys/${target}`],
      ['DELETE', `/api_keys/${target}`],
      ['PATCH', `/api_keys/${target}`, { scopes: [{ resource_type: 'org', resource_id: orgId, role: 'member' }] }],
      ['PATCH', `/api_keys/${target}/sharing-groups`, { sharing_group_ids: [] }],
      ['POST', `/api_keys/${target}/rotate`],
    ];
    for (const [method, path, body] of calls) {
      const res = await svc.api(method, path, { key, body });
      expect([method, path, res.status, res.body]).toEqual([method, path, 403, forbidden]);
    }
  });

  test('an unknown key id is 404', async () => {
    for (const [method, path] of [
      ['GET', '/api_keys/key_nope'],
      ['DELETE', '/api_keys/key_nope'],
      ['POST', '/api_keys/key_nope/rotate'],
    ]) {
      const res = await svc.api(method, path);
      expect([res.status, res.body]).toEqual([404, { detail: 'API key key_nope was not found', code: 'not_found' }]);
    }
  });

  describe('bad input: 422 in the spec’s shape', () => {
    test('a role the resource type does not have, naming the scope', async () => {
      const res = await createKey({
        scopes: [
          { resource_type: 'org', resource_id: orgId, role: 'member' },
          { resource_type: 'namespace', resource_id: namespaceId, role: 'viewer' },
        ],
      });
      expectValidation(res, [
        { loc: ['body', 'scopes', 1, 'role'], msg: 'Role viewer is not valid for resource type namespace; valid roles: admin', type: 'invalid_role' },
      ]);
    });

    test('executor on a project, owner on an org, admin on an agent', async () => {
      const res = await createKey({
        scopes: [
          { resource_type: 'project', resource_id: 'prj_x', role: 'executor' },
          { resource_type: 'org', resource_id: orgId, role: 'owner' },
          { resource_type: 'agent', resource_id: 'agt_x', role: 'admin' },
        ],
      });
      expectValidation(res, [
        { loc: ['body', 'scopes', 0, 'role'], msg: 'Role executor is not valid for resource type project; valid roles: discoverer, viewer, editor, owner' },
        { loc: ['body', 'scopes', 1, 'role'], msg: 'Role owner is not valid for resource type org; valid roles: admin, member' },
        {
          loc: ['body', 'scopes', 2, 'role'],
          msg: 'Role admin is not valid for resource type agent; valid roles: discoverer, viewer, editor, owner, executor',
        },
      ]);
    });

    test('an unknown role and an unknown resource type', async () => {
      const res = await createKey({
        scopes: [
          { resource_type: 'cluster', resource_id: 'c1', role: 'admin' },
          { resource_type: 'org', resource_id: orgId, role: 'superuser' },
        ],
      });
      expectValidation(res, [
        { loc: ['body', 'scopes', 0, 'resource_type'], type: 'invalid_value' },
        { loc: ['body', 'scopes', 1, 'role'], type: 'invalid_value' },
      ]);
    });

    test('a resource id that names nothing in the org', async () => {
      const res = await createKey({
        scopes: [
          { resource_type: 'namespace', resource_id: 'ns_01NOPE', role: 'admin' },
          { resource_type: 'agent', resource_id: 'default/ghost', role: 'viewer' },
          { resource_type: 'project', resource_id: 'prj_01NOPE', role: 'viewer' },
          { resource_type: 'org', resource_id: 'org_01NOPE', role: 'member' },
        ],
      });
      expectValidation(res, [
        { loc: ['body', 'scopes', 0, 'resource_id'], msg: 'No namespace ns_01NOPE in this org', type: 'unknown_resource' },
        { loc: ['body', 'scopes', 1, 'resource_id'], msg: 'No agent default/ghost in this org', type: 'unknown_resource' },
        { loc: ['body', 'scopes', 2, 'resource_id'], msg: 'No project prj_01NOPE in this org', type: 'unknown_resource' },
        { loc: ['body', 'scopes', 3, 'resource_id'], msg: 'No org org_01NOPE in this org', type: 'unknown_resource' },
      ]);
      expect((await svc.api('GET', '/api_keys')).body.total).toBe(1);
    });

    test('empty scopes, a missing name and an oversize name', async () => {
      expectValidation(await createKey({ scopes: [] }), [{ loc: ['body', 'scopes'], type: 'too_small' }]);
      expectValidation(await svc.api('POST', '/api_keys', { body: { scopes: [{ resource_type: 'org', resource_id: orgId, role: 'member' }] } }), [
        { loc: ['body', 'name'], msg: 'Field required', type: 'missing' },
      ]);
      expectValidation(await createKey({ name: 'n'.repeat(101), scopes: [{ resource_type: 'org', resource_id: orgId, role: 'member' }] }), [
        { loc: ['body', 'name'], type: 'too_big' },
      ]);
    });

    test('an unknown sharing group', async () => {
      const res = await createKey({ scopes: [{ resource_type: 'org', resource_id: orgId, role: 'member' }], sharing_group_ids: ['grp_01NOPE'] });
      expectValidation(res, [{ loc: ['body', 'sharing_group_ids', 0], msg: 'No sharing group grp_01NOPE in this org', type: 'unknown_resource' }]);
    });

    test('an expiry that is not a date-time, or is past', async () => {
      const scopes = [{ resource_type: 'org', resource_id: orgId, role: 'member' }];
      expectValidation(await createKey({ scopes, expires_at: 'tomorrow' }), [{ loc: ['body', 'expires_at'], type: 'datetime_parsing' }]);
      expectValidation(await createKey({ scopes, expires_at: '2001-01-01T00:00:00Z' }), [
        { loc: ['body', 'expires_at'], msg: 'The expiry must be in the future', type: 'datetime_past' },
      ]);
    });

    test('malformed JSON and wrong types', async () => {
      expectValidation(await svc.api('POST', '/api_keys', { rawBody: '{"name":' }), [{ loc: ['body'], type: 'json_invalid' }]);
      expectValidation(await svc.api('POST', '/api_keys', { body: { name: 7, scopes: 'all' } }), [{ loc: ['body', 'name'] }, { loc: ['body', 'scopes'] }]);
    });

    test('PATCH with an invalid scope changes nothing', async () => {
      const created = await createKey({ scopes: [{ resource_type: 'org', resource_id: orgId, role: 'member' }] });
      const res = await svc.api('PATCH', `/api_keys/${created.body.api_key.id}`, {
        body: { scopes: [{ resource_type: 'agent', resource_id: 'agt_nope', role: 'viewer' }] },
      });
      expectValidation(res, [{ loc: ['body', 'scopes', 0, 'resource_id'], msg: 'No agent agt_nope in this org' }]);
      expect((await svc.api('GET', `/api_keys/${created.body.api_key.id}`)).body.scopes).toEqual(created.body.api_key.scopes);
    });
  });
});
