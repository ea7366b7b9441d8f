import type { Kysely } from 'kysely';
import type { Database } from '../store/db.js';
import type { Actor } from './authenticate.js';
import { markUnsettled } from './invalidation.js';

/**
 * What a key creates it owns: the key and each of its sharing groups receive `owner` on the new
 * agent or project, in the creating transaction. With no groups, only that key (and org admins,
 * namespace admins) can reach it.
 */
export async function grantOwnership(trx: Kysely<Database>, actor: Actor, resourceType: 'agent' | 'project', resourceId: string): Promise<void> {
  if (!actor.keyId) return;
  const groups = await trx.selectFrom('group_members').select('group_id').where('key_id', '=', actor.keyId).execute();
  const rows = [
    { principal_type: 'key' as const, principal_id: actor.keyId },
    ...groups.map((g) => ({ principal_type: 'group' as const, principal_id: g.group_id })),
  ].map((p) => ({ ...p, resource_type: resourceType, resource_id: resourceId, role: 'owner', legacy_role: null, source: 'owner' as const }));
  const inserted = await trx.insertInto('grants').values(rows).returning('id').execute();
  // Every key that gains access: the creator and each member of its groups.
  const affected = new Set([actor.keyId]);
  if (groups.length > 0) {
    const members = await trx
      .selectFrom('group_members')
      .select('key_id')
      .where(
        'group_id',
        'in',
        groups.map((g) => g.group_id),
      )
      .execute();
    for (const m of members) affected.add(m.key_id);
  }
  markUnsettled(
    affected,
    inserted.map((r) => String(r.id)),
  );
}
