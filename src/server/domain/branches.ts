import type { BranchList } from '../../contract/endpoints.js';
import type { Branch, VersionEvent } from '../../contract/resources.js';
import type { Db } from '../store/db.js';
import type { Permissions } from '../auth/policy.js';
import { toBranch, toVersionEvent, type BranchRow } from '../store/mappers.js';
import { agentByPath, branchById } from './lookup.js';
import { selectBranchRows } from './lifecycle.js';
import { environmentByName } from './environments.js';
import { anyRuleMatches } from './branch-rules.js';

export type AgentRef = { namespace_slug: string; agent_name: string };

/** Most recently updated first. */
function branchRowsOf(db: Db, agentId: string, includeRetired: boolean) {
  let q = selectBranchRows(db).where('b.agent_id', '=', agentId);
  if (!includeRetired) q = q.where('b.retired_at', 'is', null);
  return q.orderBy('b.updated_at', 'desc').orderBy('b.id', 'desc');
}

/** `GET /agents/{ns}/{agent}/branches`: retired branches only with `include_retired`. */
export async function listAgentBranches(db: Db, perms: Permissions, ref: AgentRef, includeRetired: boolean): Promise<BranchList> {
  const agent = await agentByPath(db, perms, 'read', ref.namespace_slug, ref.agent_name);
  const rows = (await branchRowsOf(db, agent.id, includeRetired).execute()) as BranchRow[];
  return { branches: rows.map(toBranch), total: rows.length };
}

/**
 * `GET /agents/{ns}/{agent}/environments/{env}/branches`: the non-retired branches any of the
 * environment's rules match (`*` matches them all), `updated_at` descending.
 */
export async function listEnvironmentBranches(db: Db, perms: Permissions, ref: AgentRef, envName: string): Promise<BranchList> {
  const agent = await agentByPath(db, perms, 'read', ref.namespace_slug, ref.agent_name);
  const env = await environmentByName(db, agent.id, ref, envName);
  const rules = env.branch_rules as string[];
  const rows = (await branchRowsOf(db, agent.id, false).execute()) as BranchRow[];
  const matching = rows.filter((row) => anyRuleMatches(rules, row.git_branch));
  return { branches: matching.map(toBranch), total: matching.length };
}

export async function getBranch(db: Db, perms: Permissions, branchId: string): Promise<Branch> {
  await branchById(db, perms, 'read', branchId);
  const row = await selectBranchRows(db).where('b.id', '=', branchId).executeTakeFirstOrThrow();
  return toBranch(row as BranchRow);
}

/** `GET /branches/{id}/events`: every event of the branch (its versions' and its own) in sequence order. */
export async function listBranchEvents(db: Db, perms: Permissions, branchId: string): Promise<{ events: VersionEvent[]; total: number }> {
  const branch = await branchById(db, perms, 'read', branchId);
  const rows = await db.selectFrom('version_events').selectAll().where('branch_id', '=', branch.id).orderBy('sequence').execute();
  return { events: rows.map(toVersionEvent), total: rows.length };
}
