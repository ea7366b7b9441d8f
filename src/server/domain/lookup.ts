import type { Compilable, Expression, ExpressionBuilder, InferResult, Kysely, SqlBool } from 'kysely';
import type { Database, Db } from '../store/db.js';
import { notFound } from './errors.js';
import { executePrepared } from '../store/prepared.js';
import { visibleRows } from './visibility.js';
import type { Permission, Permissions } from '../auth/policy.js';

type Executor = Db | Kysely<Database>;

/**
 * Locks a branch row for the rest of the transaction and returns it. Every change to a branch's
 * versions or tasks takes this lock first (then tasks, then versions), so deploys, migrations,
 * rollbacks and task changes of one branch serialize and never deadlock. NO KEY UPDATE, not
 * UPDATE: other transactions' foreign-key checks on the branch must not wait for it.
 */
export function lockBranch(trx: Kysely<Database>, branchId: string) {
  return trx.selectFrom('branches').selectAll().where('id', '=', branchId).forNoKeyUpdate().executeTakeFirstOrThrow();
}

/**
 * Locks several branches, in id order: the rule for every path that locks more than one row.
 * The full order is agent, then branches (by id), then tasks, then versions; a path that needs a
 * later lock first takes the earlier ones, so no two transactions wait on each other in a cycle.
 */
export async function lockBranches(trx: Kysely<Database>, where: { agentId: string } | { ids: string[] }) {
  let query = trx.selectFrom('branches').select('id');
  query = 'agentId' in where ? query.where('agent_id', '=', where.agentId) : query.where('id', 'in', where.ids.length ? where.ids : ['']);
  return query.orderBy('id').forNoKeyUpdate().execute();
}

/**
 * Keeps only rows of the caller's org, by the namespace they live in (`agents.namespace_id`, ...):
 * the one org scope of every lookup and list, so a row of another org answers as an unknown one.
 */
export function inCallerOrg(perms: Permissions, namespaceColumn: string) {
  // `any`: the column belongs to whichever table the caller selects from.
  // biome-ignore lint/suspicious/noExplicitAny: the helper fits every table of the Kysely schema
  return (eb: ExpressionBuilder<any, any>): Expression<SqlBool> =>
    eb(eb.ref(namespaceColumn), 'in', eb.selectFrom('namespaces').select('namespaces.id').where('namespaces.org_id', '=', perms.actor.orgId));
}

/**
 * Rows of an agent or branch the key may read (`GET /rollouts`, `GET /migrations`): of the caller's
 * org, of agents it may read, and of the agent or branch asked for, by the table's `namespace_id`,
 * `agent_id` and `branch_id`.
 */
export function readableAgentRows(perms: Permissions, table: 'rollouts' | 'migrations', q: { agent_id?: string; branch_id?: string }) {
  // biome-ignore lint/suspicious/noExplicitAny: the helper fits every table with these columns
  return (eb: ExpressionBuilder<any, any>): Expression<SqlBool> =>
    eb.and([
      inCallerOrg(perms, `${table}.namespace_id`)(eb),
      visibleRows(eb, perms.visible('agent', 'read'), `${table}.namespace_id`, `${table}.agent_id`),
      ...(q.agent_id ? [eb(eb.ref(`${table}.agent_id`), '=', q.agent_id)] : []),
      ...(q.branch_id ? [eb(eb.ref(`${table}.branch_id`), '=', q.branch_id)] : []),
    ]);
}

/**
 * Lookups shared by the domain modules. Each one checks the caller's permission on what it finds,
 * so an unknown id and an undiscoverable one answer the same 404. Nearly every route runs one: they
 * run prepared (store/prepared.ts; planned once, not parsed and planned per request): PREPAREd on
 * PGlite, named statements on PostgreSQL (there inside a transaction too, once seen outside one).
 */
