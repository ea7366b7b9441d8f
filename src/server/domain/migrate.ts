import { sql, type Kysely } from 'kysely';
import { MIGRATION_MAX_TASKS, type MigrateTasksRequest } from '../../contract/endpoints.js';
import type { Version } from '../../contract/resources.js';
import type { Database, Db } from '../store/db.js';
import { newId } from '../store/ids.js';
import { toVersion } from '../store/mappers.js';
import { taskRowSql } from '../store/sql.js';
import { ValidationFailure, conflict, invalid, notFound, named, namedVersion, type ValidationItem } from './errors.js';
import type { Permissions } from '../auth/policy.js';
import { LIVE_TASK_STATUSES, ROUTABLE_VERSION_STATUSES, isIn } from '../../contract/lifecycle.js';
import { migrationChoiceProblem } from '../../contract/migration.js';
import { statusLit } from '../store/sql.js';
import { settleDraining } from './events.js';
import { inCallerOrg, lockBranch, versionById } from './lookup.js';
import { migrationRecordSql } from './migration-history.js';
import { MIGRATE_HANDLER, migrationHooksSql, moveSetSql, versionDeclares } from './migration-hooks.js';
import { announceDeliveries, HOOKS_NOTICE } from '../store/outbox.js';

type Trx = Kysely<Database>;

export interface MigrationResult {
  branch_id: string;
  from_version_id?: string | null;
  to_version: Version;
  /** The moved tasks as a JSON array, built by the database (see taskRowSql). */
  tasksJson: string;
  count: number;
  dry_run: boolean;
}

/** The valid shapes: exactly one source and exactly one target (contract/migration.ts; README "Versions and migration, in short"). */
export function checkMigrationShape(req: MigrateTasksRequest): void {
  const items: ValidationItem[] = [];
  const hasFrom = req.from_version_id !== null;
  const hasTasks = req.task_ids !== null;
  const source = migrationChoiceProblem('source', { names: ['from_version_id', 'task_ids'], given: [hasFrom, hasTasks] });
  if (source) {
    items.push({ loc: ['body', 'from_version_id'], msg: source, type: 'value_error' }, { loc: ['body', 'task_ids'], msg: source, type: 'value_error' });
  } else if (hasTasks && req.task_ids!.length === 0) {
    items.push({ loc: ['body', 'task_ids'], msg: 'task_ids must not be empty', type: 'too_small' });
  }
  const target = migrationChoiceProblem('target', { names: ['to_version_id', 'to_latest: true'], given: [req.to_version_id !== null, req.to_latest] });
  if (target)
    items.push({ loc: ['body', 'to_version_id'], msg: target, type: 'value_error' }, { loc: ['body', 'to_latest'], msg: target, type: 'value_error' });
  if (hasFrom && !hasTasks && req.to_version_id !== null && req.to_version_id === req.from_version_id) {
    items.push({ loc: ['body', 'to_version_id'], msg: 'to_version_id is the same as from_version_id', type: 'value_error' });
  }
  if (hasTasks && req.limit !== null) {
    items.push({ loc: ['body', 'limit'], msg: 'limit pages a bulk migration (from_version_id); task_ids name the tasks already', type: 'value_error' });
  }
  if (items.length) throw new ValidationFailure(items);
}

export async function resolveTarget(trx: Trx, perms: Permissions, branch: { id: string; git_branch: string }, req: MigrateTasksRequest) {
  const branchId = branch.id;
  if (req.to_latest) {
    const latest = await trx
      .selectFrom('versions')
      .selectAll()
      .where('branch_id', '=', branchId)
      .where('status', 'in', ROUTABLE_VERSION_STATUSES)
      .orderBy('deployed_at', 'desc')
      .orderBy('id', 'desc')
      .limit(1)
      .executeTakeFirst();
    if (!latest) throw conflict('no_routable_version', `Branch ${named(branch.git_branch, branchId)} has no ACTIVE or DEPLOYING version to migrate to`);
    return latest;
  }
  const target = await versionById(trx, perms, 'write', req.to_version_id!);
  if (target.branch_id !== branchId) {
    throw invalid(['body', 'to_version_id'], `Version ${target.id} is on branch ${target.branch_id}, not on the tasks’ branch ${branchId}`);
  }
  if (!isIn(ROUTABLE_VERSION_STATUSES, target.status)) {
    throw conflict('target_not_routable', `Version ${namedVersion(target)} is ${target.status}; tasks can only move to an ACTIVE or DEPLOYING version`);
  }
  return target;
}

/**
 * `POST /tasks/migrate`: all or nothing, in one transaction. The branch row is locked first, so
 * concurrent migrations and deploys of a branch serialize. Only current_version_id and updated_at
 * change; created_version_id never does.
 */
