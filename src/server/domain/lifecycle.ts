import { plural } from '../../contract/plural.js';
import { enqueueMigrationHooks } from './migration-hooks.js';
import { sql, type Kysely, type Selectable, type UpdateObject } from 'kysely';
import type { DeployRequest } from '../../contract/endpoints.js';
import type { Branch, Version } from '../../contract/resources.js';
import type { Database, Db, VersionsTable } from '../store/db.js';
import { newId } from '../store/ids.js';
import { toBranch, toVersion, type BranchRow } from '../store/mappers.js';
import { conflict, invalid, notFound, named, namedVersion } from './errors.js';
import { filesystemForAccess } from './filesystems.js';
import type { Permissions } from '../auth/policy.js';
import { grantOwnership } from '../auth/grants.js';
import { branchById, lockBranch, namespaceBySlug, versionById } from './lookup.js';
import { appendEvent, settleDraining } from './events.js';
import { recordTaskChange } from './conversation.js';
import { bulkMove, isRefusal, next, refusing, type VersionHappening } from './version-lifecycle.js';
import { LIVE_AGENT_STATUS, LIVE_TASK_STATUSES, NEW_VERSION_STATUS, type REPORTED_VERSION_STATUSES, type VersionStatus } from '../../contract/lifecycle.js';
import { statusLit } from '../store/sql.js';

type Trx = Kysely<Database>;
type VersionRow = Selectable<VersionsTable>;

/** `feature/Login_Page` -> `feature-login-page`. */
export function normalizeGitBranch(name: string): string {
  return name.toLowerCase().replace(/[^a-z0-9-]+/g, '-');
}

/** Moves every RUNNING task on `from` to `to`, recording the move; returns how many moved. */
async function moveRunningTasks(trx: Trx, branchId: string, from: string, to: string, reason: string): Promise<number> {
  const moved = await sql<{ id: string }>`
    UPDATE tasks SET current_version_id = ${to}, updated_at = now()
    WHERE current_version_id = ${from} AND status = ${statusLit('RUNNING')} AND shadow_of IS NULL RETURNING id`.execute(trx);
  // A rollback runs the same state hook as a migration, from the newer version to the older.
  await enqueueMigrationHooks(
    trx,
    moved.rows.map((r) => r.id),
    from,
    to,
  );
  if (moved.rows.length > 0) {
    await appendEvent(trx, branchId, to, 'TASKS_MIGRATED', {
      from_version_ids: [from],
      to_version_id: to,
      count: moved.rows.length,
      task_ids: moved.rows.map((r) => r.id),
      mode: reason,
    });
  }
  return moved.rows.length;
}

/** The old serving version hands over (superseded): DRAINING while live tasks remain on it, else RETIRED. */
async function handOver(trx: Trx, branchId: string, previous: VersionRow | undefined, replacedBy: string): Promise<void> {
  if (!previous || previous.id === replacedBy) return;
  const to = next(previous.status, 'superseded');
  if (isRefusal(to)) return;
  await setStatus(trx, previous, to);
  await appendEvent(trx, branchId, previous.id, 'VERSION_DRAINING', { replaced_by: replacedBy });
  await settleDraining(trx, [previous.id]);
}

/**
 * Writes a status that version-lifecycle.ts gave for the version as read (and locked): guarded by
 * that status, so a version that moved meanwhile is not overwritten.
 */
async function setStatus(
  trx: Trx,
  version: Pick<VersionRow, 'id' | 'status'>,
  to: VersionStatus,
  more: UpdateObject<Database, 'versions'> = {},
): Promise<void> {
  const updated = await trx
    .updateTable('versions')
    .set({ ...more, status: to, updated_at: new Date() })
    .where('id', '=', version.id)
    .where('status', '=', version.status)
    .executeTakeFirst();
  if (updated.numUpdatedRows !== 1n) throw conflict('invalid_transition', `Version ${version.id} changed while it was becoming ${to}; try again`);
}

export interface DeployResult {
  agent_id: string;
  branch_id: string;
  version_id: string;
  version_status: Version['status'];
  message: string;
  tasks_migrated: number;
  version_number: number;
}

/**
 * Where a deploy goes: `agent_name` may carry its namespace (`namespace/name`, as the upstream API
 * sends it); `namespace`, when also given, must name the same one.
 */
