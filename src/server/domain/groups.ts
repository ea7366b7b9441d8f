import { sql, type Kysely } from 'kysely';
import type { Group } from '../../contract/resources.js';
import type { Database, Db } from '../store/db.js';
import { newId } from '../store/ids.js';
import { iso } from '../store/mappers.js';
import { conflict, missing, notFound, named } from './errors.js';
import type { Permissions } from '../auth/policy.js';
import { accessChanged } from '../auth/invalidation.js';
import { pageOffset, type PageInput } from './paging.js';

type Executor = Db | Kysely<Database>;
export type GroupMember = { group_id: string; member_id: string; name: string; added_at: string };

const MANAGE = 'manage sharing groups';

/**
 * Sharing groups: a key's service user joins the groups chosen at its creation, and each group
 * receives `owner` on every agent or project such a key creates. Org members (and admins) see every
 * group of the org; any other key sees the groups it belongs to; only org admins change them.
 */
function groupQuery(db: Executor, orgId: string, ids?: readonly string[]) {
  let query = db.selectFrom('groups').where('org_id', '=', orgId);
  if (ids) query = query.where('id', 'in', ids.length > 0 ? ids : ['']);
  return query;
}

async function groupRows(db: Executor, orgId: string, ids?: readonly string[], page?: PageInput): Promise<Group[]> {
  if (ids && ids.length === 0) return [];
  let query = groupQuery(db, orgId, ids)
    .select(['id', 'org_id', 'name', 'description', 'created_by_key_id', 'created_at', 'updated_at'])
    .select(sql<number>`(SELECT count(*)::int FROM group_members m WHERE m.group_id = groups.id)`.as('member_count'))
    .orderBy('created_at', page?.order_direction ?? 'desc')
    .orderBy('id', page?.order_direction ?? 'desc');
  if (page) query = query.limit(page.limit).offset(pageOffset(page));
  const rows = await query.execute();
  return rows.map((r) => ({
    id: r.id,
    org_id: r.org_id,
    owner_org_id: r.org_id,
    name: r.name,
    description: r.description,
    member_count: Number(r.member_count),
    created_by: r.created_by_key_id,
    created_at: iso(r.created_at)!,
    updated_at: iso(r.updated_at)!,
  }));
}

const canSee = (perms: Permissions, groupId: string) => perms.isOrgMember || perms.groupIds.includes(groupId);

/** The group if the key may see it; 404 for unknown and unseen alike. */
async function visibleGroup(db: Executor, perms: Permissions, groupId: string): Promise<Group> {
  const [group] = canSee(perms, groupId) ? await groupRows(db, perms.actor.orgId, [groupId]) : [];
  if (!group) throw notFound('Group', groupId);
  return group;
}

export async function createGroup(db: Db, perms: Permissions, input: { name: string; description: string }): Promise<Group> {
  perms.requireOrgAdmin(MANAGE);
  const id = newId('group');
  const inserted = await db
    .insertInto('groups')
    .values({ id, org_id: perms.actor.orgId, name: input.name, description: input.description, created_by_key_id: perms.actor.keyId || null })
    .onConflict((oc) => oc.columns(['org_id', 'name']).doNothing())
    .returning('id')
    .executeTakeFirst();
  if (!inserted) throw conflict('group_exists', `A sharing group named ${input.name} already exists`);
  return (await groupRows(db, perms.actor.orgId, [id]))[0];
}

/** `GET /groups`: paged in the database; `total` counts every group the key may see. */
export async function listGroups(db: Db, perms: Permissions, page: PageInput): Promise<{ groups: Group[]; total: number }> {
  const ids = perms.isOrgMember ? undefined : perms.groupIds;
  const [groups, count] = await Promise.all([
    groupRows(db, perms.actor.orgId, ids, page),
    groupQuery(db, perms.actor.orgId, ids).select(sql<number>`count(*)::int`.as('n')).executeTakeFirstOrThrow(),
  ]);
  return { groups, total: count.n };
}

export const getGroup = (db: Db, perms: Permissions, groupId: string) => visibleGroup(db, perms, groupId);

/** Deletes the group, its memberships and every grant it held: its members lose what they reached through it. */
export async function deleteGroup(db: Db, perms: Permissions, groupId: string): Promise<{ id: string; message: string }> {
  const group = await visibleGroup(db, perms, groupId);
  perms.requireOrgAdmin(MANAGE);
  await db.transaction().execute(async (trx) => {
    await trx.deleteFrom('grants').where('principal_type', '=', 'group').where('principal_id', '=', groupId).execute();
    await trx.deleteFrom('groups').where('id', '=', groupId).execute();
  });
  accessChanged(db);
  return { id: groupId, message: `Sharing group ${group.name} deleted` };
}

async function memberRows(db: Executor, groupId: string, keyId?: string): Promise<GroupMember[]> {
  let query = db
    .selectFrom('group_members')
    .innerJoin('api_keys', 'api_keys.id', 'group_members.key_id')
    .select(['group_members.group_id', 'group_members.key_id', 'api_keys.name', 'group_members.added_at'])
    .where('group_members.group_id', '=', groupId);
  if (keyId) query = query.where('group_members.key_id', '=', keyId);
  const rows = await query.orderBy('group_members.added_at').orderBy('group_members.key_id').execute();
  return rows.map((r) => ({ group_id: r.group_id, member_id: r.key_id, name: r.name, added_at: iso(r.added_at)! }));
}

export async function listGroupMembers(db: Db, perms: Permissions, groupId: string): Promise<{ members: GroupMember[]; total: number }> {
  await visibleGroup(db, perms, groupId);
  const members = await memberRows(db, groupId);
  return { members, total: members.length };
}

/** `PUT /groups/{id}/members/{key_id}`: idempotent; a revoked key cannot join (409). */
export async function addGroupMember(db: Db, perms: Permissions, groupId: string, keyId: string): Promise<GroupMember> {
  await visibleGroup(db, perms, groupId);
  perms.requireOrgAdmin(MANAGE);
  const member = await db.transaction().execute(async (trx) => {
    const group = await trx.selectFrom('groups').select('id').where('id', '=', groupId).forShare().executeTakeFirst();
    if (!group) throw notFound('Group', groupId);
    const key = await trx
      .selectFrom('api_keys')
      .select(['id', 'name', 'revoked_at'])
      .where('id', '=', keyId)
      .where('org_id', '=', perms.actor.orgId)
      .forShare()
      .executeTakeFirst();
    if (!key) throw notFound('API key', keyId);
    if (key.revoked_at) throw conflict('key_revoked', `API key ${named(key.name, keyId)} has been revoked`);
    await trx
      .insertInto('group_members')
      .values({ group_id: groupId, key_id: keyId })
      .onConflict((oc) => oc.columns(['group_id', 'key_id']).doNothing())
      .execute();
    return (await memberRows(trx, groupId, keyId))[0];
  });
  accessChanged(db);
  return member;
}

export async function removeGroupMember(db: Db, perms: Permissions, groupId: string, keyId: string): Promise<{ id: string; message: string }> {
  const group = await visibleGroup(db, perms, groupId);
  perms.requireOrgAdmin(MANAGE);
  const removed = await db.deleteFrom('group_members').where('group_id', '=', groupId).where('key_id', '=', keyId).executeTakeFirst();
  if (Number(removed.numDeletedRows) === 0) throw missing(`API key ${keyId} is not a member of sharing group ${group.name}`);
  accessChanged(db);
  return { id: keyId, message: `API key ${keyId} removed from sharing group ${group.name}` };
}