export async function migrateTasks(db: Db, perms: Permissions, req: MigrateTasksRequest): Promise<MigrationResult> {
  checkMigrationShape(req);
  return db.transaction().execute(async (trx) => {
    let branchId: string;
    let branch: { id: string; git_branch: string };
    let sourceIds: string[];
    let taskIds: string[] | null = null;
    // The migration record's owner, and (task mode) the version each named task leaves.
    let owner: { agentId: string; namespaceId: string };
    let leaving: Record<string, string> = {};

    if (req.from_version_id !== null) {
      const source = await versionById(trx, perms, 'write', req.from_version_id);
      branchId = source.branch_id;
      sourceIds = [source.id];
      owner = { agentId: source.agent_id, namespaceId: source.namespace_id };
      branch = await lockBranch(trx, branchId);
    } else {
      taskIds = [...new Set(req.task_ids!)];
      const seen = await trx
        .selectFrom('tasks')
        .select(['tasks.id', 'tasks.agent_id', 'tasks.namespace_id', 'tasks.branch_id'])
        .where('tasks.id', 'in', taskIds)
        .where(inCallerOrg(perms, 'tasks.namespace_id'))
        .where('tasks.status', '!=', 'DELETED')
        .execute();
      const byId = new Map(seen.map((t) => [t.id, t]));
      const unknown = taskIds.find((id) => !byId.has(id));
      if (unknown) throw notFound('Task', unknown);
      const checkedAgents = new Set<string>();
      for (const t of seen) {
        if (checkedAgents.has(t.agent_id)) continue;
        checkedAgents.add(t.agent_id);
        perms.require('write', { type: 'agent', id: t.agent_id, namespaceId: t.namespace_id }, `Task ${t.id}`);
      }
      const branches = new Set(seen.map((t) => t.branch_id));
      if (branches.size > 1) throw invalid(['body', 'task_ids'], `The tasks belong to ${branches.size} different branches; migrate one branch at a time`);
      branchId = seen[0].branch_id;
      branch = await lockBranch(trx, branchId);
      const locked = await trx
        .selectFrom('tasks')
        .select(['id', 'name', 'status', 'current_version_id'])
        .where('id', 'in', taskIds)
        .orderBy('id')
        .forNoKeyUpdate()
        .execute();
      const stuck = locked.filter((t) => !isIn(LIVE_TASK_STATUSES, t.status));
      if (stuck.length) {
        const listed = stuck
          .slice(0, 10)
          .map((t) => (t.name ? `${t.name} (${t.id}, ${t.status})` : `${t.id} (${t.status})`))
          .join(', ');
        throw conflict('task_not_migratable', `Only RUNNING or IDLE tasks can migrate: ${listed}${stuck.length > 10 ? ` and ${stuck.length - 10} more` : ''}`);
      }
      sourceIds = [...new Set(locked.map((t) => t.current_version_id))];
      owner = { agentId: seen[0].agent_id, namespaceId: seen[0].namespace_id };
      leaving = Object.fromEntries(locked.map((t) => [t.id, t.current_version_id]));
    }

    const target = await resolveTarget(trx, perms, branch, req);
    if (req.from_version_id !== null && target.id === req.from_version_id) {
      throw invalid(['body', 'to_latest'], `Version ${target.id} is already the branch’s latest version`);
    }

    const where = taskIds
      ? sql`id = ANY(${taskIds})`
      : req.limit !== null
        ? sql`id IN (SELECT id FROM tasks WHERE current_version_id = ${req.from_version_id} AND status = ${statusLit('RUNNING')} AND shadow_of IS NULL ORDER BY id LIMIT ${req.limit})`
        : sql`current_version_id = ${req.from_version_id} AND status = ${statusLit('RUNNING')} AND shadow_of IS NULL`;
    if (!taskIds && req.limit === null) await refuseOversizeBulk(trx, req.from_version_id!);
    let result: { n: number; tasks: string };
    if (req.dry_run) {
      // The same selection, unchanged, shown as it would be after the move.
      const rows = await sql<{ n: number; tasks: string }>`
        SELECT count(*)::int AS n, coalesce(json_agg(r ORDER BY r.id), '[]')::text AS tasks
        FROM (SELECT ${taskRowSql('m')}
              FROM (SELECT id, filesystem_id, namespace_id, name, status, status_reason, params, task_metadata,
                           created_version_id, ${target.id}::text AS current_version_id, created_at, now() AS updated_at
                    FROM tasks WHERE ${where}) m) r`.execute(trx);
      result = rows.rows[0];
    } else {
      // The target's onMigrate runs before any later event: the move's statement notes each task's
      // hook on its row, in the task's queue (migration-hooks.ts), and clears an earlier failed hook's error.
      const hooks = await versionDeclares(trx, target.id, MIGRATE_HANDLER);
      const migrationId = newId('migration');
      const fromOf = taskIds ? sql`(${JSON.stringify(leaving)}::jsonb ->> moved.id)` : sql`${req.from_version_id}::text`;
      const hookSql = hooks ? migrationHooksSql(target.id, sourceIds, where) : undefined;
      const eventData = sql`jsonb_build_object('from_version_ids', ${JSON.stringify(sourceIds)}::jsonb, 'to_version_id', ${target.id}::text, 'count', (SELECT count(*) FROM moved), 'task_ids', (SELECT jsonb_agg(id ORDER BY id) FROM moved), 'mode', ${taskIds ? 'tasks' : 'bulk'}::text)`;
      const rows = await sql<{ n: number; tasks: string }>`
        WITH ${hookSql ? sql`prior AS (${hookSql.prior}), ` : sql``}moved AS (
          UPDATE tasks SET ${moveSetSql(target.id, hooks ? migrationId : null)} WHERE ${where}
          RETURNING id, filesystem_id, namespace_id, name, status, status_reason, params, task_metadata,
                    created_version_id, current_version_id, created_at, updated_at
        ), seq AS (
          UPDATE branches SET event_sequence = event_sequence + 1 WHERE id = ${branchId} AND EXISTS (SELECT 1 FROM moved)
          RETURNING event_sequence
        ), event AS (
          INSERT INTO version_events (id, branch_id, version_id, sequence, type, data)
          SELECT ${newId('event')}, ${branchId}, ${target.id}, event_sequence, 'TASKS_MIGRATED', ${eventData} FROM seq
        ), rec AS (${migrationRecordSql(
          migrationId,
          target.id,
          { branchId, agentId: owner.agentId, namespaceId: owner.namespaceId, kind: 'migrate', keyId: perms.actor.keyId || null },
          fromOf,
          taskIds ? undefined : req.from_version_id!,
        )})${hookSql ? sql`, batch AS (${hookSql.batch})` : sql``}
        SELECT count(*)::int AS n, coalesce(json_agg(r ORDER BY r.id), '[]')::text AS tasks
        FROM (SELECT ${taskRowSql('m')} FROM moved m) r`.execute(trx);
      result = rows.rows[0];
      // After the hooks: a source they may send tasks back to does not retire yet. Every source but
      // the target itself left a task, so each has an open hook now: none can retire (no query).
      if (hooks && result.n > 0) await announceDeliveries(trx, HOOKS_NOTICE);
      else await settleDraining(trx, sourceIds);
    }
    return {
      branch_id: branchId,
      ...(req.from_version_id !== null ? { from_version_id: req.from_version_id } : {}),
      to_version: toVersion(target),
      tasksJson: result.tasks,
      count: result.n,
      dry_run: req.dry_run,
    };
  });
}

