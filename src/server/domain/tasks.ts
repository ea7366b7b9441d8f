import { sql, type Kysely, type Selectable } from 'kysely';
import type { TaskStatus } from '../../contract/common.js';
import type { CreateTaskRequest, ListTasksQuery } from '../../contract/endpoints.js';
import type { Task } from '../../contract/resources.js';
import type { Database, Db, TasksTable } from '../store/db.js';
import { newId } from '../store/ids.js';
import { toAgent, toTask } from '../store/mappers.js';
import { isUniqueViolation, statusLit } from '../store/sql.js';
import { isTerminalTask, NEW_TASK_STATUS, ROUTABLE_VERSION_STATUSES } from '../../contract/lifecycle.js';
import { conflict, invalid, isNotFound, notFound, named } from './errors.js';
import type { Permissions } from '../auth/policy.js';
import { agentById, agentByPath, inCallerOrg, lockBranch, taskById } from './lookup.js';
import { settleDraining } from './events.js';
import { visibleRows } from './visibility.js';
import { createTracker, recordTaskChange } from './conversation.js';
import { enqueueDelivery } from '../store/outbox.js';
import { rampVersionFor } from './rollouts.js';

type Trx = Kysely<Database>;

/** `ns/name`, or a bare name in the `default` namespace. */
export function splitAgentName(name: string): { namespace: string; agent: string } {
  const slash = name.indexOf('/');
  return slash < 0 ? { namespace: 'default', agent: name } : { namespace: name.slice(0, slash), agent: name.slice(slash + 1) };
}

/** `POST /tasks`: routed to the branch's newest ACTIVE, else DEPLOYING, version. */
export async function createTask(db: Db, perms: Permissions, req: CreateTaskRequest): Promise<Task> {
  if (!req.agent_id === !req.agent_name) {
    throw invalid(['body', req.agent_id ? 'agent_name' : 'agent_id'], 'Give exactly one of agent_id and agent_name');
  }
  if (req.filesystem_id && req.project_id) throw invalid(['body', 'project_id'], 'Give at most one of filesystem_id and project_id');
  try {
    return await db.transaction().execute((trx) => insertTask(trx, perms, req));
  } catch (error) {
    if (isUniqueViolation(error, 'tasks_org_name')) throw conflict('task_name_taken', `A task named ${req.name} already exists`);
    throw error;
  }
}

/**
 * Creates a task in the caller's transaction (`POST /tasks`, a schedule's tick): its row, tracker,
 * stream record and `task/create` delivery. `metadata` becomes its `task_metadata`.
 */
export async function insertTask(trx: Trx, perms: Permissions, req: CreateTaskRequest, metadata: Record<string, unknown> | null = null): Promise<Task> {
  const agent = req.agent_id
    ? await agentById(trx, perms, 'run', req.agent_id)
    : await (() => {
        const { namespace, agent } = splitAgentName(req.agent_name!);
        return agentByPath(trx, perms, 'run', namespace, agent);
      })();
  let branchName = req.branch;
  if (!branchName) {
    const prod = await trx.selectFrom('environments').select('branch_rules').where('agent_id', '=', agent.id).where('is_prod', '=', true).executeTakeFirst();
    branchName = (prod?.branch_rules as string[] | undefined)?.[0] ?? 'main';
  }
  const branch = await trx
    .selectFrom('branches')
    .selectAll()
    .where('agent_id', '=', agent.id)
    .where('git_branch', '=', branchName)
    .where('retired_at', 'is', null)
    .executeTakeFirst();
  if (!branch) throw notFound(`Branch ${branchName} of agent ${agent.name}`);
  const version = await trx
    .selectFrom('versions')
    .select(['id', 'status'])
    .where('branch_id', '=', branch.id)
    .where('status', 'in', ROUTABLE_VERSION_STATUSES)
    .orderBy(sql`status = ${statusLit(ROUTABLE_VERSION_STATUSES[0])}`, 'desc')
    .orderBy('deployed_at', 'desc')
    .orderBy('id', 'desc')
    .limit(1)
    .executeTakeFirst();
  if (!version) throw conflict('no_routable_version', `Branch ${branchName} has no ACTIVE or DEPLOYING version to run a task on`);
  // A rollout to this version ramps new tasks onto it step by step (domain/rollouts.ts).
  const servingId = await rampVersionFor(trx, branch.id, version);

  let filesystemId = req.filesystem_id;
  if (filesystemId) {
    const fs = await trx
      .selectFrom('filesystems')
      .select(['id', 'project_id'])
      .where('id', '=', filesystemId)
      .where('namespace_id', '=', agent.namespace_id)
      .executeTakeFirst();
    if (!fs) throw notFound('Filesystem', filesystemId);
    if (fs.project_id) perms.require('write', { type: 'project', id: fs.project_id, namespaceId: agent.namespace_id }, `Project ${fs.project_id}`);
    else {
      // A private filesystem holds its tasks' files: reusing it needs run on every agent whose tasks use it.
      const owners = await trx.selectFrom('tasks').select('agent_id').distinct().where('filesystem_id', '=', filesystemId).execute();
      for (const owner of owners) perms.require('run', { type: 'agent', id: owner.agent_id, namespaceId: agent.namespace_id }, `Filesystem ${filesystemId}`);
    }
  } else {
    if (req.project_id) {
      const project = await trx.selectFrom('projects').select(['id', 'namespace_id']).where('id', '=', req.project_id).executeTakeFirst();
      if (!project || project.namespace_id !== agent.namespace_id) throw notFound('Project', req.project_id);
      perms.require('write', { type: 'project', id: project.id, namespaceId: project.namespace_id }, `Project ${project.id}`);
    }
    filesystemId = newId('filesystem');
    await trx
      .insertInto('filesystems')
      .values({ id: filesystemId, namespace_id: agent.namespace_id, project_id: req.project_id ?? null })
      .execute();
  }
  const now = new Date();
  const row = await trx
    .insertInto('tasks')
    .values({
      id: newId('task'),
      agent_id: agent.id,
      branch_id: branch.id,
      namespace_id: agent.namespace_id,
      filesystem_id: filesystemId,
      project_id: req.project_id ?? null,
      name: req.name ?? null,
      status: NEW_TASK_STATUS,
      status_reason: null,
      params: req.params == null ? null : JSON.stringify(req.params),
      task_metadata: metadata === null ? null : JSON.stringify(metadata),
      created_version_id: servingId,
      current_version_id: servingId,
      created_by_key_id: perms.actor.keyId || null,
      created_at: now,
      updated_at: now,
    })
    .returningAll()
    .executeTakeFirstOrThrow();
  await createTracker(trx, row.id, agent.id);
  await recordTaskChange(trx, [row.id]);
  await enqueueDelivery(trx, { taskId: row.id, method: 'task/create', params: req.params ?? null });
  return toTask(row);
}

