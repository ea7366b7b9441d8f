/**
 * `GET /status` (README "Status"): what `agentctl status` shows, gathered in one request. With an
 * agent: its branches, serving and in-progress versions with their live replicas, and everything
 * else about that agent; without: tasks, deliveries and failures of every agent the key may read.
 */
import { sql, type Expression, type ExpressionBuilder, type Selectable, type SqlBool } from 'kysely';
import { jsonArrayFrom } from 'kysely/helpers/postgres';
import { OPEN_DELIVERY_STATUSES } from '../../contract/conversation.js';
import { TASK_STATUSES } from '../../contract/lifecycle.js';
import { STATUS_FAILURES_LIMIT, type StatusReport, type StatusVersion } from '../../contract/status.js';
import type { Permissions } from '../auth/policy.js';
import type { Db, Engine, RolloutsTable } from '../store/db.js';
import { iso } from '../store/mappers.js';
import { executePrepared } from '../store/prepared.js';
import { agentById, agentByPath, inCallerOrg } from './lookup.js';
import { splitAgentName } from './tasks.js';
import { visibleRows } from './visibility.js';
import { rolloutsQuery, toRollout } from './rollouts.js';
import { ACTIVE_ROLLOUT_STATUSES } from '../../contract/rollout-rules.js';

/**
 * The statuses the statement filters on are written into it, not bound: it runs prepared, and a
 * generic plan uses a partial index (deliveries_open, rollouts_active) only when it can see the
 * statuses (bound, it scanned all open deliveries once per task of the agent). Only ids are bound.
 */
const literals = <T extends string>(values: readonly T[]) => values.map((value) => sql.lit(value));

/** Versions shown as in progress beside the serving one: coming up, or draining their tasks. */
const IN_PROGRESS_STATUSES = ['DEPLOYING', 'DRAINING'] as const;

export async function getStatus(db: Db, perms: Permissions, query: { agent?: string }, server: { version: string; engine: Engine }): Promise<StatusReport> {
  const agent = query.agent
    ? query.agent.startsWith('agt_')
      ? await agentById(db, perms, 'read', query.agent)
      : await agentByPath(db, perms, 'read', splitAgentName(query.agent).namespace, splitAgentName(query.agent).agent)
    : undefined;
  const [report] = (await executePrepared(db, statusStatement(db, perms, agent))).rows;
  const { task_counts: taskCounts, deliveries, failed_versions: failedVersions, handler_errors: handlerErrors, failed_tasks: failedTasks } = report;
  const agentSection = agent
    ? agentStatus({ ...agent, namespace_slug: report.namespace_slug ?? '' }, report.branches, report.versions as AgentVersion[])
    : null;
  const activeRollouts = { rollouts: report.rollouts.map((r) => toRollout(r as unknown as Selectable<RolloutsTable>)) };

  const now = new Date();
  const counted = new Map(taskCounts.map((row) => [row.status as string, Number(row.n)]));
  const tasks = Object.fromEntries(TASK_STATUSES.filter((s) => s !== 'DELETED').map((s) => [s, counted.get(s) ?? 0]));
  const open = new Map(deliveries.map((row) => [row.status as string, row]));
  const oldest = deliveries.reduce<Date | null>((min, row) => {
    const at = new Date(row.oldest);
    return min === null || at < min ? at : min;
  }, null);
  return {
    server: { version: server.version, engine: server.engine, time: now.toISOString() },
    agent: agentSection,
    tasks,
    rollouts: activeRollouts.rollouts.map((r) => ({
      id: r.id,
      branch_id: r.branch_id,
      from_version_id: r.from_version_id,
      to_version_id: r.to_version_id,
      step: `${r.status === 'PAUSED' ? 'paused at ' : ''}step ${r.step} of ${r.steps.length} (${r.percent}%)`,
      started_at: r.created_at,
    })),
    deliveries: {
      pending: (open.get('pending')?.n ?? 0) + (open.get('in_flight')?.n ?? 0),
      leased: open.get('leased')?.n ?? 0,
      oldest_created_at: iso(oldest),
      oldest_age_ms: oldest === null ? null : Math.max(0, now.getTime() - oldest.getTime()),
    },
    failures: {
      versions: failedVersions.map((v) => ({
        id: v.id,
        number: v.number,
        agent_id: v.agent_id,
        git_branch: v.git_branch,
        failure_reason: v.failure_reason,
        failure_diagnostics: (v.failure_diagnostics as { title: string; description: string; action: string } | null) ?? null,
        deployed_at: iso(v.deployed_at)!,
      })),
      handler_errors: handlerErrors.map((m) => {
        const report = (m.content as { data: { handler_error: { handler?: string; message?: string } } }).data.handler_error;
        return {
          task_id: m.task_id,
          message_id: m.id,
          handler: String(report.handler ?? ''),
          message: String(report.message ?? ''),
          created_at: iso(m.created_at)!,
        };
      }),
      tasks: failedTasks.map((t) => ({ id: t.id, name: t.name, status_reason: t.status_reason, updated_at: iso(t.updated_at)! })),
    },
  };
}

