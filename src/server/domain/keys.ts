import { sql, type Kysely } from 'kysely';
import { ROLES_BY_RESOURCE_TYPE, type ResourceType, type Role } from '../../contract/common.js';
import type { ApiKey, Preset, Scope, Whoami } from '../../contract/resources.js';
import { PRESETS } from '../../contract/presets.js';
import type { Database, Db } from '../store/db.js';
import { newId } from '../store/ids.js';
import { iso } from '../store/mappers.js';
import { ValidationFailure, conflict, notFound, unauthenticated, named, type ValidationItem } from './errors.js';
import type { Actor } from '../auth/authenticate.js';
import type { Permissions } from '../auth/policy.js';
import { accessChanged } from '../auth/invalidation.js';
import { generateSecret, hashSecret, secretPrefix } from '../auth/secrets.js';

type Executor = Db | Kysely<Database>;
type ScopeInput = { resource_type: ResourceType; resource_id: string; role: Role };
/** A scope as stored in `grants`: `executor` becomes `viewer` with `legacy_role` 'executor'. */
type StoredScope = { resource_type: ResourceType; resource_id: string; role: string; legacy_role: string | null };
type Loc = (string | number)[];

const MANAGE = 'manage API keys';

// ---- validation --------------------------------------------------------------------------------

/**
 * Checks each scope against the spec's role table and resolves its resource in the key's org:
 * the org by id or name, a namespace by id or slug, an agent or project by id or `namespace/name`.
 * Every problem is reported at once, as 422 items at `loc`.
 */
export async function normalizeScopes(db: Executor, orgId: string, scopes: ScopeInput[], loc: Loc): Promise<StoredScope[]> {
  const items: ValidationItem[] = [];
  const out: StoredScope[] = [];
  const seen = new Set<string>();
  for (const [i, scope] of scopes.entries()) {
    const valid = ROLES_BY_RESOURCE_TYPE[scope.resource_type];
    if (!valid.includes(scope.role)) {
      items.push({
        loc: [...loc, i, 'role'],
        msg: `Role ${scope.role} is not valid for resource type ${scope.resource_type}; valid roles: ${valid.join(', ')}`,
        type: 'invalid_role',
      });
      continue;
    }
    const resourceId = await resolveResource(db, orgId, scope.resource_type, scope.resource_id);
    if (!resourceId) {
      items.push({ loc: [...loc, i, 'resource_id'], msg: `No ${scope.resource_type} ${scope.resource_id} in this org`, type: 'unknown_resource' });
      continue;
    }
    const stored: StoredScope =
      scope.role === 'executor'
        ? { resource_type: scope.resource_type, resource_id: resourceId, role: 'viewer', legacy_role: 'executor' }
        : { resource_type: scope.resource_type, resource_id: resourceId, role: scope.role, legacy_role: null };
    const identity = `${stored.resource_type}:${stored.resource_id}:${stored.role}:${stored.legacy_role}`;
    if (seen.has(identity)) continue;
    seen.add(identity);
    out.push(stored);
  }
  if (items.length > 0) throw new ValidationFailure(items);
  return out;
}

async function resolveResource(db: Executor, orgId: string, type: ResourceType, ref: string): Promise<string | undefined> {
  switch (type) {
    case 'org': {
      const org = await db
        .selectFrom('orgs')
        .select('id')
        .where('id', '=', orgId)
        .where((eb) => eb.or([eb('id', '=', ref), eb('name', '=', ref)]))
        .executeTakeFirst();
      return org?.id;
    }
    case 'namespace': {
      const ns = await db
        .selectFrom('namespaces')
        .select('id')
        .where('org_id', '=', orgId)
        .where((eb) => eb.or([eb('id', '=', ref), eb('slug', '=', ref)]))
        .executeTakeFirst();
      return ns?.id;
    }
    case 'agent': {
      const [slug, name] = ref.includes('/') ? ref.split('/', 2) : [undefined, undefined];
      let query = db
        .selectFrom('agents')
        .innerJoin('namespaces', 'namespaces.id', 'agents.namespace_id')
        .select('agents.id')
        .where('namespaces.org_id', '=', orgId)
        .where('agents.status', '=', 'ACTIVE');
      query = slug !== undefined ? query.where('namespaces.slug', '=', slug).where('agents.name', '=', name!) : query.where('agents.id', '=', ref);
      return (await query.executeTakeFirst())?.id;
    }
    case 'project': {
      const [slug, name] = ref.includes('/') ? ref.split('/', 2) : [undefined, undefined];
      let query = db
        .selectFrom('projects')
        .innerJoin('namespaces', 'namespaces.id', 'projects.namespace_id')
        .select('projects.id')
        .where('namespaces.org_id', '=', orgId);
      query = slug !== undefined ? query.where('namespaces.slug', '=', slug).where('projects.name', '=', name!) : query.where('projects.id', '=', ref);
      return (await query.executeTakeFirst())?.id;
    }
  }
}