export function deployTarget(req: Pick<DeployRequest, 'namespace' | 'agent_name'>): { namespace: string; agent_name: string } {
  const slash = req.agent_name.indexOf('/');
  if (slash < 0) return { namespace: req.namespace ?? 'default', agent_name: req.agent_name };
  const namespace = req.agent_name.slice(0, slash);
  if (req.namespace !== undefined && req.namespace !== namespace) {
    throw invalid(['body', 'agent_name'], `agent_name names namespace ${namespace} but namespace is ${req.namespace}; give one of them`);
  }
  return { namespace, agent_name: req.agent_name.slice(slash + 1) };
}

/** `POST /agents/deploy`: agent and branch created on first use, a new DEPLOYING version, stickiness applied. */
export async function deploy(db: Db, perms: Permissions, request: DeployRequest, imageRetentionDays: number): Promise<DeployResult> {
  const req = { ...request, ...deployTarget(request) };
  return db.transaction().execute(async (trx) => {
    const ns = await namespaceBySlug(trx, perms, req.namespace);
    const nsRef = { type: 'namespace', id: ns.id } as const;
    // Locked, so a concurrent delete of the agent cannot slip between this read and the new version.
    // NO KEY UPDATE, not UPDATE: foreign-key checks of other transactions (KEY SHARE) must pass.
    let agent = await trx
      .selectFrom('agents')
      .selectAll()
      .where('namespace_id', '=', ns.id)
      .where('name', '=', req.agent_name)
      .where('status', '=', LIVE_AGENT_STATUS)
      .forNoKeyUpdate()
      .executeTakeFirst();
    // An agent the key may not discover answers exactly as an unused name does (the namespace
    // admin check below): otherwise 404 against 403 would tell the key that the name is taken.
    if (agent && !perms.can('discover', { type: 'agent', id: agent.id, namespaceId: ns.id })) {
      perms.require('admin', nsRef, `Namespace ${req.namespace}`);
    }
    if (!agent) {
      perms.require('admin', nsRef, `Namespace ${req.namespace}`);
      const agentId = newId('agent');
      const inserted = await sql<{ id: string }>`
        INSERT INTO agents (id, namespace_id, name, description, agent_input_type, created_by_key_id)
        VALUES (${agentId}, ${ns.id}, ${req.agent_name}, ${req.description}, ${req.agent_input_type}, ${perms.actor.keyId || null})
        ON CONFLICT (namespace_id, name) WHERE status = ${statusLit(LIVE_AGENT_STATUS)} DO NOTHING RETURNING id`.execute(trx);
      if (inserted.rows.length > 0) {
        await grantOwnership(trx, perms.actor, 'agent', agentId);
        await trx
          .insertInto('environments')
          .values([
            {
              id: newId('environment'),
              agent_id: agentId,
              name: 'production',
              description: 'Production',
              is_prod: true,
              branch_rules: JSON.stringify(['main']),
            },
            {
              id: newId('environment'),
              agent_id: agentId,
              name: 'preview',
              description: 'Every other branch',
              is_prod: false,
              branch_rules: JSON.stringify(['*']),
            },
          ])
          .execute();
      }
      // Either ours, or a concurrent deploy created it first: both are fine.
      agent = await trx
        .selectFrom('agents')
        .selectAll()
        .where('namespace_id', '=', ns.id)
        .where('name', '=', req.agent_name)
        .where('status', '=', LIVE_AGENT_STATUS)
        .executeTakeFirstOrThrow();
    } else {
      perms.require('write', { type: 'agent', id: agent.id, namespaceId: ns.id }, `Agent ${req.namespace}/${req.agent_name}`);
      if (req.agent_input_type)
        await trx.updateTable('agents').set({ agent_input_type: req.agent_input_type, updated_at: new Date() }).where('id', '=', agent.id).execute();
    }
    if (req.source_filesystem_id) {
      // The version's source must be a filesystem of this namespace that the caller may read.
      const source = await filesystemForAccess(trx, perms, req.source_filesystem_id, 'read');
      if (source.namespace_id !== ns.id) throw notFound('Filesystem', req.source_filesystem_id);
    }

    // Checked once the key's permission is: the transaction undoes a just-created agent.
    if (req.source_filesystem_id !== null) {
      const source = await trx
        .selectFrom('filesystems')
        .select('id')
        .where('id', '=', req.source_filesystem_id)
        .where('namespace_id', '=', ns.id)
        .executeTakeFirst();
      if (!source) throw notFound(`Filesystem ${req.source_filesystem_id}`);
    }
    await sql`
      INSERT INTO branches (id, agent_id, git_branch, git_branch_normalized, replicas)
      VALUES (${newId('branch')}, ${agent.id}, ${req.branch}, ${normalizeGitBranch(req.branch)}, ${req.replicas})
      ON CONFLICT (agent_id, git_branch) DO NOTHING`.execute(trx);
    // The branch lock (see lockBranch), found by name: deploys, migrations and rollbacks of one branch serialize here.
    const branch = await trx
      .selectFrom('branches')
      .selectAll()
      .where('agent_id', '=', agent.id)
      .where('git_branch', '=', req.branch)
      .forNoKeyUpdate()
      .executeTakeFirstOrThrow();
    const current = branch.current_version_id
      ? await trx.selectFrom('versions').selectAll().where('id', '=', branch.current_version_id).executeTakeFirst()
      : undefined;

    const versionId = newId('version');
    const now = new Date();
    // The agent row's lock serializes concurrent deploys to any branch of the agent: numbers are gapless and in deploy order.
    const { last_version_number: number } = await trx
      .updateTable('agents')
      .set((eb) => ({ last_version_number: eb('last_version_number', '+', 1) }))
      .where('id', '=', agent.id)
      .returning('last_version_number')
      .executeTakeFirstOrThrow();
    await trx
      .insertInto('versions')
      .values({
        id: versionId,
        number,
        branch_id: branch.id,
        agent_id: agent.id,
        git_hash: req.git_hash,
        git_branch: req.branch,
        git_message: req.git_message,
        author_name: req.author_name,
        author_email: req.author_email,
        image_url: req.image_url,
        status: NEW_VERSION_STATUS,
        deployed_at: now,
        sdk_type: req.sdk_type,
        acp_type: req.acp_type,
        is_dirty: req.is_dirty,
        replicas: 0,
        desired_replicas: req.replicas,
        are_tasks_sticky: req.are_tasks_sticky,
        description: req.description,
        image_expires_at: new Date(now.getTime() + imageRetentionDays * 86_400_000),
        failure_reason: null,
        failure_diagnostics: null,
        last_rollback_at: null,
        rolled_back_at: null,
        retired_at: null,
        source_filesystem_id: req.source_filesystem_id,
        resources: req.resources === null ? null : JSON.stringify(req.resources),
        double_texting: req.double_texting,
        created_at: now,
        updated_at: now,
      })
      .execute();
    await trx
      .updateTable('branches')
      .set({
        replicas: req.replicas,
        updated_at: now,
        // A deploy revives a retired branch; a branch with nothing serving points at its first version.
        retired_at: null,
        retired_reason: null,
        ...(current ? {} : { current_version_id: versionId }),
      })
      .where('id', '=', branch.id)
      .execute();
    await appendEvent(trx, branch.id, versionId, 'VERSION_CREATED', {
      git_hash: req.git_hash,
      image_url: req.image_url,
      are_tasks_sticky: req.are_tasks_sticky,
    });

    let tasksMigrated = 0;
    if (!req.are_tasks_sticky && current && current.id !== versionId) {
      tasksMigrated = await moveRunningTasks(trx, branch.id, current.id, versionId, 'deploy');
    }
    return {
      agent_id: agent.id,
      branch_id: branch.id,
      version_id: versionId,
      version_status: NEW_VERSION_STATUS,
      message: `Version v${number} (${versionId}) of ${req.namespace}/${req.agent_name} is deploying on branch ${req.branch}`,
      tasks_migrated: tasksMigrated,
      version_number: number,
    };
  });
}

