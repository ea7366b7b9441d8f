import { sql } from 'kysely';
import type { Db } from './store/db.js';
import { newId } from './store/ids.js';
import { generateSecret, hashSecret, isWellFormedSecret, secretPrefix } from './auth/secrets.js';

export interface BootstrapResult {
  /** The org-admin key's secret: only when this call created it (printed once). */
  secret?: string;
  keyId?: string;
  orgId: string;
  namespaceId: string;
}

/**
 * On an empty database: org `default`, namespace `default` and an org-admin key. Safe to call on
 * every start and from several replicas at once (advisory lock; a second caller finds the org).
 */
export async function ensureBootstrap(db: Db, wantedSecret = process.env.AGENTCTL_BOOTSTRAP_KEY): Promise<BootstrapResult> {
  if (wantedSecret && !isWellFormedSecret(wantedSecret)) {
    throw new Error('AGENTCTL_BOOTSTRAP_KEY is not a valid agentctl key (agk_ followed by 49 base62 characters with a checksum)');
  }
  return db.transaction().execute(async (trx) => {
    await sql`SELECT pg_advisory_xact_lock(742002)`.execute(trx);
    const org = await trx.selectFrom('orgs').select('id').where('name', '=', 'default').executeTakeFirst();
    if (org) {
      const ns = await trx.selectFrom('namespaces').select('id').where('org_id', '=', org.id).where('slug', '=', 'default').executeTakeFirst();
      return { orgId: org.id, namespaceId: ns?.id ?? '' };
    }
    const orgId = newId('org');
    const namespaceId = newId('namespace');
    const keyId = newId('apiKey');
    const secret = wantedSecret ?? generateSecret();
    await trx.insertInto('orgs').values({ id: orgId, name: 'default' }).execute();
    await trx.insertInto('namespaces').values({ id: namespaceId, org_id: orgId, name: 'Default', slug: 'default' }).execute();
    await trx
      .insertInto('api_keys')
      .values({
        id: keyId,
        org_id: orgId,
        name: 'bootstrap',
        description: 'Org admin key created at first start',
        key_hash: hashSecret(secret),
        key_prefix: secretPrefix(secret),
        created_by_key_id: null,
        expires_at: null,
        revoked_at: null,
        last_used_at: null,
      })
      .execute();
    await trx
      .insertInto('grants')
      .values({ principal_type: 'key', principal_id: keyId, resource_type: 'org', resource_id: orgId, role: 'admin', legacy_role: null, source: 'scope' })
      .execute();
    return { secret, keyId, orgId, namespaceId };
  });
}

/**
 * Undoes what `ensureBootstrap` created (a start that failed after it): nothing else can refer to
 * the new org yet, and with it gone the next start creates a key again and shows it.
 */
export async function removeBootstrap(db: Db, created: BootstrapResult): Promise<void> {
  if (!created.keyId) return;
  await db.transaction().execute(async (trx) => {
    await trx.deleteFrom('grants').where('principal_type', '=', 'key').where('principal_id', '=', created.keyId!).execute();
    await trx.deleteFrom('api_keys').where('id', '=', created.keyId!).execute();
    await trx.deleteFrom('namespaces').where('id', '=', created.namespaceId).execute();
    await trx.deleteFrom('orgs').where('id', '=', created.orgId).execute();
  });
}
