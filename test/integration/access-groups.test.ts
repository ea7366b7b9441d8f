import { beforeEach, describe, expect, test } from 'vitest';
import { engines, useService } from '../support/service.js';

/** Sharing groups: org admins manage them; members see their own groups; org members see all. */

describe.each(engines)('sharing groups (%s)', (engine) => {
  const svc = useService(engine);
  let orgId: string;
  let namespaceId: string;

  beforeEach(async () => {
    orgId = (await svc.client().whoami()).org_id;
    namespaceId = (await svc.client().listNamespaces()).namespaces[0].id;
  });

  const newGroup = (name: string) => svc.client().createGroup({ body: { name } });
  /** A key whose only scope is admin on the default namespace, in `groups`. */
  const nsAdminKey = (name: string, groups: string[] = []) =>
    svc.client().createKey({ body: { name, scopes: [{ resource_type: 'namespace', resource_id: namespaceId, role: 'admin' }], sharing_group_ids: groups } });

  test('POST /groups answers 201 with the group', async () => {
    const res = await svc.api('POST', '/groups', { body: { name: 'platform', description: 'The platform team' } });
    expect(res.status).toBe(201);
    const adminKeyId = (await svc.client().whoami()).id;
    expect(res.body).toMatchObject({
      org_id: orgId,
      owner_org_id: orgId,
      created_by: adminKeyId,
      name: 'platform',
      description: 'The platform team',
      member_count: 0,
    });
    expect(res.body.id).toMatch(/^grp_[0-9A-Z]{26}$/);
    expect(res.body.created_at).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
    expect((await svc.api('GET', `/groups/${res.body.id}`)).body).toEqual(res.body);
  });

  test('a second group with the same name is 409 group_exists', async () => {
    await newGroup('platform');
    const res = await svc.api('POST', '/groups', { body: { name: 'platform' } });
    expect([res.status, res.body]).toEqual([409, { detail: 'A sharing group named platform already exists', code: 'group_exists' }]);
  });

  test('GET /groups lists the org’s groups newest first, with member counts', async () => {
    const a = await newGroup('a');
    const b = await newGroup('b');
    await nsAdminKey('k1', [a.id]);
    await nsAdminKey('k2', [a.id, b.id]);
    const res = await svc.api('GET', '/groups');
    expect(res.body.total).toBe(2);
    expect(res.body.groups.map((g: { name: string; member_count: number }) => [g.name, g.member_count])).toEqual([
      ['b', 1],
      ['a', 2],
    ]);
  });

  test('GET /groups pages with limit and page_number (total counts them all) in order_direction', async () => {
    const client = svc.client();
    const [a, b, c] = [await newGroup('a'), await newGroup('b'), await newGroup('c')].map((group) => group.id);
    const page = async (query: { limit?: number; page_number?: number; order_direction?: 'asc' | 'desc' }) => {
      const listed = await client.listGroups({ query });
      return [listed.groups.map((g) => g.id), listed.total];
    };
    expect(await page({ limit: 2 })).toEqual([[c, b], 3]);
    expect(await page({ limit: 2, page_number: 2 })).toEqual([[a], 3]);
    expect(await page({ order_direction: 'asc' })).toEqual([[a, b, c], 3]);
    // A key that is not an org member pages through its own groups only.
    const k = await nsAdminKey('two-groups', [a, c]);
    expect((await svc.client(k.secret).listGroups({ query: { limit: 1, page_number: 2 } })).groups.map((g) => g.id)).toEqual([a]);
    expect((await svc.client(k.secret).listGroups({ query: { limit: 1 } })).total).toBe(2);
    const bad = await svc.api('GET', '/groups?limit=0&page_number=x');
    expect(bad.body.detail.map((d: { loc: unknown }) => d.loc)).toEqual([
      ['query', 'limit'],
      ['query', 'page_number'],
    ]);
  });

  test('PUT /groups/{id}/members/{key_id} adds a key, idempotently; DELETE removes it', async () => {
    const group = await newGroup('platform');
    const k = await nsAdminKey('runner');
    const added = await svc.api('PUT', `/groups/${group.id}/members/${k.api_key.id}`);
    expect(added.status).toBe(200);
    expect(added.body).toMatchObject({ group_id: group.id, member_id: k.api_key.id, name: 'runner' });
    const again = await svc.api('PUT', `/groups/${group.id}/members/${k.api_key.id}`);
    expect(again.body).toEqual(added.body);
    expect((await svc.api('GET', `/groups/${group.id}/members`)).body).toEqual({ members: [added.body], total: 1 });
    expect((await svc.client(k.secret).whoami()).sharing_group_ids).toEqual([group.id]);
    const removed = await svc.api('DELETE', `/groups/${group.id}/members/${k.api_key.id}`);
    expect(removed.body).toEqual({ id: k.api_key.id, message: `API key ${k.api_key.id} removed from sharing group platform` });
    expect((await svc.api('GET', `/groups/${group.id}/members`)).body).toEqual({ members: [], total: 0 });
    const twice = await svc.api('DELETE', `/groups/${group.id}/members/${k.api_key.id}`);
    expect([twice.status, twice.body]).toEqual([404, { detail: `API key ${k.api_key.id} is not a member of sharing group platform`, code: 'not_found' }]);
  });

  test('adding an unknown key is 404; a revoked key is 409', async () => {
    const group = await newGroup('platform');
    const unknown = await svc.api('PUT', `/groups/${group.id}/members/key_nope`);
    expect([unknown.status, unknown.body]).toEqual([404, { detail: 'API key key_nope was not found', code: 'not_found' }]);
    const k = await nsAdminKey('gone');
    await svc.client().revokeKey({ params: { key_id: k.api_key.id } });
    const revoked = await svc.api('PUT', `/groups/${group.id}/members/${k.api_key.id}`);
    expect([revoked.status, revoked.body]).toEqual([409, { detail: `API key gone (${k.api_key.id}) has been revoked`, code: 'key_revoked' }]);
  });

  test('DELETE /groups/{id} removes the group and its memberships', async () => {
    const group = await newGroup('platform');
    const k = await nsAdminKey('member', [group.id]);
    const res = await svc.api('DELETE', `/groups/${group.id}`);
    expect(res.body).toEqual({ id: group.id, message: 'Sharing group platform deleted' });
    expect((await svc.api('GET', `/groups/${group.id}`)).status).toBe(404);
    expect((await svc.client(k.secret).whoami()).sharing_group_ids).toEqual([]);
  });

  test('a key outside the group that is not an org member cannot see it (404); a member sees it but cannot change it (403)', async () => {
    const group = await newGroup('platform');
    const member = await nsAdminKey('member', [group.id]);
    const outsider = await nsAdminKey('outsider');
    const notFound = { detail: `Group ${group.id} was not found`, code: 'not_found' };
    for (const [method, path] of [
      ['GET', `/groups/${group.id}`],
      ['GET', `/groups/${group.id}/members`],
      ['DELETE', `/groups/${group.id}`],
      ['PUT', `/groups/${group.id}/members/${outsider.api_key.id}`],
    ]) {
      const res = await svc.api(method, path, { key: outsider.secret });
      expect([method, path, res.status, res.body]).toEqual([method, path, 404, notFound]);
    }
    expect((await svc.api('GET', '/groups', { key: outsider.secret })).body).toEqual({ groups: [], total: 0 });

    expect((await svc.api('GET', '/groups', { key: member.secret })).body.groups.map((g: { id: string }) => g.id)).toEqual([group.id]);
    expect((await svc.api('GET', `/groups/${group.id}/members`, { key: member.secret })).body.total).toBe(1);
    const forbidden = { detail: 'Only org admins may manage sharing groups', code: 'forbidden' };
    for (const [method, path] of [
      ['DELETE', `/groups/${group.id}`],
      ['PUT', `/groups/${group.id}/members/${outsider.api_key.id}`],
      ['DELETE', `/groups/${group.id}/members/${member.api_key.id}`],
    ]) {
      const res = await svc.api(method, path, { key: member.secret });
      expect([method, path, res.status, res.body]).toEqual([method, path, 403, forbidden]);
    }
    const create = await svc.api('POST', '/groups', { key: member.secret, body: { name: 'mine' } });
    expect([create.status, create.body]).toEqual([403, forbidden]);
  });

  test('an org member sees every group of the org', async () => {
    await newGroup('a');
    await newGroup('b');
    const member = await svc.client().createKey({ body: { name: 'm', scopes: [{ resource_type: 'org', resource_id: orgId, role: 'member' }] } });
    expect((await svc.api('GET', '/groups', { key: member.secret })).body.total).toBe(2);
  });

  test('bad input: a missing or oversize name is 422', async () => {
    const missing = await svc.api('POST', '/groups', { body: {} });
    expect([missing.status, missing.body]).toEqual([422, { detail: [{ loc: ['body', 'name'], msg: 'Field required', type: 'missing' }] }]);
    const long = await svc.api('POST', '/groups', { body: { name: 'g'.repeat(101) } });
    expect(long.status).toBe(422);
    expect(long.body.detail.map((d: { loc: unknown; type: string }) => [d.loc, d.type])).toEqual([[['body', 'name'], 'too_big']]);
  });
});
