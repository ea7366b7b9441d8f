// Agent secrets (README "Secrets"): set, list and delete through the API (never a value in an
// answer), and what the runtime reads: the plaintext environment of a version, and a digest of the
// revisions that apply to it (which changes when a secret does, so its replicas restart).
import { createHash } from 'node:crypto';
import { sql, type Kysely, type Selectable } from 'kysely';
import type { AgentSecret } from '../../contract/secrets.js';
import { SECRET_VALUE_MAX_BYTES } from '../../contract/enums.js';
import { PROCESS_ENV } from '../../contract/acp.js';
import type { AgentSecretsTable, Database, Db } from '../store/db.js';
import type { Permissions } from '../auth/policy.js';
import { newId } from '../store/ids.js';
import { iso } from '../store/mappers.js';
import { isUniqueViolation } from '../store/sql.js';
import { MasterKeyError, openValue, rewrap, sealValue, type MasterKey } from '../secrets/keyring.js';
import { conflict, invalid, notFound, tooLarge } from './errors.js';
import { agentByPath } from './lookup.js';
import { environmentByName } from './environments.js';
import { resolveEnvironmentFor } from './branch-rules.js';

type AgentRef = { namespace_slug: string; agent_name: string };
type SecretRow = Selectable<AgentSecretsTable>;

/** Names the platform sets itself (README "Running agents"): a secret cannot shadow them. */
const RESERVED = new Set<string>(Object.values(PROCESS_ENV));
const reservedName = (name: string) => RESERVED.has(name) || name.toUpperCase().startsWith('AGENTCTL_');

function toAgentSecret(row: SecretRow, environment: string | null): AgentSecret {
  return {
    id: row.id,
    agent_id: row.agent_id,
    name: row.name,
    scope: row.environment_id ? 'environment' : 'agent',
    environment,
    revision: row.revision,
    created_at: iso(row.created_at)!,
    updated_at: iso(row.updated_at)!,
  };
}

function scopeLabel(ref: AgentRef, name: string, environment: string | null | undefined): string {
  return `Secret ${name} of agent ${ref.namespace_slug}/${ref.agent_name}${environment ? ` in environment ${environment}` : ''}`;
}

/**
 * `PUT .../secrets/{name}`: creates the secret, or replaces its value (a new data key, the revision
 * one higher). Write on the agent: its editors and owners, and admins of its namespace or org.
 */
export async function setSecret(
  db: Db,
  master: MasterKey,
  perms: Permissions,
  ref: AgentRef,
  name: string,
  input: { value: string; environment?: string | null },
): Promise<AgentSecret> {
  const agent = await agentByPath(db, perms, 'write', ref.namespace_slug, ref.agent_name);
  if (reservedName(name)) {
    throw invalid(['path', 'secret_name'], `${name} is set by the platform (AGENTCTL_* and PORT): choose another name`);
  }
  const bytes = Buffer.byteLength(input.value, 'utf8');
  if (bytes > SECRET_VALUE_MAX_BYTES) {
    throw tooLarge('secret_too_large', `A secret value is at most ${SECRET_VALUE_MAX_BYTES} bytes; this one is ${bytes}`);
  }
  const envName = input.environment ?? null;
  const env = envName === null ? undefined : await environmentByName(db, agent.id, ref, envName);
  try {
    const row = await db.transaction().execute(async (trx) => {
      // One writer per agent at a time: the read-then-write below never races another set.
      await trx.selectFrom('agents').select('id').where('id', '=', agent.id).forNoKeyUpdate().execute();
      const existing = await scopeQuery(trx, agent.id, name, env?.id ?? null).executeTakeFirst();
      const id = existing?.id ?? newId('secret');
      const sealed = sealValue(master, id, input.value);
      if (existing) {
        return trx
          .updateTable('agent_secrets')
          .set({ ...sealed, revision: sql<number>`revision + 1`, updated_at: sql<Date>`now()` })
          .where('id', '=', id)
          .returningAll()
          .executeTakeFirstOrThrow();
      }
      return trx
        .insertInto('agent_secrets')
        .values({ id, agent_id: agent.id, environment_id: env?.id ?? null, name, ...sealed })
        .returningAll()
        .executeTakeFirstOrThrow();
    });
    return toAgentSecret(row, envName);
  } catch (error) {
    if (isUniqueViolation(error)) throw conflict('secret_exists', `${scopeLabel(ref, name, envName)} was created at the same moment: set it again`);
    throw error;
  }
}

function scopeQuery(db: Db | Kysely<Database>, agentId: string, name: string, environmentId: string | null) {
  const query = db.selectFrom('agent_secrets').selectAll().where('agent_id', '=', agentId).where('name', '=', name);
  return environmentId === null ? query.where('environment_id', 'is', null) : query.where('environment_id', '=', environmentId);
}

/** `GET .../secrets`: names, scopes and times (read on the agent), agent-wide ones first, by name. */
export async function listSecrets(db: Db, perms: Permissions, ref: AgentRef): Promise<{ secrets: AgentSecret[]; total: number }> {
  const agent = await agentByPath(db, perms, 'read', ref.namespace_slug, ref.agent_name);
  const rows = await db
    .selectFrom('agent_secrets as s')
    .leftJoin('environments as e', 'e.id', 's.environment_id')
    .selectAll('s')
    .select('e.name as environment_name')
    .where('s.agent_id', '=', agent.id)
    .orderBy(sql`s.environment_id IS NOT NULL`)
    .orderBy('e.name')
    .orderBy('s.name')
    .execute();
  return { secrets: rows.map((row) => toAgentSecret(row, row.environment_name)), total: rows.length };
}

