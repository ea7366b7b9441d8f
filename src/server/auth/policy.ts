import { sql } from 'kysely';
import type { Db } from '../store/db.js';
import { forbidden, notFound } from '../domain/errors.js';
import { statusLit } from '../store/sql.js';
import { statementShapes } from '../store/prepared.js';
import { LIVE_AGENT_STATUS } from '../../contract/lifecycle.js';
import type { Actor } from './authenticate.js';
import { generationOf, hasUnsettledGrants, settleGrants } from './invalidation.js';
import { RefreshAhead } from './refresh-ahead.js';

export type Permission = 'discover' | 'read' | 'run' | 'write' | 'admin' | 'write_task_data';
/** The role ladder; `write_task_data` is not on it (see below). */
export const PERMISSIONS: readonly Permission[] = ['discover', 'read', 'run', 'write', 'admin'];
/**
 * `write_task_data`: writing the records of an agent's tasks (states, messages, events, trackers,
 * task filesystems). Any key with `write` on the agent has it; a runtime key has it on its own agent
 * and holds nothing else beyond discover, read and run there (README "Delivery to agents, in short").
 */
export const RUNTIME_KEY_PERMISSIONS: readonly Permission[] = ['discover', 'read', 'run', 'write_task_data'];

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
  /** The namespace of the agent or project the grant names (null for org and namespace grants). */
  namespace_id?: string | null;
}

const ALL = PERMISSIONS;

/**
 * README "Access control": what each role grants on the agent or project it names. `run` on a project
 * means using it as a task's filesystem.
 */
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

/** Which agents or projects a key may act on, in a form a SQL `WHERE` can use. */
export type Visibility = { all: true } | { all: false; namespaceIds: string[]; ids: string[] };

/**
 * The one policy: maps (key, permission, resource) to allow or deny from the key's grants (its
 * scopes, owner grants on what it created, and grants held by its groups).
 *
 * - org admin: everything in the org; org member: discover everything in the org.
 * - namespace admin: everything on the namespace and all it contains.
 * - agent/project roles: as ROLE_PERMISSIONS; the legacy `executor` (stored as viewer) keeps `run`.
 * - a key that may discover something inside a namespace may discover that namespace.
 */
export class Permissions {
  readonly isOrgAdmin: boolean;
  readonly isOrgMember: boolean;
  /** The sharing groups the key belongs to. */
  readonly groupIds: readonly string[];
  private namespaceAdmin = new Set<string>();
  private namespacesWithGrants = new Set<string>();
  private direct = new Map<string, Set<Permission>>();

  constructor(
    readonly actor: Actor,
    grants: Grant[],
    groupIds: readonly string[] = [],
  ) {
    this.groupIds = groupIds;
    let admin = false;
    let member = false;
    // A runtime key holds no grants: whatever a row says, it is confined to its agent (see can()).
    for (const g of actor.runtimeAgentId !== undefined ? [] : grants) {
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
        if (set.size === 0) continue;
        this.direct.set(key, set);
        if (g.namespace_id) this.namespacesWithGrants.add(g.namespace_id);
      }
    }
    this.isOrgAdmin = admin;
    this.isOrgMember = member || admin;
  }

  can(permission: Permission, resource: ResourceRef): boolean {
    // A runtime key: its own agent only, whatever grants exist.
    if (this.actor.runtimeAgentId !== undefined) {
      return resource.type === 'agent' && resource.id === this.actor.runtimeAgentId && RUNTIME_KEY_PERMISSIONS.includes(permission);
    }
    if (permission === 'write_task_data') permission = 'write';
    // Agents, projects and namespaces are looked up within the key's org; an org is named outright.
    if (resource.type === 'org' && resource.id !== this.actor.orgId) return false;
    if (this.isOrgAdmin) return true;
    if (permission === 'discover' && this.isOrgMember) return true;
    switch (resource.type) {
      case 'org':
        return false;
      case 'namespace':
        if (this.namespaceAdmin.has(resource.id)) return true;
        return permission === 'discover' && this.namespacesWithGrants.has(resource.id);
      case 'agent':
      case 'project':
        if (this.namespaceAdmin.has(resource.namespaceId)) return true;
        return this.direct.get(`${resource.type}:${resource.id}`)?.has(permission) ?? false;
    }
  }

  /** 404 when the key may not even discover the resource (no existence leak), 403 when it may look but not act. */
  require(permission: Permission, resource: ResourceRef, describe: string): void {
    if (this.can(permission, resource)) return;
    if (permission === 'discover' || !this.can('discover', resource)) throw notFound(`${describe}`);
    throw forbidden(`This API key may not ${permission === 'write_task_data' ? 'write' : permission} ${describe}`);
  }

  requireOrgAdmin(action: string): void {
    if (!this.isOrgAdmin) throw forbidden(`Only org admins may ${action}`);
  }

  /**
   * The agents or projects on which the key holds `permission`, for filtering a list in SQL:
   * `{all: true}`, or the namespaces it administers plus the ids it holds the permission on.
   */
  visible(type: 'agent' | 'project', permission: Permission = 'discover'): Visibility {
    if (this.actor.runtimeAgentId !== undefined) {
      const ids = type === 'agent' && RUNTIME_KEY_PERMISSIONS.includes(permission) ? [this.actor.runtimeAgentId] : [];
      return { all: false, namespaceIds: [], ids };
    }
    if (permission === 'write_task_data') permission = 'write';
    if (this.isOrgAdmin || (permission === 'discover' && this.isOrgMember)) return { all: true };
    const ids: string[] = [];
    for (const [key, perms] of this.direct) {
      if (key.startsWith(`${type}:`) && perms.has(permission)) ids.push(key.slice(type.length + 1));
    }
    return { all: false, namespaceIds: [...this.namespaceAdmin], ids };
  }
}