export interface RegisterResult {
  version: Version;
  tasks_migrated: number;
  agent_id: string;
  agent_name: string;
  branch_id: string;
  version_status: Version['status'];
}

export interface RegisterInput extends VersionDetails {
  version_id: string;
  status: (typeof REPORTED_VERSION_STATUSES)[number];
}

/** What comes with a happening: the ready replica count, why it failed, what the agent said of itself. */
export interface VersionDetails {
  replicas?: number;
  failure_reason?: string;
  failure_diagnostics?: { title: string; description: string; action: string };
  registration_metadata?: Record<string, unknown>;
}

/**
 * What the runtime observed about a version (the reconciler, in-process, with a system principal):
 * the same transition as a report, refused (409) where the table has no row.
 */
export async function recordRuntimeHappening(
  db: Db,
  perms: Permissions,
  versionId: string,
  happening: VersionHappening,
  details: VersionDetails = {},
): Promise<RegisterResult> {
  return db.transaction().execute(async (trx) => {
    const found = await versionById(trx, perms, 'write', versionId);
    return applyVersionHappening(trx, found.branch_id, found.id, happening, details, `${happening.replace('_', ' ')} does not apply`);
  });
}

/**
 * A happening of the version's own (ready, recovered, unhealthy, failed, runtime_failed,
 * registered), inside the caller's transaction: the keyed register and a registration with a token
 * (src/server/domain/registration.ts), and the runtime. The branch and the version are
 * locked, the new status comes from version-lifecycle.ts; `refusal` ends the 409's detail.
 */
