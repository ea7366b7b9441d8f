import { describe, expect, test } from 'vitest';
import { ROLES_BY_RESOURCE_TYPE, type ResourceType } from '../../src/contract/common.js';
import { PERMISSIONS, Permissions, type Grant, type Permission, type ResourceRef } from '../../src/server/auth/policy.js';
import { ApiError } from '../../src/server/errors.js';

/**
 * The permission matrix: every role of the spec's table, on a resource inside its scope and on
 * resources outside it, for each of the five permissions. The expectations are written out here
 * (DESIGN.md section 6), not derived from the policy's own table.
 */

const ORG = 'org_A';
const actor = { keyId: 'key_1', orgId: ORG, name: 'matrix' };

// Namespace A holds the scoped agent and project plus a sibling of each; namespace B holds one more of each.
const resources = {
  org: { type: 'org', id: ORG },
  otherOrg: { type: 'org', id: 'org_B' },
  namespace: { type: 'namespace', id: 'ns_A' },
  otherNamespace: { type: 'namespace', id: 'ns_B' },
  agent: { type: 'agent', id: 'agt_1', namespaceId: 'ns_A' },
  siblingAgent: { type: 'agent', id: 'agt_2', namespaceId: 'ns_A' },
  foreignAgent: { type: 'agent', id: 'agt_3', namespaceId: 'ns_B' },
  project: { type: 'project', id: 'prj_1', namespaceId: 'ns_A' },
  siblingProject: { type: 'project', id: 'prj_2', namespaceId: 'ns_A' },
  foreignProject: { type: 'project', id: 'prj_3', namespaceId: 'ns_B' },
} satisfies Record<string, ResourceRef>;
type ResourceName = keyof typeof resources;

/** Where each resource type's scope points. */
const scopeTarget: Record<ResourceType, string> = { org: ORG, namespace: 'ns_A', agent: 'agt_1', project: 'prj_1' };

const ALL: Permission[] = ['discover', 'read', 'run', 'write', 'admin'];
const everythingInOrg = Object.fromEntries(Object.keys(resources).filter((r) => r !== 'otherOrg').map((r) => [r, ALL]));
const discoverInOrg = Object.fromEntries(Object.keys(resources).filter((r) => r !== 'otherOrg').map((r) => [r, ['discover']]));

/** Expected permissions per resource for each (resource type, role); a resource left out gets none. */
const expected: Record<string, Partial<Record<ResourceName, Permission[]>>> = {
  'org:admin': everythingInOrg,
  'org:member': discoverInOrg,
  'namespace:admin': { namespace: ALL, agent: ALL, siblingAgent: ALL, project: ALL, siblingProject: ALL },
  'agent:discoverer': { agent: ['discover'], namespace: ['discover'] },
  'agent:viewer': { agent: ['discover', 'read', 'run'], namespace: ['discover'] },
  'agent:editor': { agent: ['discover', 'read', 'run', 'write'], namespace: ['discover'] },
  'agent:owner': { agent: ALL, namespace: ['discover'] },
  'agent:executor': { agent: ['discover', 'read', 'run'], namespace: ['discover'] },
  'project:discoverer': { project: ['discover'], namespace: ['discover'] },
  'project:viewer': { project: ['discover', 'read'], namespace: ['discover'] },
  'project:editor': { project: ['discover', 'read', 'run', 'write'], namespace: ['discover'] },
  'project:owner': { project: ALL, namespace: ['discover'] },
};

/** A scope as the keys code stores it: `executor` becomes viewer with the legacy role kept. */
function storedGrant(type: ResourceType, role: string): Grant {
  const id = scopeTarget[type];
  const namespace_id = type === 'agent' || type === 'project' ? 'ns_A' : null;
  return role === 'executor'
    ? { resource_type: type, resource_id: id, role: 'viewer', legacy_role: 'executor', namespace_id }
    : { resource_type: type, resource_id: id, role, legacy_role: null, namespace_id };
}

const matrixOf = (perms: Permissions) =>
  Object.fromEntries(
    (Object.keys(resources) as ResourceName[]).map((name) => [name, PERMISSIONS.filter((p) => perms.can(p, resources[name]))]),
  );

const cases = (Object.keys(ROLES_BY_RESOURCE_TYPE) as ResourceType[]).flatMap((type) => ROLES_BY_RESOURCE_TYPE[type].map((role) => ({ type, role })));