/**
 * The report in one statement, each section a JSON array of its rows: one round trip (after the
 * agent's lookup). getStatus runs it prepared: on PGlite planning its nine parts cost more than
 * running them (prepared.ts).
 */
export function statusStatement(db: Db, perms: Permissions, agent: { id: string; namespace_id: string } | undefined) {
  // Rows of the one agent, else of every agent the key may read, by a table's agent and namespace columns.
  const scope =
    (table: 'tasks' | 'versions' | 't') =>
    // biome-ignore lint/suspicious/noExplicitAny: the condition fits each table it is given
    (eb: ExpressionBuilder<any, any>): Expression<SqlBool> => {
      if (agent) return eb(eb.ref(`${table}.agent_id`), '=', agent.id);
      const namespaceColumn = table === 'versions' ? 'agents.namespace_id' : `${table}.namespace_id`;
      return eb.and([inCallerOrg(perms, namespaceColumn)(eb), visibleRows(eb, perms.visible('agent', 'read'), namespaceColumn, `${table}.agent_id`)]);
    };

  return db.selectNoFrom((eb) => [
    // The agent's section (none without an agent: no agent has the empty id).
    eb
      .selectFrom('namespaces')
      .select('slug')
      .where('id', '=', agent?.namespace_id ?? '')
      .as('namespace_slug'),
    jsonArrayFrom(agentVersions(db, agent?.id ?? '')).as('versions'),
    jsonArrayFrom(
      db
        .selectFrom('branches')
        .select(['id', 'git_branch', 'current_version_id'])
        .where('agent_id', '=', agent?.id ?? '')
        .where('retired_at', 'is', null)
        .orderBy('git_branch'),
    ).as('branches'),
    // Only those in progress, filtered by the database (the finished ones of the org are most rows).
    jsonArrayFrom(
      rolloutsQuery(db, perms, { agent_id: agent?.id })
        .where('rollouts.status', 'in', literals(ACTIVE_ROLLOUT_STATUSES))
        .selectAll()
        .orderBy('id', 'desc')
        .limit(1000),
    ).as('rollouts'),
    jsonArrayFrom(
      db
        .selectFrom('tasks')
        .select(['status', sql<number>`count(*)::int`.as('n')])
        .where(scope('tasks'))
        .where('status', '!=', sql.lit('DELETED'))
        .groupBy('status'),
    ).as('task_counts'),
    jsonArrayFrom(
      db
        .selectFrom('deliveries')
        .innerJoin('tasks as t', 't.id', 'deliveries.task_id')
        .select(['deliveries.status', sql<number>`count(*)::int`.as('n'), sql<Date>`min(deliveries.created_at)`.as('oldest')])
        .where('deliveries.status', 'in', literals(OPEN_DELIVERY_STATUSES))
        .where(scope('t'))
        .groupBy('deliveries.status'),
    ).as('deliveries'),
    jsonArrayFrom(
      db
        .selectFrom('versions')
        .innerJoin('agents', 'agents.id', 'versions.agent_id')
        .select([
          'versions.id',
          'versions.number',
          'versions.agent_id',
          'versions.git_branch',
          'versions.failure_reason',
          'versions.failure_diagnostics',
          'versions.deployed_at',
        ])
        .where('versions.status', '=', sql.lit('FAILED'))
        .where(scope('versions'))
        .orderBy('versions.deployed_at', 'desc')
        .orderBy('versions.id', 'desc')
        .limit(STATUS_FAILURES_LIMIT),
    ).as('failed_versions'),
    jsonArrayFrom(
      db
        .selectFrom('messages as m')
        .innerJoin('tasks as t', 't.id', 'm.task_id')
        .select(['m.id', 'm.task_id', 'm.content', 'm.created_at'])
        .where(sql<SqlBool>`m.content->'data'->'handler_error' IS NOT NULL`)
        .where(scope('t'))
        .orderBy('m.created_at', 'desc')
        .orderBy('m.id', 'desc')
        .limit(STATUS_FAILURES_LIMIT),
    ).as('handler_errors'),
    jsonArrayFrom(
      db
        .selectFrom('tasks')
        .select(['id', 'name', 'status_reason', 'updated_at'])
        .where('status', '=', sql.lit('FAILED'))
        .where(scope('tasks'))
        .orderBy('updated_at', 'desc')
        .orderBy('id', 'desc')
        .limit(STATUS_FAILURES_LIMIT),
    ).as('failed_tasks'),
  ]);
}

