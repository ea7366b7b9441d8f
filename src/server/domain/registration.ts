/**
 * How an agent process gets to work (README "Delivery to agents, in short"): a runtime (or a person) issues a
 * registration token for a version; the process registers with it and no key, which records where
 * it listens (`acp_url`) and answers its runtime key, a key confined to its own agent. Deliveries
 * to the version are signed with the version's signing secret.
 */
import { randomBytes } from 'node:crypto';
import { sql, type Kysely } from 'kysely';
import type { Database, Db } from '../store/db.js';
import { newId } from '../store/ids.js';
import { conflict, forbidden, invalid, unauthenticated, namedVersion, notFound } from './errors.js';
import { accessChanged } from '../auth/invalidation.js';
import type { Permissions } from '../auth/policy.js';
import { generateSecret, hashSecret, secretPrefix } from '../auth/secrets.js';
import { versionById } from './lookup.js';
import { applyVersionHappening, type RegisterInput, type RegisterResult } from './lifecycle.js';
import { releaseLeases, WRITER_GONE_REASON } from './deliveries.js';
import { interruptStreams } from './conversation.js';
import { isRefusal, next, type VersionHappening } from './version-lifecycle.js';
import { LIVE_AGENT_STATUS, type VersionStatus } from '../../contract/lifecycle.js';

type Executor = Kysely<Database>;

const TOKEN_PREFIX = 'agrt_';
/** A one-time token's default life: long enough for a slow start, short enough to be worthless when leaked later. */
export const REGISTRATION_TOKEN_TTL_MS = 60 * 60 * 1000;

/** SHA-256, like API keys: the token itself is never stored. */
const hashToken = hashSecret;

/**
 * A new registration token for `versionId`, stored hashed. One-time unless `reusable` (a
 * kubernetes Deployment's pods all register with the Secret's one token).
 */
export async function issueRegistrationToken(
  db: Db,
  versionId: string,
  options: { reusable?: boolean; ttlMs?: number; createdByKeyId?: string | null } = {},
): Promise<string> {
  return (await insertToken(db, versionId, options)).token;
}

async function insertToken(db: Executor, versionId: string, options: { reusable?: boolean; ttlMs?: number; createdByKeyId?: string | null }) {
  const token = TOKEN_PREFIX + randomBytes(32).toString('base64url');
  const expiresAt = new Date(Date.now() + (options.ttlMs ?? REGISTRATION_TOKEN_TTL_MS));
  await db
    .insertInto('registration_tokens')
    .values({
      token_hash: hashToken(token),
      version_id: versionId,
      reusable: options.reusable ?? false,
      expires_at: expiresAt,
      used_at: null,
      created_by_key_id: options.createdByKeyId ?? null,
      created_at: new Date(),
    })
    .execute();
  return { token, expiresAt };
}

/** The version's signing secret (32 random bytes, hex), created on first use. */
export async function signingSecretFor(db: Db | Executor, versionId: string): Promise<string> {
  const fresh = randomBytes(32).toString('hex');
  const row = await sql<{ signing_secret: string }>`
    UPDATE versions SET signing_secret = COALESCE(signing_secret, ${fresh})
    WHERE id = ${versionId} RETURNING signing_secret`.execute(db);
  if (!row.rows[0]) throw notFound(`Version ${versionId}`);
  return row.rows[0].signing_secret;
}

/**
 * A replica of `versionId` stopped (its process exited): deliveries stop going to it, what it held
 * leased goes out again (to its restarted successor or another replica), and its runtime key is
 * revoked.
 */
export async function markReplicaGone(db: Db, versionId: string, acpUrl: string): Promise<void> {
  const released = await db.transaction().execute(async (trx) => {
    const gone = await trx
      .updateTable('version_replicas')
      .set({ live: false, last_seen_at: new Date() })
      .where('version_id', '=', versionId)
      .where('replica_key', '=', acpUrl)
      .returning('runtime_key_id')
      .executeTakeFirst();
    if (gone?.runtime_key_id)
      await trx
        .updateTable('api_keys')
        .set({ revoked_at: new Date(), updated_at: new Date() })
        .where('id', '=', gone.runtime_key_id)
        .where('revoked_at', 'is', null)
        .execute();
    return releaseLeases(trx, versionId, acpUrl);
  });
  await interruptStreams(db, released, WRITER_GONE_REASON);
}

/**
 * `POST /versions/{id}/replicas/deregister`: the process at `acpUrl` is leaving (`agentctl dev` on
 * exit). As `markReplicaGone`, and its key stops authenticating at once. The caller is the
 * replica's own runtime key, or a key with write on the agent.
 */
