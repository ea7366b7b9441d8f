import { plural } from '../../contract/plural.js';
import { sql } from 'kysely';
import type { Agent } from '../../contract/resources.js';
import type { Selectable } from 'kysely';
import type { AgentsTable, Db } from '../store/db.js';
import type { Permissions } from '../auth/policy.js';
import { notFound } from './errors.js';
import { toAgent } from '../store/mappers.js';
import { appendEvent } from './events.js';
import { inCallerOrg, agentById, agentByPath, lockBranches, namespaceBySlug } from './lookup.js';
import { hideUndiscoverableNamespace } from './namespaces.js';
import { pageOffset, type PageInput } from './paging.js';
import { visibleRows } from './visibility.js';
import { recordTaskChange } from './conversation.js';
import { bulkMove } from './version-lifecycle.js';
import { LIVE_TASK_STATUSES } from '../../contract/lifecycle.js';

/** `GET /agents`: live agents the key may discover, optionally in one namespace (by slug). */
export async function listAgents(db: Db, perms: Permissions, query: PageInput & { namespace?: string }): Promise<{ agents: Agent[]; total: number }> {
  const ns = query.namespace === undefined ? undefined : await namespaceBySlug(db, perms, query.namespace);
  let select = db
    .selectFrom('agents')
    .where(inCallerOrg(perms, 'agents.namespace_id'))
    .where('agents.status', '=', 'ACTIVE')
    .where((eb) => visibleRows(eb, perms.visible('agent'), 'agents.namespace_id', 'agents.id'));
  if (ns) select = select.where('agents.namespace_id', '=', ns.id);
  const [rows, count] = await Promise.all([
    select
      .selectAll('agents')
      .orderBy('agents.created_at', query.order_direction)
      .orderBy('agents.id', query.order_direction)
      .limit(query.limit)
      .offset(pageOffset(query))
      .execute(),
    select.select((eb) => eb.fn.countAll<string>().as('n')).executeTakeFirstOrThrow(),
  ]);
  const total = Number(count.n);
  if (ns) hideUndiscoverableNamespace(perms, ns, total);
  return { agents: rows.map(toAgent), total };
}

export async function getAgent(db: Db, perms: Permissions, agentId: string): Promise<Agent> {
  return toAgent(await agentById(db, perms, 'discover', agentId));
}

export async function getAgentByName(db: Db, perms: Permissions, namespaceSlug: string, agentName: string): Promise<Agent> {
  return toAgent(await agentByPath(db, perms, 'discover', namespaceSlug, agentName));
}

export async function deleteAgent(db: Db, perms: Permissions, agentId: string): Promise<{ id: string; message: string }> {
  const agent = await agentById(db, perms, 'admin', agentId);
  return softDelete(db, perms, agent, `Agent ${agent.name} (${agent.id})`);
}

export async function deleteAgentByName(db: Db, perms: Permissions, namespaceSlug: string, agentName: string): Promise<{ id: string; message: string }> {
  const agent = await agentByPath(db, perms, 'admin', namespaceSlug, agentName);
  return softDelete(db, perms, agent, `Agent ${namespaceSlug}/${agentName}`);
}

/**
 * Soft delete, all in one transaction: the agent becomes DELETED (its name is free again), its
 * RUNNING and IDLE tasks become TERMINATED, its branches are retired and their DEPLOYING, ACTIVE,
 * UNHEALTHY and DRAINING versions become RETIRED with a VERSION_RETIRED event each (FAILED and
 * ROLLED_BACK versions keep their status, as when a branch is retired).
 */
async function softDelete(db: Db, perms: Permissions, agent: Selectable<AgentsTable>, describe: string): Promise<{ id: string; message: string }> {
  const reason = `Agent deleted by API key ${perms.actor.name}`;
  const { tasks, versions } = await db.transaction().execute(async (trx) => {
    // The row lock serializes concurrent deletes of the same agent: the second finds it DELETED.
    const live = await trx.selectFrom('agents').select('id').where('id', '=', agent.id).where('status', '=', 'ACTIVE').forNoKeyUpdate().executeTakeFirst();
    if (!live) throw notFound(`${describe}`);
    // The lock order (lookup.ts): agent, then its branches, before any of their tasks or versions,
    // as cancels, migrations and deploys take them. Updating tasks first deadlocked with those.
    await lockBranches(trx, { agentId: agent.id });
    await trx.updateTable('agents').set({ status: 'DELETED', status_reason: reason, updated_at: sql<Date>`now()` }).where('id', '=', agent.id).execute();
    const tasks = await trx
      .updateTable('tasks')
      .set({ status: 'TERMINATED', status_reason: 'Agent deleted', updated_at: sql<Date>`now()` })
      .where('agent_id', '=', agent.id)
      .where('status', 'in', LIVE_TASK_STATUSES)
      .returning('id')
      .execute();
    await recordTaskChange(
      trx,
      tasks.map((t) => t.id),
    );
    const retire = bulkMove('retired');
    const versions = await trx
      .updateTable('versions')
      .set({ status: retire.to, retired_at: sql<Date>`now()`, updated_at: sql<Date>`now()` })
      .where('agent_id', '=', agent.id)
      .where('status', 'in', retire.from)
      .returning(['id', 'branch_id'])
      .execute();
    await trx
      .updateTable('branches')
      .set({ retired_at: sql<Date>`now()`, retired_reason: 'Agent deleted', updated_at: sql<Date>`now()` })
      .where('agent_id', '=', agent.id)
      .where('retired_at', 'is', null)
      .execute();
    for (const v of versions) {
      await appendEvent(trx, v.branch_id, v.id, 'VERSION_RETIRED', { reason: 'agent_deleted' });
    }
    return { tasks: tasks.length, versions: versions.length };
  });
  return { id: agent.id, message: `${describe} deleted: ${plural(tasks, 'task')} terminated, ${plural(versions, 'version')} retired` };
}