/** Distinct group ids, each an existing group of the org (422 at `loc` otherwise). */
async function checkGroups(db: Kysely<Database>, orgId: string, groupIds: string[], loc: Loc): Promise<string[]> {
  const unique = [...new Set(groupIds)];
  if (unique.length === 0) return [];
  // FOR SHARE: a group cannot be deleted between this check and the membership insert.
  const found = new Set(
    (await db.selectFrom('groups').select('id').where('org_id', '=', orgId).where('id', 'in', unique).forShare().execute()).map((g) => g.id),
  );
  const items: ValidationItem[] = [];
  groupIds.forEach((id, i) => {
    if (!found.has(id)) items.push({ loc: [...loc, i], msg: `No sharing group ${id} in this org`, type: 'unknown_resource' });
  });
  if (items.length > 0) throw new ValidationFailure(items);
  return unique;
}

/** An expiry in the future, or none. */
function parseExpiry(value: string | null): Date | null {
  if (value === null) return null;
  const at = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:\d{2})$/.test(value) ? new Date(value) : new Date(NaN);
  if (Number.isNaN(at.getTime())) {
    throw new ValidationFailure([
      { loc: ['body', 'expires_at'], msg: 'Expected an ISO 8601 date-time with a time zone, such as 2030-01-01T00:00:00Z', type: 'datetime_parsing' },
    ]);
  }
  if (at.getTime() <= Date.now()) {
    throw new ValidationFailure([{ loc: ['body', 'expires_at'], msg: 'The expiry must be in the future', type: 'datetime_past' }]);
  }
  return at;
}

// ---- records -----------------------------------------------------------------------------------

const publicScope = (g: { resource_type: string; resource_id: string; role: string }): Scope => ({
  resource_type: g.resource_type as ResourceType,
  resource_id: g.resource_id,
  role: g.role as Role,
});

/** Keys of the org with their scopes and sharing groups; `ids` narrows to those keys. */
async function keyRecords(db: Executor, orgId: string, options: { ids?: string[]; includeRevoked?: boolean }): Promise<ApiKey[]> {
  let query = db.selectFrom('api_keys').selectAll().where('org_id', '=', orgId);
  if (options.ids) query = query.where('id', 'in', options.ids);
  if (!options.includeRevoked) query = query.where('revoked_at', 'is', null);
  const rows = await query.orderBy('created_at', 'desc').orderBy('id', 'desc').execute();
  if (rows.length === 0) return [];
  const ids = rows.map((r) => r.id);
  const [grants, memberships] = await Promise.all([
    db
      .selectFrom('grants')
      .select(['principal_id', 'resource_type', 'resource_id', 'role'])
      .where('principal_type', '=', 'key')
      .where('principal_id', 'in', ids)
      .where('source', '=', 'scope')
      .orderBy('id')
      .execute(),
    db.selectFrom('group_members').select(['key_id', 'group_id']).where('key_id', 'in', ids).orderBy('group_id').execute(),
  ]);
  return rows.map((r) => ({
    id: r.id,
    org_id: r.org_id,
    name: r.name,
    description: r.description,
    key_prefix: r.key_prefix,
    scopes: grants.filter((g) => g.principal_id === r.id).map(publicScope),
    sharing_group_ids: memberships.filter((m) => m.key_id === r.id).map((m) => m.group_id),
    expires_at: iso(r.expires_at),
    revoked_at: iso(r.revoked_at),
    last_used_at: iso(r.last_used_at),
    created_at: iso(r.created_at)!,
    updated_at: iso(r.updated_at)!,
  }));
}

async function keyRecord(db: Executor, orgId: string, keyId: string): Promise<ApiKey> {
  const [record] = await keyRecords(db, orgId, { ids: [keyId], includeRevoked: true });
  if (!record) throw notFound('API key', keyId);
  return record;
}

/** The key row, locked for the rest of the transaction; 404 outside the org. */
async function lockKey(trx: Kysely<Database>, orgId: string, keyId: string) {
  const row = await trx.selectFrom('api_keys').selectAll().where('id', '=', keyId).where('org_id', '=', orgId).forNoKeyUpdate().executeTakeFirst();
  if (!row) throw notFound('API key', keyId);
  return row;
}

const refuseRevoked = (row: { id: string; name: string; revoked_at: Date | null }) => {
  if (row.revoked_at) throw conflict('key_revoked', `API key ${named(row.name, row.id)} has been revoked`);
};

/**
 * Refuses a change that would leave the org without a usable org-admin key (nobody could manage
 * keys any more). Takes the org row lock, so two admins revoking each other serialize.
 */