/** `DELETE .../secrets/{name}[?environment=]`: write on the agent; 404 when that scope has no such secret. */
export async function deleteSecret(
  db: Db,
  perms: Permissions,
  ref: AgentRef,
  name: string,
  environment: string | undefined,
): Promise<{ id: string; message: string }> {
  const agent = await agentByPath(db, perms, 'write', ref.namespace_slug, ref.agent_name);
  const env = environment === undefined ? undefined : await environmentByName(db, agent.id, ref, environment);
  const row = await scopeQuery(db, agent.id, name, env?.id ?? null).executeTakeFirst();
  if (!row) throw notFound(scopeLabel(ref, name, environment));
  await db.deleteFrom('agent_secrets').where('id', '=', row.id).execute();
  return { id: row.id, message: `${scopeLabel(ref, name, environment)} deleted` };
}

// ---- the runtime's side -------------------------------------------------------------------------

/**
 * The secret rows that apply to each version: the agent-wide ones, each replaced by the one of the
 * same name scoped to the environment the version's branch falls in (its branch rules).
 */
async function applicableRows(db: Db, versionIds: readonly string[]): Promise<Map<string, SecretRow[]>> {
  const result = new Map<string, SecretRow[]>(versionIds.map((id) => [id, []]));
  if (versionIds.length === 0) return result;
  const versions = await db
    .selectFrom('versions as v')
    .innerJoin('branches as b', 'b.id', 'v.branch_id')
    .select(['v.id', 'v.agent_id', 'b.git_branch'])
    .where('v.id', 'in', [...versionIds])
    .execute();
  const agentIds = [...new Set(versions.map((v) => v.agent_id))];
  if (agentIds.length === 0) return result;
  const rows = await db.selectFrom('agent_secrets').selectAll().where('agent_id', 'in', agentIds).orderBy('name').execute();
  if (rows.length === 0) return result;
  const envs = await db.selectFrom('environments').select(['id', 'agent_id', 'branch_rules']).where('agent_id', 'in', agentIds).execute();
  for (const version of versions) {
    const candidates = envs.filter((e) => e.agent_id === version.agent_id).map((e) => ({ id: e.id, branch_rules: e.branch_rules as string[] }));
    const envId = resolveEnvironmentFor(candidates, version.git_branch)?.id;
    const byName = new Map<string, SecretRow>();
    for (const row of rows) {
      if (row.agent_id !== version.agent_id) continue;
      if (row.environment_id === null && !byName.has(row.name)) byName.set(row.name, row);
      else if (row.environment_id !== null && row.environment_id === envId) byName.set(row.name, row);
    }
    result.set(version.id, [...byName.values()]);
  }
  return result;
}

/** Which secrets (ids and revisions, never values) a version gets: equal digests, equal environments. */
function digestOf(rows: readonly SecretRow[]): string {
  const hash = createHash('sha256');
  for (const row of rows) hash.update(`${row.name}\0${row.id}\0${row.revision}\n`);
  return hash.digest('hex').slice(0, 32);
}

/** Each version's secrets digest (no decryption): the runtime compares it with what its replicas were started with. */
export async function secretDigests(db: Db, versionIds: readonly string[]): Promise<Map<string, string>> {
  const rows = await applicableRows(db, versionIds);
  return new Map([...rows].map(([id, list]) => [id, digestOf(list)]));
}

/** The plaintext environment of a version's processes, and its digest. The runtime's only, in memory. */
export async function versionSecretEnv(db: Db, master: MasterKey, versionId: string): Promise<{ env: Record<string, string>; digest: string }> {
  const rows = (await applicableRows(db, [versionId])).get(versionId) ?? [];
  const env: Record<string, string> = {};
  for (const row of rows) env[row.name] = openValue(master, row.id, row);
  return { env, digest: digestOf(rows) };
}

/** The master key ids the stored secrets were sealed with (distinct): what a starting server checks its key against. */
export async function storedMasterKeyIds(db: Db): Promise<string[]> {
  const rows = await db.selectFrom('agent_secrets').select('key_id').distinct().execute();
  return rows.map((r) => r.key_id);
}

/**
 * Re-wraps every secret's data key from `from` to `to` in one transaction (values stay as they are
 * encrypted). Rows already under `to` (a rotation run again after an interruption) are left alone.
 */
export async function rewrapSecrets(db: Db, from: MasterKey, to: MasterKey): Promise<number> {
  return db.transaction().execute(async (trx) => {
    const rows = await trx.selectFrom('agent_secrets').select(['id', 'wrapped_key', 'key_id']).orderBy('id').forUpdate().execute();
    let count = 0;
    for (const row of rows) {
      if (row.key_id === to.id) continue;
      if (row.key_id !== from.id)
        throw new MasterKeyError(`Secret ${row.id} was sealed with master key ${row.key_id}, which is neither the current key (${from.id}) nor the new one`);
      await trx
        .updateTable('agent_secrets')
        .set({ wrapped_key: rewrap(from, to, row.id, row.wrapped_key), key_id: to.id })
        .where('id', '=', row.id)
        .execute();
      count++;
    }
    return count;
  });
}
