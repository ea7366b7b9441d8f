import type { ResourceType } from '../../src/contract/common.js';
import type { Grant, Permission, ResourceRef } from '../../src/server/auth/policy.js';

/**
 * The expected permission matrix (README "Access control"), written out rather than derived from the
 * policy's own table; the unit test checks every cell, the HTTP test samples each role.
 */

export const ORG = 'org_A';

// Namespace A holds the scoped agent and project plus a sibling of each; namespace B holds one more of each.
export const resources = {
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
export type ResourceName = keyof typeof resources;

/** Where each resource type's scope points. */
export const scopeTarget: Record<ResourceType, string> = { org: ORG, namespace: 'ns_A', agent: 'agt_1', project: 'prj_1' };

export const ALL: Permission[] = ['discover', 'read', 'run', 'write', 'admin'];
const inOrg = (perms: Permission[]) =>
  Object.fromEntries(
    Object.keys(resources)
      .filter((r) => r !== 'otherOrg')
      .map((r) => [r, perms]),
  );

/** Expected permissions per resource for each `type:role`; a resource left out gets none. */
export const expected: Record<string, Partial<Record<ResourceName, Permission[]>>> = {
  'org:admin': inOrg(ALL),
  'org:member': inOrg(['discover']),
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

export const allows = (typeRole: string, resource: ResourceName, permission: Permission) => (expected[typeRole][resource] ?? []).includes(permission);

/** A scope as the keys code stores it: `executor` becomes viewer with the legacy role kept. */
export function storedGrant(type: ResourceType, role: string): Grant {
  const id = scopeTarget[type];
  const namespace_id = type === 'agent' || type === 'project' ? 'ns_A' : null;
  return role === 'executor'
    ? { resource_type: type, resource_id: id, role: 'viewer', legacy_role: 'executor', namespace_id }
    : { resource_type: type, resource_id: id, role, legacy_role: null, namespace_id };
}
