/** Reading versions: lists, one by id or by reference (vN, git-hash prefix, ver_ id), its events. */
import { sql } from 'kysely';
import type { VersionList } from '../../contract/endpoints.js';
import type { Version, VersionEvent } from '../../contract/resources.js';
import type { VersionStatus } from '../../contract/lifecycle.js';
import type { Db } from '../store/db.js';
import type { Permissions } from '../auth/policy.js';
import { ValidationFailure, conflict, missing, notFound } from './errors.js';
import { parseVersionRef, VERSION_REF_FORMS, versionLabel } from '../../contract/version-ref.js';
import { toVersion, toVersionEvent } from '../store/mappers.js';
import { inCallerOrg, agentByPath, branchById, versionById } from './lookup.js';
import type { AgentRef } from './branches.js';

/** Versions newest `deployed_at` first (then id, so equal times keep a stable order), at most `limit`. */
function versionsQuery(db: Db, where: { branchId?: string; agentId?: string; status?: VersionStatus }) {
  let q = db.selectFrom('versions');
  if (where.branchId) q = q.where('branch_id', '=', where.branchId);
  if (where.agentId) q = q.where('agent_id', '=', where.agentId);
  if (where.status) q = q.where('status', '=', where.status);
  return q;
}

async function versionPage(db: Db, where: Parameters<typeof versionsQuery>[1], limit: number): Promise<{ total: number; versions: Version[] }> {
  // One query: the window count is the whole filtered list's size (version lists have no offset,
  // so an empty page means an empty list).
  const rows = await versionsQuery(db, where)
    .selectAll()
    .select(sql<number>`count(*) OVER ()::int`.as('total'))
    .orderBy('deployed_at', 'desc')
    .orderBy('id', 'desc')
    .limit(limit)
    .execute();
  return { total: rows[0]?.total ?? 0, versions: rows.map(({ total: _total, ...row }) => toVersion(row)) };
}

/** `GET /branches/{id}/versions`: `total` counts every version of the branch, not just this page. */
export async function listBranchVersions(db: Db, perms: Permissions, branchId: string, limit: number): Promise<VersionList> {
  const branch = await branchById(db, perms, 'read', branchId);
  return { ...(await versionPage(db, { branchId: branch.id }, limit)), branch_id: branch.id };
}

/**
 * `GET /agents/{ns}/{agent}/versions`: across all branches, or one git branch (404 when the agent
 * has no such branch), optionally one status. `branch_id` is set only when `branch` is given.
 */
export async function listAgentVersions(
  db: Db,
  perms: Permissions,
  ref: AgentRef,
  query: { branch?: string; status?: VersionStatus; limit: number },
): Promise<VersionList> {
  const agent = await agentByPath(db, perms, 'read', ref.namespace_slug, ref.agent_name);
  let branchId: string | null = null;
  if (query.branch !== undefined) {
    const branch = await db.selectFrom('branches').select('id').where('agent_id', '=', agent.id).where('git_branch', '=', query.branch).executeTakeFirst();
    if (!branch) throw missing(`Agent ${ref.namespace_slug}/${ref.agent_name} has no branch ${query.branch}`);
    branchId = branch.id;
  }
  const page = await versionPage(db, { agentId: agent.id, branchId: branchId ?? undefined, status: query.status }, query.limit);
  return { ...page, branch_id: branchId };
}

export async function getVersion(db: Db, perms: Permissions, versionId: string): Promise<Version> {
  const { namespace_id: _ns, agent_status: _status, ...row } = await versionById(db, perms, 'read', versionId);
  return toVersion(row);
}

/** `GET /versions/{id}/events`: the version's lifecycle events in sequence order. */
export async function listVersionEvents(db: Db, perms: Permissions, versionId: string): Promise<{ events: VersionEvent[]; total: number }> {
  const version = await versionById(db, perms, 'read', versionId);
  const rows = await db.selectFrom('version_events').selectAll().where('version_id', '=', version.id).orderBy('sequence').execute();
  return { events: rows.map(toVersionEvent), total: rows.length };
}

/** At most this many candidates are named when a git-hash prefix is ambiguous. */
const AMBIGUOUS_SHOWN = 5;

/**
 * `GET /agents/{ns}/{agent}/versions/{ref}`: the agent's version named by `vN`, a git-hash prefix or
 * a `ver_` id, in one query (the agent left-joined with its matching versions, so "no such agent"
 * and "no such version" stay apart). A prefix matching several versions is 409 `ambiguous_version`,
 * naming them with their numbers and deploy times (two deploys of one commit differ only there).
 */
export async function resolveAgentVersion(db: Db, perms: Permissions, ref: AgentRef & { ref: string }): Promise<Version> {
  const parsed = parseVersionRef(ref.ref);
  if (!parsed) throw new ValidationFailure([{ loc: ['path', 'ref'], msg: `must be ${VERSION_REF_FORMS}`, type: 'value_error' }]);
  const describe = `${ref.namespace_slug}/${ref.agent_name}`;
  const rows = await db
    .selectFrom('agents as a')
    .innerJoin('namespaces as n', 'n.id', 'a.namespace_id')
    .leftJoin('versions as v', (join) => {
      const on = join.onRef('v.agent_id', '=', 'a.id');
      if (parsed.kind === 'number') return on.on('v.number', '=', parsed.number);
      if (parsed.kind === 'id') return on.on('v.id', '=', parsed.id);
      return on.on(sql<string>`lower(v.git_hash)`, 'like', `${parsed.prefix}%`);
    })
    .selectAll('v')
    .select(['a.id as found_agent_id', 'a.namespace_id as found_namespace_id'])
    .where('n.slug', '=', ref.namespace_slug)
    .where(inCallerOrg(perms, 'a.namespace_id'))
    .where('a.name', '=', ref.agent_name)
    .where('a.status', '=', 'ACTIVE')
    .orderBy('v.deployed_at', 'desc')
    .limit(AMBIGUOUS_SHOWN + 1)
    .execute();
  if (rows.length === 0) throw notFound(`Agent ${describe}`);
  perms.require('read', { type: 'agent', id: rows[0].found_agent_id, namespaceId: rows[0].found_namespace_id }, `Agent ${describe}`);
  const versions = rows
    .filter((row) => row.id !== null)
    .map(({ found_agent_id: _a, found_namespace_id: _n, ...row }) => toVersion(row as Parameters<typeof toVersion>[0]));
  if (versions.length === 0) {
    const what = parsed.kind === 'git_hash' ? `with a git hash starting with ${parsed.prefix}` : ref.ref;
    throw missing(`Agent ${describe} has no version ${what}`);
  }
  if (versions.length > 1) {
    const listed = versions.slice(0, AMBIGUOUS_SHOWN).map((v) => `${versionLabel(v.number)} (${v.git_hash.slice(0, 12)}, deployed ${v.deployed_at})`);
    const more = versions.length > AMBIGUOUS_SHOWN ? ', and more' : '';
    throw conflict(
      'ambiguous_version',
      `${ref.ref} matches several versions of ${describe}: ${listed.join(', ')}${more}. Name one by vN or give more of the hash.`,
    );
  }
  return versions[0];
}
