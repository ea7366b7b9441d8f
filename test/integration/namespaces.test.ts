import { describe, expect, test } from 'vitest';
import { Namespace, Project } from '../../src/contract/resources.js';
import { accessChanged } from '../../src/server/auth/invalidation.js';
import type { EndpointInput } from '../../src/contract/endpoints.js';
import { engines, useService } from '../support/service.js';
import { deploy } from '../support/fixtures.js';
import { defaultNamespaceId, orgId, scopedKey } from '../support/scoped-key.js';
import { expectError, expectInvalid, expectMalformed, expectOversize, MALFORMED_JSON, OVERSIZE_BODY } from '../support/bad-input.js';

describe.each(engines)('namespaces and projects (%s)', (engine) => {
  const svc = useService(engine);

  const createNamespace = (body: unknown, key?: string) => svc.api('POST', '/namespaces', { body, key });
  const createProject = (body: unknown, key?: string) => svc.api('POST', '/projects', { body, key });
  /** Setup: through the typed client. */
  const newNamespace = (name: string, slug: string) => svc.client().createNamespace({ body: { name, slug } });
  const newProject = (body: EndpointInput<'createProject'>['body'], key?: string) => svc.client(key).createProject({ body });

  describe('POST /namespaces', () => {
    test('an org admin creates a namespace in its org: 201 with the record', async () => {
      const res = await createNamespace({ name: 'Payments team', slug: 'payments' });
      expect(res.status).toBe(201);
      const ns = Namespace.parse(res.body);
      const adminKeyId = (await svc.client().whoami()).id;
      expect(ns).toMatchObject({ name: 'Payments team', slug: 'payments', org_id: await orgId(svc), owner_org_id: await orgId(svc), created_by: adminKeyId });
      expect(ns.id).toMatch(/^ns_[0-9A-Z]{26}$/);
      expect(ns.created_at).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
    });

    test('owner_org_id is the org; created_by the creating key, null for the namespace made at first start', async () => {
      const client = svc.client();
      const made = await client.createNamespace({ body: { name: 'Team', slug: 'team' } });
      const listed = await client.listNamespaces({ query: { order_direction: 'asc' } });
      expect(listed.namespaces.map((n) => [n.slug, n.owner_org_id, n.created_by])).toEqual([
        ['default', await orgId(svc), null],
        ['team', await orgId(svc), (await client.whoami()).id],
      ]);
      expect(listed.namespaces[1]).toEqual(made);
    });

    test('a slug already taken is 409 namespace_exists', async () => {
      await newNamespace('One', 'payments');
      expectError(await createNamespace({ name: 'Two', slug: 'payments' }), 409, 'namespace_exists', 'A namespace with slug payments already exists');
    });

    test('only org admins may create namespaces: a namespace admin and an org member get 403', async () => {
      const nsAdmin = await scopedKey(svc, [{ resource_type: 'namespace', resource_id: await defaultNamespaceId(svc), role: 'admin' }]);
      const member = await scopedKey(svc, [{ resource_type: 'org', resource_id: await orgId(svc), role: 'member' }]);
      for (const key of [nsAdmin, member]) {
        expectError(await createNamespace({ name: 'X', slug: 'xyz' }, key), 403, 'forbidden', 'Only org admins may create namespaces');
      }
    });

    test('slugs outside 3..63 characters of [a-z0-9-] are 422 at body.slug', async () => {
      for (const slug of ['ab', 'Payments', '-abc', 'abc-', 'a_b_c', 'x'.repeat(64)]) {
        expectInvalid(await createNamespace({ name: 'X', slug }), ['body', 'slug']);
      }
    });

    test('the slug `name` is reserved (it would shadow /agents/name/{ns}/{agent}): 422', async () => {
      const res = await createNamespace({ name: 'Name', slug: 'name' });
      expectInvalid(res, ['body', 'slug'], 'value_error');
      expect(res.body.detail[0].msg).toBe('name is reserved: /agents/name/... addresses agents by name');
    });

    test('bad bodies: malformed JSON, wrong types, missing fields, oversize', async () => {
      expectMalformed(await svc.api('POST', '/namespaces', { rawBody: MALFORMED_JSON }));
      expectInvalid(await createNamespace({ name: 42, slug: 'payments' }), ['body', 'name'], 'invalid_type');
      expectInvalid(await createNamespace({ name: 'X' }), ['body', 'slug'], 'missing');
      expectInvalid(await createNamespace([]), ['body'], 'invalid_type');
      expectOversize(await svc.api('POST', '/namespaces', { rawBody: OVERSIZE_BODY }));
    });

    test('without a key: 401', async () => {
      expectError(await createNamespace({ name: 'X', slug: 'xyz' }, null as unknown as string), 401, 'unauthorized');
    });
  });

  describe('GET /namespaces', () => {
    test('an org admin sees every namespace of the org, newest first by default', async () => {
      await newNamespace('A', 'aaa');
      await newNamespace('B', 'bbb');
      const res = await svc.api('GET', '/namespaces');
      expect(res.status).toBe(200);
      expect(res.body.total).toBe(3);
      expect(res.body.namespaces.map((n: Namespace) => n.slug)).toEqual(['bbb', 'aaa', 'default']);
      const asc = await svc.api('GET', '/namespaces?order_direction=asc');
      expect(asc.body.namespaces.map((n: Namespace) => n.slug)).toEqual(['default', 'aaa', 'bbb']);
    });

    test('limit and page_number page the list; total is the whole list', async () => {
      for (const slug of ['aaa', 'bbb', 'ccc']) await newNamespace(slug, slug);
      const page2 = await svc.api('GET', '/namespaces?limit=2&page_number=2&order_direction=asc');
      expect(page2.body).toMatchObject({ total: 4 });
      expect(page2.body.namespaces.map((n: Namespace) => n.slug)).toEqual(['bbb', 'ccc']);
    });

    test('a key sees only the namespaces it can discover', async () => {
      const other = await newNamespace('Other', 'other');
      await newNamespace('Hidden', 'hidden');
      const nsAdmin = await scopedKey(svc, [{ resource_type: 'namespace', resource_id: other.id, role: 'admin' }]);
      const res = await svc.api('GET', '/namespaces', { key: nsAdmin });
      expect(res.body).toMatchObject({ total: 1, namespaces: [{ slug: 'other' }] });
      const nothing = await scopedKey(svc, []);
      expect((await svc.api('GET', '/namespaces', { key: nothing })).body).toEqual({ namespaces: [], total: 0 });
    });

    test('a key holding a role on an agent discovers that agent’s namespace', async () => {
      const { agent_id } = await deploy(svc);
      const viewer = await scopedKey(svc, [{ resource_type: 'agent', resource_id: agent_id, role: 'viewer' }]);
      const res = await svc.api('GET', '/namespaces', { key: viewer });
      expect(res.body.namespaces.map((n: Namespace) => n.slug)).toEqual(['default']);
    });

    test('bad paging parameters are 422 at their query field', async () => {
      expectInvalid(await svc.api('GET', '/namespaces?limit=0'), ['query', 'limit']);
      expectInvalid(await svc.api('GET', '/namespaces?page_number=zero'), ['query', 'page_number']);
      expectInvalid(await svc.api('GET', '/namespaces?order_direction=sideways'), ['query', 'order_direction']);
    });
  });

  describe('POST /projects', () => {
    test('an org admin creates a project in the default namespace: 201', async () => {
      const res = await createProject({ name: 'docs', description: 'Shared documents' });
      expect(res.status).toBe(201);
      const project = Project.parse(res.body);
      expect(project).toMatchObject({ name: 'docs', description: 'Shared documents', namespace_id: await defaultNamespaceId(svc) });
      expect(project.id).toMatch(/^prj_/);
    });

    test('a namespace admin may create projects in its namespace, and owns them', async () => {
      const nsId = await defaultNamespaceId(svc);
      const nsAdmin = await scopedKey(svc, [{ resource_type: 'namespace', resource_id: nsId, role: 'admin' }]);
      const project = (await createProject({ name: 'docs' }, nsAdmin)).body;
      expect(project.namespace_id).toBe(nsId);
      // Take the namespace role away: the owner grant made at creation still reaches the project.
      await svc.store.db.deleteFrom('grants').where('resource_type', '=', 'namespace').where('resource_id', '=', nsId).execute();
      accessChanged(svc.store.db);
      const list = await svc.api('GET', '/projects', { key: nsAdmin });
      expect(list.body).toMatchObject({ total: 1, projects: [{ id: project.id }] });
    });

    test('a project name taken in the namespace is 409 project_exists; another namespace may reuse it', async () => {
      await newProject({ name: 'docs' });
      expectError(await createProject({ name: 'docs' }), 409, 'project_exists', 'Namespace default already has a project named docs');
      await newNamespace('Other', 'other');
      expect((await createProject({ namespace: 'other', name: 'docs' })).status).toBe(201);
    });

    test('an org member may see the namespace but not create in it: 403', async () => {
      const member = await scopedKey(svc, [{ resource_type: 'org', resource_id: await orgId(svc), role: 'member' }]);
      expectError(await createProject({ name: 'docs' }, member), 403, 'forbidden', 'This API key may not admin Namespace default');
    });

    test('a key that cannot discover the namespace gets 404, as for an unknown one', async () => {
      const nothing = await scopedKey(svc, []);
      expectError(await createProject({ name: 'docs' }, nothing), 404, 'not_found', 'Namespace default was not found');
      expectError(await createProject({ namespace: 'nowhere', name: 'docs' }), 404, 'not_found', 'Namespace nowhere was not found');
    });

    test('bad bodies: malformed JSON, wrong types, missing fields, bad names, oversize', async () => {
      expectMalformed(await svc.api('POST', '/projects', { rawBody: MALFORMED_JSON }));
      expectInvalid(await createProject({ name: 'docs', description: 7 }), ['body', 'description'], 'invalid_type');
      expectInvalid(await createProject({}), ['body', 'name'], 'missing');
      expectInvalid(await createProject({ name: 'Has Spaces' }), ['body', 'name']);
      expectOversize(await svc.api('POST', '/projects', { rawBody: OVERSIZE_BODY }));
    });
  });

  describe('GET /projects', () => {
    test('lists the projects a key can discover, filtered by namespace slug', async () => {
      await newNamespace('Other', 'other');
      const a = await newProject({ name: 'alpha' });
      const b = await newProject({ namespace: 'other', name: 'beta' });
      expect((await svc.api('GET', '/projects')).body).toMatchObject({ total: 2, projects: [{ id: b.id }, { id: a.id }] });
      expect((await svc.api('GET', '/projects?namespace=other')).body).toMatchObject({ total: 1, projects: [{ id: b.id }] });
      const viewer = await scopedKey(svc, [{ resource_type: 'project', resource_id: a.id, role: 'viewer' }]);
      expect((await svc.api('GET', '/projects', { key: viewer })).body).toMatchObject({ total: 1, projects: [{ id: a.id }] });
    });

    test('an unknown namespace filter, or one the key cannot see into, is 404', async () => {
      expectError(await svc.api('GET', '/projects?namespace=nowhere'), 404, 'not_found', 'Namespace nowhere was not found');
      await newNamespace('Other', 'other');
      const nothing = await scopedKey(svc, []);
      expectError(await svc.api('GET', '/projects?namespace=other', { key: nothing }), 404, 'not_found', 'Namespace other was not found');
    });

    test('bad query parameters are 422 at their field', async () => {
      expectInvalid(await svc.api('GET', '/projects?limit=0'), ['query', 'limit']);
      expectInvalid(await svc.api('GET', '/projects?order_direction=up'), ['query', 'order_direction']);
    });

    test('an org member pages the list in the database: total counts every project', async () => {
      for (const name of ['p1', 'p2', 'p3']) await newProject({ name });
      const member = await scopedKey(svc, [{ resource_type: 'org', resource_id: await orgId(svc), role: 'member' }]);
      const res = await svc.api('GET', '/projects?limit=1&page_number=2', { key: member });
      expect(res.body).toMatchObject({ total: 3, projects: [{ name: 'p2' }] });
    });
  });
});