/** The agent's serving versions and those coming up or draining, with their live replicas and tasks. */
function agentVersions(db: Db, agentId: string) {
  return db
    .selectFrom('versions')
    .select((eb) => [
      'versions.id',
      'versions.branch_id',
      'versions.number',
      'versions.status',
      'versions.git_hash',
      'versions.deployed_at',
      'versions.replicas',
      eb
        .selectFrom('version_replicas')
        .select(sql<number>`count(*)::int`.as('n'))
        .whereRef('version_replicas.version_id', '=', 'versions.id')
        .where('version_replicas.live', '=', true)
        .as('live_replicas'),
      eb
        .selectFrom('tasks')
        .select(sql<number>`count(*)::int`.as('n'))
        .whereRef('tasks.current_version_id', '=', 'versions.id')
        .where('tasks.status', 'in', literals(['RUNNING', 'IDLE'] as const))
        .as('tasks'),
    ])
    .where('versions.agent_id', '=', agentId)
    .where((eb) =>
      eb.or([
        eb('versions.status', 'in', literals(IN_PROGRESS_STATUSES)),
        eb(
          'versions.id',
          'in',
          eb.selectFrom('branches').select('current_version_id').where('agent_id', '=', agentId).where('current_version_id', 'is not', null).$castTo<string>(),
        ),
      ]),
    )
    .orderBy('versions.deployed_at', 'desc')
    .orderBy('versions.id', 'desc');
}

interface AgentVersion {
  id: string;
  branch_id: string;
  number: number;
  status: string;
  git_hash: string;
  deployed_at: string;
  replicas: number;
  live_replicas: number | null;
  tasks: number | null;
}

/** The agent's live branches, each with its serving version and the versions coming up or draining. */
function agentStatus(
  agent: { id: string; name: string; namespace_slug: string },
  branches: Array<{ id: string; git_branch: string; current_version_id: string | null }>,
  versions: AgentVersion[],
): StatusReport['agent'] {
  const shown = (v: AgentVersion): StatusVersion => ({
    id: v.id,
    number: v.number,
    status: v.status as StatusVersion['status'],
    git_hash: v.git_hash,
    deployed_at: iso(v.deployed_at)!,
    replicas: v.replicas,
    live_replicas: Number(v.live_replicas ?? 0),
  });
  return {
    id: agent.id,
    name: agent.name,
    namespace_slug: agent.namespace_slug,
    branches: branches.map((branch) => {
      const serving = versions.find((v) => v.id === branch.current_version_id);
      return {
        id: branch.id,
        git_branch: branch.git_branch,
        serving: serving ? shown(serving) : null,
        in_progress: versions
          .filter((v) => v.branch_id === branch.id && v.id !== branch.current_version_id && (IN_PROGRESS_STATUSES as readonly string[]).includes(v.status))
          .map((v) => ({ ...shown(v), tasks: Number(v.tasks ?? 0) })),
      };
    }),
  };
}