/** What `GET /tasks` takes; the paging and ordering fields have their defaults when left out. */
export type TaskFilters = Partial<ListTasksQuery> & Pick<ListTasksQuery, 'limit' | 'page_number' | 'order_direction'>;

/** Tasks as answered, with the related records asked for: `relationships=agents` fills each task's `agents` with its one agent. */
async function toTasks(db: Db, rows: Selectable<TasksTable>[], relationships: readonly string[] | undefined): Promise<Task[]> {
  const tasks = rows.map(toTask);
  if (!relationships?.includes('agents') || rows.length === 0) return tasks;
  const agentRows = await db
    .selectFrom('agents')
    .selectAll()
    .where('id', 'in', [...new Set(rows.map((row) => row.agent_id))])
    .execute();
  const agents = new Map(agentRows.map((row) => [row.id, toAgent(row)]));
  return tasks.map((task, i) => ({ ...task, agents: [agents.get(rows[i].agent_id)!] }));
}

/** `GET /tasks`: only tasks of agents the key may read; DELETED ones only when asked for. */
export async function listTasks(db: Db, perms: Permissions, f: TaskFilters): Promise<{ tasks: Task[]; total?: number }> {
  if (f.agent !== undefined && f.agent_name !== undefined && f.agent !== f.agent_name) {
    throw invalid(['query', 'agent_name'], 'agent_name and agent are the same filter under two names; give one');
  }
  const agentPath = f.agent ?? f.agent_name;
  let agentId = f.agent_id;
  if (agentPath) agentId = (await agentByPath(db, perms, 'read', splitAgentName(agentPath).namespace, splitAgentName(agentPath).agent)).id;
  else if (agentId) await agentById(db, perms, 'read', agentId);
  if (f.branch && !agentId) throw invalid(['query', 'branch'], 'Filtering by branch name needs agent, agent_name or agent_id');
  if (f.namespace_id !== undefined) {
    const ns = await db.selectFrom('namespaces').select('id').where('id', '=', f.namespace_id).where('org_id', '=', perms.actor.orgId).executeTakeFirst();
    // An unknown namespace and one the key may not discover answer alike.
    if (!ns || !perms.can('discover', { type: 'namespace', id: ns.id })) throw notFound('Namespace', f.namespace_id);
  }
  const after = f.created_after === undefined ? undefined : new Date(f.created_after);
  const before = f.created_before === undefined ? undefined : new Date(f.created_before);
  if (after && before && after >= before) throw invalid(['query', 'created_before'], 'created_before must be later than created_after');

  let query = db.selectFrom('tasks').where(inCallerOrg(perms, 'tasks.namespace_id'));
  if (agentId) query = query.where('tasks.agent_id', '=', agentId);
  else query = query.where((eb) => visibleRows(eb, perms.visible('agent', 'read'), 'tasks.namespace_id', 'tasks.agent_id'));
  if (f.branch) {
    const branch = await db.selectFrom('branches').select('id').where('agent_id', '=', agentId!).where('git_branch', '=', f.branch).executeTakeFirst();
    if (!branch) return { tasks: [], total: 0 };
    query = query.where('tasks.branch_id', '=', branch.id);
  }
  if (f.branch_id) query = query.where('tasks.branch_id', '=', f.branch_id);
  if (f.version_id) query = query.where('tasks.current_version_id', '=', f.version_id);
  if (f.namespace_id !== undefined) query = query.where('tasks.namespace_id', '=', f.namespace_id);
  if (after) query = query.where('tasks.created_at', '>=', after);
  if (before) query = query.where('tasks.created_at', '<', before);
  query = f.status ? query.where('tasks.status', '=', f.status) : query.where('tasks.status', '!=', 'DELETED');
  // A rehearsal's shadow tasks only when asked for.
  if (!f.include_shadows) query = query.where('tasks.shadow_of', 'is', null);

  const [rows, count] = await Promise.all([
    query
      .selectAll('tasks')
      .orderBy(`tasks.${f.order_by ?? 'created_at'}`, f.order_direction)
      .orderBy('tasks.id', f.order_direction)
      .limit(f.limit)
      .offset((f.page_number - 1) * f.limit)
      .execute(),
    f.include_total === false ? undefined : query.select(sql<number>`count(*)::int`.as('n')).executeTakeFirstOrThrow(),
  ]);
  const tasks = await toTasks(db, rows, f.relationships);
  return count === undefined ? { tasks } : { tasks, total: count.n };
}