export async function deregisterReplica(
  db: Db,
  perms: Permissions,
  versionId: string,
  acpUrl: string,
): Promise<{ version_id: string; acp_url: string; was_live: boolean; runtime_key_revoked: boolean }> {
  const runtime = perms.actor.runtimeAgentId !== undefined;
  const version = await versionById(db, perms, runtime ? 'read' : 'write', versionId);
  const replica = await db
    .selectFrom('version_replicas')
    .select(['live', 'runtime_key_id'])
    .where('version_id', '=', version.id)
    .where('replica_key', '=', acpUrl)
    .executeTakeFirst();
  if (!replica) throw notFound(`Replica ${acpUrl} of version ${namedVersion(version)}`);
  if (runtime && replica.runtime_key_id !== perms.actor.keyId)
    throw forbidden(`A runtime key may deregister only its own replica; ${acpUrl} registered with another key`);
  if (replica.live) await markReplicaGone(db, version.id, acpUrl);
  else if (replica.runtime_key_id)
    await db
      .updateTable('api_keys')
      .set({ revoked_at: new Date(), updated_at: new Date() })
      .where('id', '=', replica.runtime_key_id)
      .where('revoked_at', 'is', null)
      .execute();
  // Cached key lookups see the revocation now.
  accessChanged(db);
  return { version_id: version.id, acp_url: acpUrl, was_live: replica.live, runtime_key_revoked: replica.runtime_key_id !== null };
}

/** What each reported status means for the version. */
const REPORTS: Record<RegisterInput['status'], VersionHappening> = { ACTIVE: 'ready', UNHEALTHY: 'unhealthy', FAILED: 'failed' };

/**
 * `POST /versions/register`: what the runtime reports about a version. DEPLOYING -> ACTIVE (the
 * previous version hands over), ACTIVE <-> UNHEALTHY, DEPLOYING -> FAILED (tasks return to the
 * version still serving).
 */
export async function registerVersion(db: Db, perms: Permissions, input: RegisterInput & { acp_url?: string }): Promise<RegisterResult> {
  return db.transaction().execute(async (trx) => {
    const found = await versionById(trx, perms, 'write', input.version_id);
    const result = await applyVersionHappening(trx, found.branch_id, found.id, REPORTS[input.status], input, `it cannot become ${input.status}`);
    // A runtime without a driver (`--runtime none`) tells where its agent listens.
    if (input.acp_url && input.status !== 'FAILED') await recordReplica(trx, found.id, input.acp_url, null);
    return result;
  });
}

/**
 * Records a live replica of the version listening at `acpUrl` (one replica per URL: a process
 * restarted on the same address replaces the old record, and the old runtime key is revoked).
 */
export async function recordReplica(trx: Executor, versionId: string, acpUrl: string, runtimeKeyId: string | null): Promise<void> {
  const previous = await trx
    .selectFrom('version_replicas')
    .select('runtime_key_id')
    .where('version_id', '=', versionId)
    .where('replica_key', '=', acpUrl)
    .forUpdate()
    .executeTakeFirst();
  if (previous?.runtime_key_id && previous.runtime_key_id !== runtimeKeyId) {
    await trx
      .updateTable('api_keys')
      .set({ revoked_at: new Date(), updated_at: new Date() })
      .where('id', '=', previous.runtime_key_id)
      .where('revoked_at', 'is', null)
      .execute();
  }
  const now = new Date();
  await trx
    .insertInto('version_replicas')
    .values({ version_id: versionId, replica_key: acpUrl, acp_url: acpUrl, runtime_key_id: runtimeKeyId, registered_at: now, last_seen_at: now, live: true })
    .onConflict((oc) =>
      oc
        .columns(['version_id', 'replica_key'])
        .doUpdateSet({ acp_url: acpUrl, runtime_key_id: runtimeKeyId, registered_at: now, last_seen_at: now, live: true }),
    )
    .execute();
  // Work that backed off while the version had no reachable replica goes out now, not at its next
  // backoff step (which can be half a minute away).
  await sql`
    UPDATE deliveries d SET next_attempt_at = now(), updated_at = now()
    FROM tasks t
    WHERE d.task_id = t.id AND t.current_version_id = ${versionId} AND d.status = 'pending' AND d.next_attempt_at > now()`.execute(trx);
}

/**
 * Every replica of a version is gone (the runtime stopped it, or a server started after the one that
 * ran it died): nothing is sent to them any more, and what they held leased goes out again.
 */
export async function markVersionReplicasGone(db: Db, versionId: string): Promise<void> {
  const released = await db.transaction().execute(async (trx) => {
    const gone = await trx
      .updateTable('version_replicas')
      .set({ live: false, last_seen_at: new Date() })
      .where('version_id', '=', versionId)
      .where('live', '=', true)
      .returning('runtime_key_id')
      .execute();
    const keys = gone.map((g) => g.runtime_key_id).filter((k): k is string => k !== null);
    if (keys.length)
      await trx
        .updateTable('api_keys')
        .set({ revoked_at: new Date(), updated_at: new Date() })
        .where('id', 'in', keys)
        .where('revoked_at', 'is', null)
        .execute();
    return releaseLeases(trx, versionId, null);
  });
  await interruptStreams(db, released, WRITER_GONE_REASON);
}