export async function applyVersionHappening(
  trx: Trx,
  branchId: string,
  versionId: string,
  happening: VersionHappening,
  details: VersionDetails,
  refusal: string,
): Promise<RegisterResult> {
  const branch = await lockBranch(trx, branchId);
  const version = await trx.selectFrom('versions').selectAll().where('id', '=', versionId).forNoKeyUpdate().executeTakeFirstOrThrow();
  const to = next(version.status, happening);
  if (isRefusal(to)) throw conflict('invalid_transition', `Version ${namedVersion(version)} is ${version.status}; ${refusal}`);
  const now = new Date();
  let tasksMigrated = 0;

  if (version.status === 'DEPLOYING' && to === 'ACTIVE') {
    const previous =
      branch.current_version_id && branch.current_version_id !== version.id
        ? await trx.selectFrom('versions').selectAll().where('id', '=', branch.current_version_id).executeTakeFirst()
        : undefined;
    await setStatus(trx, version, to, { replicas: details.replicas ?? version.desired_replicas });
    await trx.updateTable('branches').set({ current_version_id: version.id, updated_at: now }).where('id', '=', branch.id).execute();
    await appendEvent(trx, branch.id, version.id, 'VERSION_ACTIVATED', {});
    await handOver(trx, branch.id, previous, version.id);
  } else if (version.status === 'UNHEALTHY' && to === 'ACTIVE') {
    await setStatus(trx, version, to, details.replicas !== undefined ? { replicas: details.replicas } : {});
    await appendEvent(trx, branch.id, version.id, 'VERSION_RECOVERED', {});
  } else if (version.status === 'ACTIVE' && to === 'UNHEALTHY') {
    await setStatus(trx, version, to);
    // The runtime's reason (a crash loop) stays on the event: a rollout to this version reverts on it.
    await appendEvent(trx, branch.id, version.id, 'VERSION_UNHEALTHY', details.failure_reason ? { failure_reason: details.failure_reason } : {});
  } else if (to === 'FAILED') {
    const reason = details.failure_reason ?? 'unknown';
    await setStatus(trx, version, to, {
      failure_reason: reason,
      failure_diagnostics: JSON.stringify(
        details.failure_diagnostics ?? {
          title: 'Deployment failed',
          description: `The version failed to start (${reason}).`,
          action: 'Check the version’s logs, fix the cause and deploy again.',
        },
      ),
      replicas: 0,
    });
    await appendEvent(trx, branch.id, version.id, 'VERSION_FAILED', { failure_reason: reason });
    // The branch keeps serving its previous version; tasks moved to the failed one go back.
    if (branch.current_version_id && branch.current_version_id !== version.id) {
      tasksMigrated = await moveRunningTasks(trx, branch.id, version.id, branch.current_version_id, 'deploy_failed');
    }
  } else if (to !== version.status) {
    throw new Error(`No effects defined for version ${version.status} -> ${to} (${happening})`);
  }
  if (to === 'ACTIVE') {
    // A replica of the agent is up: when, and what it said of itself.
    await trx
      .updateTable('agents')
      .set({
        registered_at: now,
        updated_at: now,
        ...(details.registration_metadata ? { registration_metadata: JSON.stringify(details.registration_metadata) } : {}),
      })
      .where('id', '=', version.agent_id)
      .execute();
  }
  return describeVersion(trx, version.id, tasksMigrated);
}