export async function getTask(db: Db, perms: Permissions, taskId: string, relationships?: readonly string[]): Promise<Task> {
  return (await toTasks(db, [await taskById(db, perms, 'read', taskId)], relationships))[0];
}

export async function getTaskByName(db: Db, perms: Permissions, name: string, relationships?: readonly string[]): Promise<Task> {
  const hidden = notFound(`Task named ${name}`);
  const row = await db.selectFrom('tasks').select('id').where('org_id', '=', perms.actor.orgId).where('name', '=', name).executeTakeFirst();
  if (!row) throw hidden;
  // A task the key may not discover answers like an unknown name, without revealing its id.
  const task = await taskById(db, perms, 'read', row.id).catch((error) => {
    throw isNotFound(error) ? hidden : error;
  });
  return (await toTasks(db, [task], relationships))[0];
}

/** Locks a task for a change; a terminal task refuses every change but DELETE. */
async function lockTaskForChange(trx: Trx, perms: Permissions, taskId: string, allowTerminal = false) {
  const found = await taskById(trx, perms, 'run', taskId);
  await lockBranch(trx, found.branch_id);
  const task = await trx.selectFrom('tasks').selectAll().where('id', '=', taskId).forNoKeyUpdate().executeTakeFirstOrThrow();
  if (task.status === 'DELETED') throw notFound('Task', taskId);
  if (!allowTerminal && isTerminalTask(task.status))
    throw conflict('task_terminal', `Task ${named(task.name, taskId)} is ${task.status}; a finished task cannot change`);
  return task;
}

export interface TaskUpdate {
  task_metadata?: Record<string, unknown> | null;
  status?: Exclude<TaskStatus, 'DELETED'>;
  status_reason?: string | null;
}

/** `PATCH /tasks/{id}`: metadata, RUNNING <-> IDLE, or to a terminal status. */
export async function updateTask(db: Db, perms: Permissions, taskId: string, update: TaskUpdate): Promise<Task> {
  return db.transaction().execute(async (trx) => {
    const task = await lockTaskForChange(trx, perms, taskId);
    const row = await trx
      .updateTable('tasks')
      .set({
        updated_at: new Date(),
        ...(update.task_metadata !== undefined ? { task_metadata: update.task_metadata === null ? null : JSON.stringify(update.task_metadata) } : {}),
        ...(update.status ? { status: update.status } : {}),
        ...(update.status_reason !== undefined ? { status_reason: update.status_reason } : {}),
      })
      .where('id', '=', taskId)
      .returningAll()
      .executeTakeFirstOrThrow();
    if (update.status && isTerminalTask(update.status)) await settleDraining(trx, [task.current_version_id]);
    await recordTaskChange(trx, [taskId]);
    if (update.status === 'CANCELED') await enqueueDelivery(trx, { taskId, method: 'task/cancel' });
    return toTask(row);
  });
}

export async function cancelTask(db: Db, perms: Permissions, taskId: string): Promise<Task> {
  return updateTask(db, perms, taskId, { status: 'CANCELED', status_reason: 'Canceled by request' });
}

/** `DELETE /tasks/{id}`: soft; the record stays, as DELETED. */
export async function deleteTask(db: Db, perms: Permissions, taskId: string): Promise<Task> {
  return db.transaction().execute(async (trx) => {
    const task = await lockTaskForChange(trx, perms, taskId, true);
    const row = await trx
      .updateTable('tasks')
      .set({ status: 'DELETED', updated_at: new Date() })
      .where('id', '=', taskId)
      .returningAll()
      .executeTakeFirstOrThrow();
    await settleDraining(trx, [task.current_version_id]);
    await recordTaskChange(trx, [taskId]);
    return toTask(row);
  });
}