async function keepAnOrgAdmin(trx: Kysely<Database>, orgId: string, key: { id: string; name: string }): Promise<void> {
  const keyId = key.id;
  await trx.selectFrom('orgs').select('id').where('id', '=', orgId).forNoKeyUpdate().execute();
  const result = await sql<{ n: number }>`
    SELECT count(*)::int AS n FROM api_keys k
    JOIN grants g ON g.principal_type = 'key' AND g.principal_id = k.id AND g.resource_type = 'org'
                 AND g.resource_id = k.org_id AND g.role = 'admin'
    WHERE k.org_id = ${orgId} AND k.id <> ${keyId} AND k.revoked_at IS NULL
      AND (k.expires_at IS NULL OR k.expires_at > now())`.execute(trx);
  if (Number(result.rows[0].n) === 0) {
    throw conflict('last_org_admin', `API key ${named(key.name, keyId)} is the org's last org-admin key; create another org-admin key first`);
  }
}

const isAdminScope = (orgId: string) => (s: { resource_type: string; resource_id: string; role: string }) =>
  s.resource_type === 'org' && s.resource_id === orgId && s.role === 'admin';

async function holdsOrgAdmin(trx: Kysely<Database>, orgId: string, keyId: string): Promise<boolean> {
  const row = await trx
    .selectFrom('grants')
    .select('id')
    .where('principal_type', '=', 'key')
    .where('principal_id', '=', keyId)
    .where('resource_type', '=', 'org')
    .where('resource_id', '=', orgId)
    .where('role', '=', 'admin')
    .executeTakeFirst();
  return row !== undefined;
}

async function insertScopes(trx: Kysely<Database>, keyId: string, scopes: StoredScope[]): Promise<void> {
  if (scopes.length === 0) return;
  await trx
    .insertInto('grants')
    .values(scopes.map((s) => ({ principal_type: 'key' as const, principal_id: keyId, ...s, source: 'scope' as const })))
    .execute();
}

// ---- operations --------------------------------------------------------------------------------

export interface CreateKeyInput {
  name: string;
  description: string;
  scopes: ScopeInput[];
  sharing_group_ids: string[];
  expires_at: string | null;
}

/** `POST /api_keys` (org admins): the secret is returned here only; the database keeps its SHA-256. */
export async function createKey(db: Db, perms: Permissions, input: CreateKeyInput): Promise<{ api_key: ApiKey; secret: string }> {
  perms.requireOrgAdmin(MANAGE);
  const orgId = perms.actor.orgId;
  const expiresAt = parseExpiry(input.expires_at);
  const secret = generateSecret();
  const keyId = newId('apiKey');
  const record = await db.transaction().execute(async (trx) => {
    const scopes = await normalizeScopes(trx, orgId, input.scopes, ['body', 'scopes']);
    const groupIds = await checkGroups(trx, orgId, input.sharing_group_ids, ['body', 'sharing_group_ids']);
    await trx
      .insertInto('api_keys')
      .values({
        id: keyId,
        org_id: orgId,
        name: input.name,
        description: input.description,
        key_hash: hashSecret(secret),
        key_prefix: secretPrefix(secret),
        created_by_key_id: perms.actor.keyId || null,
        expires_at: expiresAt,
        revoked_at: null,
        last_used_at: null,
      })
      .execute();
    await insertScopes(trx, keyId, scopes);
    // The key's service user joins each sharing group.
    if (groupIds.length > 0)
      await trx
        .insertInto('group_members')
        .values(groupIds.map((group_id) => ({ group_id, key_id: keyId })))
        .execute();
    return keyRecord(trx, orgId, keyId);
  });
  return { api_key: record, secret };
}

export async function listKeys(db: Db, perms: Permissions, includeRevoked: boolean): Promise<{ api_keys: ApiKey[]; total: number }> {
  perms.requireOrgAdmin(MANAGE);
  const keys = await keyRecords(db, perms.actor.orgId, { includeRevoked });
  return { api_keys: keys, total: keys.length };
}

export async function getKey(db: Db, perms: Permissions, keyId: string): Promise<ApiKey> {
  perms.requireOrgAdmin(MANAGE);
  return keyRecord(db, perms.actor.orgId, keyId);
}

/**
 * `DELETE /api_keys/{id}`: soft and immediate (`revoked_at`); the key leaves its sharing groups.
 * Revoking a revoked key answers its record again. The answer is the record and a `message`
 * (the upstream API answers `{id, message}`).
 */