/** A version as the register endpoint answers it: the record, its agent's `namespace/name`, its branch. */
export async function describeVersion(trx: Trx, versionId: string, tasksMigrated = 0): Promise<RegisterResult> {
  const row = await trx
    .selectFrom('versions')
    .innerJoin('agents', 'agents.id', 'versions.agent_id')
    .innerJoin('namespaces', 'namespaces.id', 'agents.namespace_id')
    .selectAll('versions')
    .select(['agents.name as agent_name', 'namespaces.slug'])
    .where('versions.id', '=', versionId)
    .executeTakeFirstOrThrow();
  const version = toVersion(row);
  return {
    version,
    tasks_migrated: tasksMigrated,
    agent_id: row.agent_id,
    agent_name: `${row.slug}/${row.agent_name}`,
    branch_id: row.branch_id,
    version_status: version.status,
  };
}

export interface RollbackResult {
  branch_id: string;
  rolled_back_version_id: string;
  target_version: Version;
  tasks_migrated: number;
  from_version_id: string;
  to_version_id: string;
  from_git_hash: string;
  to_git_hash: string;
  version_status: Version['status'];
  message: string;
}

/** The answer of a rollback (or its dry run), under this service's names and the upstream API's. */
function rollbackResult(branch: { id: string; git_branch: string }, from: VersionRow, target: Version, tasksMigrated: number, dryRun: boolean): RollbackResult {
  const moved = `${plural(tasksMigrated, 'running task')} ${dryRun ? 'would move' : 'moved'}`;
  const route = `from v${from.number} (${from.git_hash.slice(0, 7)}) to v${target.number} (${target.git_hash.slice(0, 7)})`;
  return {
    branch_id: branch.id,
    rolled_back_version_id: from.id,
    target_version: target,
    tasks_migrated: tasksMigrated,
    from_version_id: from.id,
    to_version_id: target.id,
    from_git_hash: from.git_hash,
    to_git_hash: target.git_hash,
    version_status: target.status,
    message: dryRun ? `Branch ${branch.git_branch} would roll back ${route}; ${moved}` : `Branch ${branch.git_branch} rolled back ${route}; ${moved}`,
  };
}

/** `POST /branches/{id}/rollback`: current -> ROLLED_BACK; target back to ACTIVE; RUNNING tasks follow. */
export async function rollback(db: Db, perms: Permissions, branchId: string, targetId: string | null, dryRun: boolean): Promise<RollbackResult> {
  return db.transaction().execute(async (trx) => {
    await branchById(trx, perms, 'write', branchId);
    const branch = await lockBranch(trx, branchId);
    if (branch.retired_at) throw conflict('branch_retired', `Branch ${named(branch.git_branch, branchId)} is retired`);
    const current = branch.current_version_id
      ? await trx.selectFrom('versions').selectAll().where('id', '=', branch.current_version_id).executeTakeFirst()
      : undefined;
    const currentTo = current ? next(current.status, 'rolled_back') : undefined;
    if (!current || !currentTo || isRefusal(currentTo)) {
      throw conflict('nothing_to_roll_back', `Branch ${named(branch.git_branch, branchId)} has no serving version to roll back`);
    }
    let target: VersionRow | undefined;
    if (targetId) {
      target = await trx.selectFrom('versions').selectAll().where('id', '=', targetId).executeTakeFirst();
      if (!target || target.branch_id !== branchId) throw invalid(['body', 'target_version_id'], `Version ${targetId} is not a version of branch ${branchId}`);
      if (target.id === current.id) throw invalid(['body', 'target_version_id'], `Version ${targetId} is already the branch’s current version`);
      if (isRefusal(next(target.status, 'restored'))) throw conflict('invalid_target', `Version ${namedVersion(target)} failed to deploy; it cannot serve`);
    } else {
      target = await trx
        .selectFrom('versions')
        .selectAll()
        .where('branch_id', '=', branchId)
        .where('id', '!=', current.id)
        .where('status', 'not in', refusing('restored'))
        .where('deployed_at', '<', current.deployed_at)
        .where((eb) => eb.or([eb('image_expires_at', 'is', null), eb('image_expires_at', '>', new Date())]))
        .orderBy('deployed_at', 'desc')
        .orderBy('id', 'desc')
        .limit(1)
        .executeTakeFirst();
      if (!target) throw conflict('no_rollback_target', `Branch ${named(branch.git_branch, branchId)} has no earlier version whose image is still available`);
    }
    if (target.image_expires_at && new Date(target.image_expires_at).getTime() <= Date.now()) {
      throw conflict(
        'image_expired',
        `The image of version ${namedVersion(target)} expired at ${new Date(target.image_expires_at).toISOString()}; deploy it again instead`,
      );
    }
    if (dryRun) {
      const count = await trx
        .selectFrom('tasks')
        .select(sql<number>`count(*)::int`.as('n'))
        .where('current_version_id', '=', current.id)
        .where('status', '=', 'RUNNING')
        .executeTakeFirstOrThrow();
      return rollbackResult(branch, current, toVersion(target), count.n, true);
    }
    const now = new Date();
    await setStatus(trx, current, currentTo, { rolled_back_at: now });
    await appendEvent(trx, branchId, current.id, 'VERSION_ROLLED_BACK_FROM', { to_version_id: target.id });
    // The target redeploys from its retained image; no runtime driver runs images yet, so it is ready at once.
    const targetTo = next(target.status, 'restored');
    if (isRefusal(targetTo)) throw conflict('invalid_target', `Version ${namedVersion(target)} failed to deploy; it cannot serve`);
    await setStatus(trx, target, targetTo, {
      rollback_count: sql`rollback_count + 1`,
      last_rollback_at: now,
      retired_at: null,
      replicas: target.desired_replicas,
    });
    await trx.updateTable('branches').set({ current_version_id: target.id, updated_at: now }).where('id', '=', branchId).execute();
    await appendEvent(trx, branchId, target.id, 'VERSION_ROLLED_BACK_TO', { from_version_id: current.id });
    await appendEvent(trx, branchId, target.id, 'VERSION_ACTIVATED', { rollback: true });
    const moved = await moveRunningTasks(trx, branchId, current.id, target.id, 'rollback');
    const after = await trx.selectFrom('versions').selectAll().where('id', '=', target.id).executeTakeFirstOrThrow();
    return rollbackResult(branch, current, toVersion(after), moved, false);
  });
}