describe('permission matrix from the role table', () => {
  test('every role of the spec’s table has an expectation, and nothing else does', () => {
    expect(cases.map((c) => `${c.type}:${c.role}`).sort()).toEqual(Object.keys(expected).sort());
  });

  test.each(cases)('$type:$role', ({ type, role }) => {
    const perms = new Permissions(actor, [storedGrant(type, role)]);
    const want = Object.fromEntries((Object.keys(resources) as ResourceName[]).map((name) => [name, expected[`${type}:${role}`][name] ?? []]));
    expect(matrixOf(perms)).toEqual(want);
  });

  test('a key with no grants can do nothing', () => {
    const want = Object.fromEntries(Object.keys(resources).map((name) => [name, []]));
    expect(matrixOf(new Permissions(actor, []))).toEqual(want);
  });
});

describe('combining grants', () => {
  test('grants on one resource add up: a group’s owner grant lifts a viewer scope to admin', () => {
    const perms = new Permissions(actor, [storedGrant('agent', 'viewer'), { ...storedGrant('agent', 'owner') }]);
    expect(PERMISSIONS.filter((p) => perms.can(p, resources.agent))).toEqual(ALL);
  });

  test('an executor that is also a discoverer keeps run', () => {
    const perms = new Permissions(actor, [storedGrant('agent', 'discoverer'), storedGrant('agent', 'executor')]);
    expect(perms.can('run', resources.agent)).toBe(true);
    expect(perms.can('write', resources.agent)).toBe(false);
  });

  test('an org grant naming another org is ignored', () => {
    const perms = new Permissions(actor, [{ resource_type: 'org', resource_id: 'org_B', role: 'admin', legacy_role: null }]);
    expect(perms.isOrgAdmin).toBe(false);
    expect(perms.can('discover', resources.agent)).toBe(false);
  });

  test('an unknown role grants nothing', () => {
    const perms = new Permissions(actor, [{ resource_type: 'agent', resource_id: 'agt_1', role: 'superuser', legacy_role: null, namespace_id: 'ns_A' }]);
    expect(PERMISSIONS.filter((p) => perms.can(p, resources.agent))).toEqual([]);
    expect(perms.can('discover', resources.namespace)).toBe(false);
  });
});

describe('require: 404 when undiscoverable, 403 when visible but not allowed', () => {
  const viewer = new Permissions(actor, [storedGrant('agent', 'viewer')]);

  const thrown = (fn: () => void) => {
    try {
      fn();
    } catch (error) {
      return error as ApiError;
    }
    return undefined;
  };

  test('allowed: no error', () => {
    expect(thrown(() => viewer.require('run', resources.agent, 'Agent default/bot'))).toBeUndefined();
  });

  test('visible but not allowed: 403 forbidden naming the permission', () => {
    const error = thrown(() => viewer.require('write', resources.agent, 'Agent default/bot'));
    expect(error).toBeInstanceOf(ApiError);
    expect([error!.status, error!.code, error!.detail]).toEqual([403, 'forbidden', 'This API key may not write Agent default/bot']);
  });

  test('not discoverable: 404 not_found, the same as an unknown id', () => {
    const error = thrown(() => viewer.require('write', resources.foreignAgent, 'Agent other/bot'));
    expect([error!.status, error!.code, error!.detail]).toEqual([404, 'not_found', 'Agent other/bot was not found']);
  });

  test('requireOrgAdmin: 403 for anyone else, nothing for an org admin', () => {
    const error = thrown(() => viewer.requireOrgAdmin('create API keys'));
    expect([error!.status, error!.detail]).toEqual([403, 'Only org admins may create API keys']);
    expect(thrown(() => new Permissions(actor, [storedGrant('org', 'admin')]).requireOrgAdmin('create API keys'))).toBeUndefined();
  });
});

describe('visible(): the same answers in a form SQL can filter on', () => {
  test('org admins and members see every agent', () => {
    expect(new Permissions(actor, [storedGrant('org', 'member')]).visible('agent')).toEqual({ all: true });
    expect(new Permissions(actor, [storedGrant('org', 'admin')]).visible('agent', 'write')).toEqual({ all: true });
  });

  test('a member may discover everything but write nothing', () => {
    expect(new Permissions(actor, [storedGrant('org', 'member')]).visible('agent', 'write')).toEqual({ all: false, namespaceIds: [], ids: [] });
  });

  test('namespace admins see their namespace; scoped keys see the ids they hold the permission on', () => {
    const perms = new Permissions(actor, [storedGrant('namespace', 'admin'), storedGrant('agent', 'discoverer'), { ...storedGrant('project', 'viewer') }]);
    expect(perms.visible('agent')).toEqual({ all: false, namespaceIds: ['ns_A'], ids: ['agt_1'] });
    expect(perms.visible('agent', 'read')).toEqual({ all: false, namespaceIds: ['ns_A'], ids: [] });
    expect(perms.visible('project', 'read')).toEqual({ all: false, namespaceIds: ['ns_A'], ids: ['prj_1'] });
  });
});
