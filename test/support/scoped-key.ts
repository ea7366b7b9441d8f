import { generateSecret, hashSecret, secretPrefix } from '../../src/server/auth/secrets.js';
import { newId } from '../../src/server/store/ids.js';
import type { TestService } from './service.js';

export type ScopeSpec = { resource_type: 'org' | 'namespace' | 'agent' | 'project'; resource_id: string; role: string };

/**
 * A key in the bootstrap org holding exactly `scopes`, written straight into the store (the tests of
 * resource endpoints should not depend on the key endpoints). `executor` is stored as the spec says:
 * viewer, with the legacy role kept.
 */
export async function scopedKey(svc: TestService, scopes: ScopeSpec[], name = 'scoped'): Promise<string> {
  const db = svc.store.db;
  const org = await db.selectFrom('orgs').select('id').where('name', '=', 'default').executeTakeFirstOrThrow();
  const secret = generateSecret();
  const keyId = newId('apiKey');
  await db
    .insertInto('api_keys')
    .values({
      id: keyId,
      org_id: org.id,
      name,
      key_hash: hashSecret(secret),
      key_prefix: secretPrefix(secret),
      created_by_key_id: null,
      expires_at: null,
      revoked_at: null,
      last_used_at: null,
    })
    .execute();
  if (scopes.length > 0) {
    await db
      .insertInto('grants')
      .values(
        scopes.map((s) => ({
          principal_type: 'key' as const,
          principal_id: keyId,
          resource_type: s.resource_type,
          resource_id: s.resource_id,
          role: s.role === 'executor' ? 'viewer' : s.role,
          legacy_role: s.role === 'executor' ? 'executor' : null,
          source: 'scope' as const,
        })),
      )
      .execute();
  }
  return secret;
}

/** The id of the bootstrap org's `default` namespace. */
export async function defaultNamespaceId(svc: TestService): Promise<string> {
  // Slugs are unique per org (migration 005): the bootstrap org's.
  const org = await orgId(svc);
  return (await svc.store.db.selectFrom('namespaces').select('id').where('org_id', '=', org).where('slug', '=', 'default').executeTakeFirstOrThrow()).id;
}

export async function orgId(svc: TestService): Promise<string> {
  return (await svc.store.db.selectFrom('orgs').select('id').where('name', '=', 'default').executeTakeFirstOrThrow()).id;
}