// biome-ignore lint/suspicious/noExplicitAny: any query builder's result type
async function first<Q extends Compilable<any>>(db: Executor, query: Q): Promise<InferResult<Q>[number] | undefined> {
  return (await executePrepared(db, query)).rows[0] as InferResult<Q>[number] | undefined;
}

export async function namespaceBySlug(db: Executor, perms: Permissions, slug: string) {
  const ns = await first(db, db.selectFrom('namespaces').selectAll().where('slug', '=', slug).where('org_id', '=', perms.actor.orgId));
  if (!ns) throw notFound(`Namespace ${slug}`);
  return ns;
}

export async function agentByPath(db: Executor, perms: Permissions, permission: Permission, namespaceSlug: string, agentName: string) {
  const agent = await first(
    db,
    db
      .selectFrom('agents')
      .innerJoin('namespaces', 'namespaces.id', 'agents.namespace_id')
      .selectAll('agents')
      .where('namespaces.slug', '=', namespaceSlug)
      .where(inCallerOrg(perms, 'agents.namespace_id'))
      .where('agents.name', '=', agentName)
      .where('agents.status', '=', 'ACTIVE'),
  );
  const describe = `Agent ${namespaceSlug}/${agentName}`;
  if (!agent) throw notFound(`${describe}`);
  perms.require(permission, { type: 'agent', id: agent.id, namespaceId: agent.namespace_id }, describe);
  return agent;
}

export async function agentById(db: Executor, perms: Permissions, permission: Permission, agentId: string) {
  const agent = await first(
    db,
    db
      .selectFrom('agents')
      .selectAll('agents')
      .where('agents.id', '=', agentId)
      .where(inCallerOrg(perms, 'agents.namespace_id'))
      .where('agents.status', '=', 'ACTIVE'),
  );
  if (!agent) throw notFound(`Agent ${agentId}`);
  perms.require(permission, { type: 'agent', id: agent.id, namespaceId: agent.namespace_id }, `Agent ${agentId}`);
  return agent;
}

/** A branch with its agent's namespace, checked against `permission` on the agent. */
export async function branchById(db: Executor, perms: Permissions, permission: Permission, branchId: string) {
  const branch = await first(
    db,
    db
      .selectFrom('branches')
      .innerJoin('agents', 'agents.id', 'branches.agent_id')
      .selectAll('branches')
      .select(['agents.namespace_id', 'agents.status as agent_status'])
      .where('branches.id', '=', branchId)
      .where(inCallerOrg(perms, 'agents.namespace_id')),
  );
  if (branch?.agent_status !== 'ACTIVE') throw notFound(`Branch ${branchId}`);
  perms.require(permission, { type: 'agent', id: branch.agent_id, namespaceId: branch.namespace_id }, `Branch ${branchId}`);
  return branch;
}

export async function versionById(db: Executor, perms: Permissions, permission: Permission, versionId: string) {
  const version = await first(
    db,
    db
      .selectFrom('versions')
      .innerJoin('agents', 'agents.id', 'versions.agent_id')
      .selectAll('versions')
      .select(['agents.namespace_id', 'agents.status as agent_status'])
      .where('versions.id', '=', versionId)
      .where(inCallerOrg(perms, 'agents.namespace_id')),
  );
  if (version?.agent_status !== 'ACTIVE') throw notFound(`Version ${versionId}`);
  perms.require(permission, { type: 'agent', id: version.agent_id, namespaceId: version.namespace_id }, `Version ${versionId}`);
  return version;
}

export async function taskById(db: Executor, perms: Permissions, permission: Permission, taskId: string) {
  const task = await first(db, db.selectFrom('tasks').selectAll('tasks').where('tasks.id', '=', taskId).where(inCallerOrg(perms, 'tasks.namespace_id')));
  if (!task) throw notFound(`Task ${taskId}`);
  perms.require(permission, { type: 'agent', id: task.agent_id, namespaceId: task.namespace_id }, `Task ${taskId}`);
  return task;
}