export async function revokeKey(db: Db, perms: Permissions, keyId: string): Promise<ApiKey & { message: string }> {
  perms.requireOrgAdmin(MANAGE);
  const orgId = perms.actor.orgId;
  const { record, already } = await db.transaction().execute(async (trx) => {
    const row = await lockKey(trx, orgId, keyId);
    if (row.revoked_at) return { record: await keyRecord(trx, orgId, keyId), already: true };
    if (await holdsOrgAdmin(trx, orgId, keyId)) await keepAnOrgAdmin(trx, orgId, row);
    await trx.updateTable('api_keys').set({ revoked_at: new Date(), updated_at: new Date() }).where('id', '=', keyId).execute();
    await trx.deleteFrom('group_members').where('key_id', '=', keyId).execute();
    return { record: await keyRecord(trx, orgId, keyId), already: false };
  });
  accessChanged(db);
  return { ...record, message: already ? `API key ${record.name} was already revoked at ${record.revoked_at}` : `API key ${record.name} revoked` };
}

/** `PATCH /api_keys/{id}`: replaces the key's scopes (its owner grants on what it created stay). */
export async function updateKeyScopes(db: Db, perms: Permissions, keyId: string, scopes: ScopeInput[]): Promise<ApiKey> {
  perms.requireOrgAdmin(MANAGE);
  const orgId = perms.actor.orgId;
  const record = await db.transaction().execute(async (trx) => {
    const row = await lockKey(trx, orgId, keyId);
    refuseRevoked(row);
    const stored = await normalizeScopes(trx, orgId, scopes, ['body', 'scopes']);
    if (!stored.some(isAdminScope(orgId)) && (await holdsOrgAdmin(trx, orgId, keyId))) await keepAnOrgAdmin(trx, orgId, row);
    await trx.deleteFrom('grants').where('principal_type', '=', 'key').where('principal_id', '=', keyId).where('source', '=', 'scope').execute();
    await insertScopes(trx, keyId, stored);
    await trx.updateTable('api_keys').set({ updated_at: new Date() }).where('id', '=', keyId).execute();
    return keyRecord(trx, orgId, keyId);
  });
  accessChanged(db);
  return record;
}

/** `PATCH /api_keys/{id}/sharing-groups`: replaces the groups the key's service user belongs to. */
export async function updateKeyGroups(db: Db, perms: Permissions, keyId: string, groupIds: string[]): Promise<ApiKey> {
  perms.requireOrgAdmin(MANAGE);
  const orgId = perms.actor.orgId;
  const record = await db.transaction().execute(async (trx) => {
    const row = await lockKey(trx, orgId, keyId);
    refuseRevoked(row);
    const wanted = await checkGroups(trx, orgId, groupIds, ['body', 'sharing_group_ids']);
    let removal = trx.deleteFrom('group_members').where('key_id', '=', keyId);
    if (wanted.length > 0) removal = removal.where('group_id', 'not in', wanted);
    await removal.execute();
    if (wanted.length > 0) {
      await trx
        .insertInto('group_members')
        .values(wanted.map((group_id) => ({ group_id, key_id: keyId })))
        .onConflict((oc) => oc.columns(['group_id', 'key_id']).doNothing())
        .execute();
    }
    await trx.updateTable('api_keys').set({ updated_at: new Date() }).where('id', '=', keyId).execute();
    return keyRecord(trx, orgId, keyId);
  });
  accessChanged(db);
  return record;
}

/** `POST /api_keys/{id}/rotate`: a new secret for the same key id, scopes and groups; the old one stops working. */
export async function rotateKey(db: Db, perms: Permissions, keyId: string): Promise<{ api_key: ApiKey; secret: string }> {
  perms.requireOrgAdmin(MANAGE);
  const orgId = perms.actor.orgId;
  const secret = generateSecret();
  const record = await db.transaction().execute(async (trx) => {
    const row = await lockKey(trx, orgId, keyId);
    refuseRevoked(row);
    await trx
      .updateTable('api_keys')
      .set({ key_hash: hashSecret(secret), key_prefix: secretPrefix(secret), updated_at: new Date() })
      .where('id', '=', keyId)
      .execute();
    return keyRecord(trx, orgId, keyId);
  });
  accessChanged(db);
  return { api_key: record, secret };
}

/** `GET /whoami`: the calling key as it stands. */
export async function whoami(db: Db, actor: Actor): Promise<Whoami> {
  if (!actor.keyId) throw unauthenticated('unauthorized', 'This request carries no API key');
  const key = await keyRecord(db, actor.orgId, actor.keyId);
  return {
    id: key.id,
    name: key.name,
    key_prefix: key.key_prefix,
    org_id: key.org_id,
    scopes: key.scopes,
    sharing_group_ids: key.sharing_group_ids,
    expires_at: key.expires_at,
  };
}

export const listPresets = (): { presets: Preset[] } => ({ presets: PRESETS.map((p) => ({ ...p, scopes: p.scopes.map((s) => ({ ...s })) })) });