/** `POST /branches/{id}/retire`: refused while live tasks remain unless forced, which terminates them. */
export async function retireBranch(db: Db, perms: Permissions, branchId: string, reason: string, force: boolean): Promise<Branch> {
  return db.transaction().execute(async (trx) => {
    await branchById(trx, perms, 'write', branchId);
    const branch = await lockBranch(trx, branchId);
    const live = await trx
      .selectFrom('tasks')
      .select(sql<number>`count(*)::int`.as('n'))
      .where('branch_id', '=', branchId)
      .where('status', 'in', LIVE_TASK_STATUSES)
      .executeTakeFirstOrThrow();
    if (live.n > 0 && !force) {
      throw conflict(
        'branch_has_tasks',
        `Branch ${named(branch.git_branch, branchId)} still has ${plural(Number(live.n), 'running or idle task')}; pass force: true to terminate them`,
      );
    }
    const now = new Date();
    if (live.n > 0) {
      const terminated = await trx
        .updateTable('tasks')
        .set({ status: 'TERMINATED', status_reason: `Branch retired: ${reason}`, updated_at: now })
        .where('branch_id', '=', branchId)
        .where('status', 'in', LIVE_TASK_STATUSES)
        .returning('id')
        .execute();
      await recordTaskChange(
        trx,
        terminated.map((t) => t.id),
      );
    }
    const retire = bulkMove('retired');
    const retired = await trx
      .updateTable('versions')
      .set({ status: retire.to, retired_at: now, updated_at: now })
      .where('branch_id', '=', branchId)
      .where('status', 'in', retire.from)
      .returning('id')
      .execute();
    for (const v of retired) await appendEvent(trx, branchId, v.id, 'VERSION_RETIRED', { reason: 'branch_retired' });
    await trx.updateTable('branches').set({ retired_at: now, retired_reason: reason, updated_at: now }).where('id', '=', branchId).execute();
    await appendEvent(trx, branchId, null, 'BRANCH_RETIRED', { reason, tasks_terminated: live.n });
    const row = await selectBranchRows(trx).where('b.id', '=', branchId).executeTakeFirstOrThrow();
    return toBranch(row as BranchRow);
  });
}

/** Branches joined with their current version's summary columns, as `toBranch` expects. */
export function selectBranchRows(db: Trx) {
  return db
    .selectFrom('branches as b')
    .leftJoin('versions as cv', 'cv.id', 'b.current_version_id')
    .selectAll('b')
    .select([
      'cv.id as cv_id',
      'cv.git_hash as cv_git_hash',
      'cv.status as cv_status',
      'cv.deployed_at as cv_deployed_at',
      'cv.git_message as cv_git_message',
      'cv.source_filesystem_id as cv_source_filesystem_id',
    ]);
}
