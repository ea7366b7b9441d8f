import { describe, expect, test } from 'vitest';
import { ROLES_BY_RESOURCE_TYPE, type ResourceType } from '../../src/contract/common.js';
import { PERMISSIONS, Permissions } from '../../src/server/auth/policy.js';
import { ApiError, httpErrorOf } from '../../src/server/errors.js';
import { DomainError } from '../../src/server/domain/errors.js';
import { ALL, ORG, expected, resources, storedGrant, type ResourceName } from './policy-matrix.js';

/**
 * The permission matrix: every role of the spec's table, on a resource inside its scope and on
 * resources outside it (a sibling in the same namespace, one in another namespace, another org),
 * for each of the five permissions.
 */

const actor = { keyId: 'key_1', orgId: ORG, name: 'matrix' };

const matrixOf = (perms: Permissions) =>
  Object.fromEntries((Object.keys(resources) as ResourceName[]).map((name) => [name, PERMISSIONS.filter((p) => perms.can(p, resources[name]))]));

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
      // The domain refuses; the HTTP edge decides the status: check both together.
      expect(error).toBeInstanceOf(DomainError);
      return httpErrorOf(error as DomainError);
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