type GrantRow = Grant & { id: string | number };

/** Loads every grant the key holds, directly or through its groups, with the namespace of each agent or project. */
export async function loadGrants(db: Db, actor: Actor): Promise<Grant[]> {
  return (await loadGrantRows(db, actor.keyId)).map(({ id: _id, ...grant }) => grant);
}

// Both run prepared on PGlite, compiled once (store/prepared.ts): every key's grants are read again each second it is used.
async function loadGrantRows(db: Db, keyId: string): Promise<GrantRow[]> {
  const result = await statementShapes.execute(
    db,
    'grants',
    [keyId, keyId],
    () =>
      sql<GrantRow>`
    SELECT g.id, g.resource_type, g.resource_id, g.role, g.legacy_role,
           COALESCE(a.namespace_id, p.namespace_id) AS namespace_id
    FROM grants g
    LEFT JOIN agents a ON g.resource_type = 'agent' AND a.id = g.resource_id AND a.status = ${statusLit(LIVE_AGENT_STATUS)}
    LEFT JOIN projects p ON g.resource_type = 'project' AND p.id = g.resource_id
    WHERE (g.principal_type = 'key' AND g.principal_id = ${keyId})
       OR (g.principal_type = 'group' AND g.principal_id IN (SELECT group_id FROM group_members WHERE key_id = ${keyId}))`,
  );
  return result.rows;
}

async function loadGroupIds(db: Db, keyId: string): Promise<string[]> {
  const { rows } = await statementShapes.execute(db, 'groups', [keyId], () =>
    db.selectFrom('group_members').select('group_id').where('key_id', '=', keyId).orderBy('group_id'),
  );
  return rows.map((r) => r.group_id);
}

/** How long a key's loaded grants are trusted: a change made on another replica applies within this. */
export const GRANTS_CACHE_TTL_MS = 1000;
/** A key used when its grants are older than this has them loaded again in the background. */
const GRANTS_REFRESH_AHEAD_MS = GRANTS_CACHE_TTL_MS / 2;
const GRANTS_CACHE_MAX_ENTRIES = 10_000;

type CachedPermissions = { permissions: Permissions; loadedAt: number; generation: number };
type Flight = { promise: Promise<Permissions>; generation: number };
type GrantCache = { entries: Map<string, CachedPermissions>; flights: Map<string, Flight>; ahead: RefreshAhead };
const caches = new WeakMap<Db, GrantCache>();

/**
 * A key's permissions, cached per database handle for at most one second. Changes made through this
 * process take effect at once: the keys and groups code bumps the handle's generation after its
 * transaction commits, and grants being created inside a still-open transaction (ownership of a new
 * agent or project) keep the affected keys out of the cache until a load sees them committed.
 * Concurrent misses for one key share one load.
 */
export async function loadPermissions(db: Db, actor: Actor): Promise<Permissions> {
  let cache = caches.get(db);
  if (!cache) caches.set(db, (cache = { entries: new Map(), flights: new Map(), ahead: new RefreshAhead() }));
  const now = Date.now();
  const generation = generationOf(db);
  const unsettled = hasUnsettledGrants(actor.keyId);
  if (!unsettled) {
    const hit = cache.entries.get(actor.keyId);
    const flight = cache.flights.get(actor.keyId);
    if (hit && hit.generation === generation && now - hit.loadedAt <= GRANTS_CACHE_TTL_MS && hit.permissions.actor.orgId === actor.orgId) {
      // A key in use is loaded again before its entry expires, off the request's path (as its key
      // lookup is, authenticate.ts); the entry still counts from its load's start.
      if (now - hit.loadedAt > GRANTS_REFRESH_AHEAD_MS && !flight) cache.ahead.schedule(actor.keyId, () => load(db, actor, cache, now, generation, false));
      return hit.permissions;
    }
    if (flight && flight.generation === generation) return flight.promise;
  }
  return load(db, actor, cache, now, generation, unsettled);
}

/** Loads the key's permissions and caches them when nothing overtook the load; concurrent settled loads share one. */
function load(db: Db, actor: Actor, cache: GrantCache, now: number, generation: number, unsettled: boolean): Promise<Permissions> {
  const { entries, flights } = cache;
  const promise = (async () => {
    const [rows, groupIds] = await Promise.all([loadGrantRows(db, actor.keyId), loadGroupIds(db, actor.keyId)]);
    const permissions = new Permissions(
      actor,
      rows.map(({ id: _id, ...grant }) => grant),
      groupIds,
    );
    const settled =
      !unsettled ||
      settleGrants(
        actor.keyId,
        rows.map((r) => String(r.id)),
      );
    // Cache only a load that no invalidation overtook and that sees every grant this process created for the key.
    if (settled && generationOf(db) === generation) {
      if (entries.size >= GRANTS_CACHE_MAX_ENTRIES) entries.clear();
      entries.set(actor.keyId, { permissions, loadedAt: now, generation });
    }
    return permissions;
  })();
  if (!unsettled) {
    flights.set(actor.keyId, { promise, generation });
    const done = () => {
      if (flights.get(actor.keyId)?.promise === promise) flights.delete(actor.keyId);
    };
    promise.then(done, done);
  }
  return promise;
}

/** Everything a key may do, granted: the benchmark baseline with authentication switched off. */
export const unrestricted = (actor: Actor) => new Permissions(actor, [{ resource_type: 'org', resource_id: actor.orgId, role: 'admin', legacy_role: null }]);