export interface TokenRegistration {
  version_id: string;
  branch_id?: string;
  acp_url?: string;
  registration_token: string;
  registration_metadata?: Record<string, unknown>;
}

const badToken = (detail: string) => unauthenticated('invalid_registration_token', detail);

/** Whether a process of a version in `status` may (re)register: where the lifecycle has a `registered` row. */
const registrable = (status: VersionStatus) => !isRefusal(next(status, 'registered'));

/**
 * `POST /versions/register` with a registration token and no key: checks the token (unused,
 * unexpired, for this version and branch), records the replica, creates its runtime key and makes a
 * DEPLOYING version ACTIVE (the previous one hands over). Every token problem is a 401 naming it.
 */
export async function registerWithToken(db: Db, input: TokenRegistration): Promise<RegisterResult & { agent_api_key: string }> {
  if (!input.acp_url) throw invalid(['body', 'acp_url'], 'A registration with a token needs acp_url: where the agent listens', 'missing');
  return db.transaction().execute(async (trx) => {
    const token = await trx
      .selectFrom('registration_tokens')
      .selectAll()
      .where('token_hash', '=', hashToken(input.registration_token))
      .forUpdate()
      .executeTakeFirst();
    if (!token) throw badToken('Unknown registration token');
    if (token.version_id !== input.version_id) throw badToken(`The registration token is not for version ${input.version_id}`);
    if (new Date(token.expires_at).getTime() <= Date.now()) throw badToken('The registration token has expired; issue a new one');
    if (token.used_at && !token.reusable) throw badToken('The registration token has already been used; issue a new one');
    const version = await trx
      .selectFrom('versions')
      .innerJoin('agents', 'agents.id', 'versions.agent_id')
      .innerJoin('namespaces', 'namespaces.id', 'agents.namespace_id')
      .select([
        'versions.id',
        'versions.number',
        'versions.branch_id',
        'versions.status',
        'versions.agent_id',
        'agents.name as agent_name',
        'agents.status as agent_status',
        'namespaces.org_id',
      ])
      .where('versions.id', '=', input.version_id)
      .executeTakeFirstOrThrow();
    if (input.branch_id !== undefined && input.branch_id !== version.branch_id) throw badToken(`The registration token is not for branch ${input.branch_id}`);
    if (version.agent_status !== LIVE_AGENT_STATUS) throw badToken(`The agent of version ${version.id} was deleted`);
    if (!registrable(version.status))
      throw conflict('invalid_transition', `Version ${namedVersion(version)} is ${version.status}; its processes cannot register`);
    await trx.updateTable('registration_tokens').set({ used_at: new Date() }).where('token_hash', '=', token.token_hash).execute();

    const secret = generateSecret();
    const keyId = newId('apiKey');
    const now = new Date();
    await trx
      .insertInto('api_keys')
      .values({
        id: keyId,
        org_id: version.org_id,
        name: `runtime ${version.agent_name} ${version.id}`,
        description: `Runtime key of the replica at ${input.acp_url}`,
        key_hash: hashSecret(secret),
        key_prefix: secretPrefix(secret),
        created_by_key_id: null,
        expires_at: null,
        revoked_at: null,
        last_used_at: null,
        runtime_agent_id: version.agent_id,
        created_at: now,
        updated_at: now,
      })
      .execute();
    await recordReplica(trx, version.id, input.acp_url!, keyId);
    // The handlers the agent has (the ADK declares them): a move to this version runs onMigrate only
    // when it has one; a rehearsal replays events only to an agent with onEvent. Before the happening
    // below, which may move tasks here.
    const handlers = input.registration_metadata?.handlers;
    if (Array.isArray(handlers) && handlers.every((h) => typeof h === 'string'))
      await trx
        .updateTable('versions')
        .set({ handlers: JSON.stringify(handlers) as never })
        .where('id', '=', version.id)
        .execute();

    const result = await applyVersionHappening(
      trx,
      version.branch_id,
      version.id,
      'registered',
      { registration_metadata: input.registration_metadata },
      'its processes cannot register',
    );
    return { ...result, agent_api_key: secret };
  });
}

/** `POST /versions/{id}/registration-tokens`: for an agent started by hand (write on the agent). */
export async function createRegistrationToken(db: Db, perms: Permissions, versionId: string): Promise<{ registration_token: string; expires_at: string }> {
  const version = await versionById(db, perms, 'write', versionId);
  if (!registrable(version.status))
    throw conflict('invalid_transition', `Version ${namedVersion(version)} is ${version.status}; its processes cannot register`);
  const { token, expiresAt } = await insertToken(db, versionId, { createdByKeyId: perms.actor.keyId || null });
  return { registration_token: token, expires_at: expiresAt.toISOString() };
}

/** `GET /versions/{id}/signing-secret`: admin on the agent; the only response that carries it. */
export async function getSigningSecret(db: Db, perms: Permissions, versionId: string): Promise<{ signing_secret: string }> {
  await versionById(db, perms, 'admin', versionId);
  return { signing_secret: await signingSecretFor(db, versionId) };
}
