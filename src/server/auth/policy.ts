import { sql } from 'kysely';
import type { Db } from '../store/db.js';
import { ApiError } from '../errors.js';
import type { Actor } from './authenticate.js';

export type Permission = 'discover' | 'read' | 'run' | 'write' | 'admin';

/** What a permission is checked against. Agents and projects carry their namespace. */
export type ResourceRef =
  | { type: 'org'; id: string }
  | { type: 'namespace'; id: string }
  | { type: 'agent'; id: string; namespaceId: string }
  | { type: 'project'; id: string; namespaceId: string };

export interface Grant {
  resource_type: string;
  resource_id: string;
  role: string;
  legacy_role: string | null;
}

const ALL: readonly Permission[] = ['discover', 'read', 'run', 'write', 'admin'];

/** DESIGN.md section 6: what each role grants on the resource it names. */
export const ROLE_PERMISSIONS: Record<'agent' | 'project', Record<string, readonly Permission[]>> = {
  agent: {
    discoverer: ['discover'],
    viewer: ['discover', 'read', 'run'],
    editor: ['discover', 'read', 'run', 'write'],
    owner: ALL,
  },
  project: {
    discoverer: ['discover'],
    viewer: ['discover', 'read'],
    editor: ['discover', 'read', 'run', 'write'],
    owner: ALL,
  },
};

/**
 * The one policy: maps (key, permission, resource) to allow or deny from the key's grants
 * (its scopes, owner grants on what it created, and grants held by its groups).
 */
export class Permissions {
  readonly isOrgAdmin: boolean;
  readonly isOrgMember: boolean;
  private namespaceAdmin = new Set<string>();
  private direct = new Map<string, Set<Permission>>();

  constructor(
    readonly actor: Actor,
    grants: Grant[],
  ) {
    let admin = false;
    let member = false;
    for (const g of grants) {
      if (g.resource_type === 'org') {
        if (g.resource_id !== actor.orgId) continue;
        if (g.role === 'admin') admin = true;
        if (g.role === 'member') member = true;
      } else if (g.resource_type === 'namespace') {
        if (g.role === 'admin') this.namespaceAdmin.add(g.resource_id);
      } else if (g.resource_type === 'agent' || g.resource_type === 'project') {
        const perms = ROLE_PERMISSIONS[g.resource_type][g.role] ?? [];
        const key = `${g.resource_type}:${g.resource_id}`;
        const set = this.direct.get(key) ?? new Set<Permission>();
        for (const p of perms) set.add(p);
        // The legacy executor role is stored as viewer and keeps its run permission.
        if (g.legacy_role === 'executor') set.add('run');
        this.direct.set(key, set);
      }
    }
    this.isOrgAdmin = admin;
    this.isOrgMember = member || admin;
  }

  can(permission: Permission, resource: ResourceRef): boolean {
    if (this.isOrgAdmin) return true;
    if (permission === 'discover' && this.isOrgMember) return true;
    switch (resource.type) {
      case 'org':
        return false;
      case 'namespace':
        return this.namespaceAdmin.has(resource.id);
      case 'agent':
      case 'project':
        if (this.namespaceAdmin.has(resource.namespaceId)) return true;
        return this.direct.get(`${resource.type}:${resource.id}`)?.has(permission) ?? false;
    }
  }

  /** 404 when the key may not even discover the resource (no existence leak), 403 when it may look but not act. */
  require(permission: Permission, resource: ResourceRef, describe: string): void {
    if (this.can(permission, resource)) return;
    if (permission === 'discover' || !this.can('discover', resource)) throw new ApiError(404, 'not_found', `${describe} was not found`);
    throw new ApiError(403, 'forbidden', `This API key may not ${permission} ${describe}`);
  }

  requireOrgAdmin(action: string): void {
    if (!this.isOrgAdmin) throw new ApiError(403, 'forbidden', `Only org admins may ${action}`);
  }
}

/** Loads every grant the key holds, directly or through its groups, in one query. */
export async function loadGrants(db: Db, actor: Actor): Promise<Grant[]> {
  const result = await sql<Grant>`
    SELECT resource_type, resource_id, role, legacy_role FROM grants
    WHERE (principal_type = 'key' AND principal_id = ${actor.keyId})
       OR (principal_type = 'group' AND principal_id IN (SELECT group_id FROM group_members WHERE key_id = ${actor.keyId}))`.execute(db);
  return result.rows;
}

export async function loadPermissions(db: Db, actor: Actor): Promise<Permissions> {
  return new Permissions(actor, await loadGrants(db, actor));
}

/** Everything a key may do, granted: the benchmark baseline with authentication switched off. */
export const unrestricted = (actor: Actor) => new Permissions(actor, [{ resource_type: 'org', resource_id: actor.orgId, role: 'admin', legacy_role: null }]);