/** A bulk migration without `limit` moves at most MIGRATION_MAX_TASKS tasks (see the contract). */
async function refuseOversizeBulk(trx: Trx, versionId: string): Promise<void> {
  const probe = await sql<{ n: number }>`
    SELECT count(*)::int AS n FROM (SELECT 1 FROM tasks WHERE current_version_id = ${versionId} AND status = ${statusLit('RUNNING')} LIMIT ${MIGRATION_MAX_TASKS + 1}) s`.execute(
    trx,
  );
  if (probe.rows[0].n <= MIGRATION_MAX_TASKS) return;
  const total = await sql<{
    n: number;
  }>`SELECT count(*)::int AS n FROM tasks WHERE current_version_id = ${versionId} AND status = ${statusLit('RUNNING')}`.execute(trx);
  const version = await trx.selectFrom('versions').select(['id', 'number']).where('id', '=', versionId).executeTakeFirstOrThrow();
  throw conflict(
    'migration_too_large',
    `Version ${namedVersion(version)} has ${total.rows[0].n} RUNNING tasks; one request moves at most ${MIGRATION_MAX_TASKS}. ` +
      `Page it: send "limit": ${MIGRATION_MAX_TASKS} and repeat the request until it moves no tasks.`,
  );
}

/** The response body, assembled around the database-built task array without re-parsing it. */
export function migrationResponseJson(result: MigrationResult): string {
  const head: Record<string, unknown> = { branch_id: result.branch_id };
  if (result.from_version_id !== undefined) head.from_version_id = result.from_version_id;
  head.to_version = result.to_version;
  head.dry_run = result.dry_run;
  return `${JSON.stringify(head).slice(0, -1)},"tasks":${result.tasksJson}}`;
}
