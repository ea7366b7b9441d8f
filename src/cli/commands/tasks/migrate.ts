import type { MigrateTasksRequest, MigrateTasksResponse } from '../../../contract/endpoints.js';
import { isIn, ROUTABLE_VERSION_STATUSES } from '../../../contract/lifecycle.js';
import { migrationChoiceProblem } from '../../../contract/migration.js';
import { defineCommand } from '../../command.js';
import type { CommandContext } from '../../context.js';
import { usageError } from '../../errors.js';
import { planConfirmApply } from '../../confirm.js';
import { table, taskColumns } from '../../output/resources.js';
import { agentPathOf, resolveTaskId, resolveVersionId, shortHash } from '../../refs.js';
import { shellCommand } from '../../shell.js';
import { plural } from '../../../contract/plural.js';
import { idsOnly, nameBook, versionLabels } from '../../names.js';
import type { Task } from '../../../contract/resources.js';
import { versionLabel } from '../../../contract/version-ref.js';
import { agent } from '../../options.js';
import { ROLLOUT_OPTIONS, startRollout, wantsRollout } from '../../rollout-start.js';
import type { Outcome } from '../../command.js';
import { rehearsalOutcome, rehearse } from '../../rehearsal.js';

export default defineCommand({
  path: ['tasks', 'migrate'],
  summary: 'Move tasks between versions of one branch (shows the plan and asks on a terminal)',
  description:
    'Source: --from REF (every RUNNING task on that version) or --task TASK (a task_ id or name; repeat). Target: --to REF or --to-latest. A REF is vN or a unique git-hash prefix (4+ characters) of the --agent (default: agentctl.json), or a ver_ id. --yes applies without asking; where no prompt is possible (--json, CI, no terminal) it is needed. With --steps, --watch or --max-error-rate it starts a rollout instead (agentctl rollouts): the tasks move in steps, each watched, and go back by themselves when the moved tasks fail more than the ones left.',
  options: [
    { flags: '--from <ref>', description: 'Move every RUNNING task of this version', field: 'from_version_id' },
    { flags: '--task <task>', description: 'Move this task (task_ id or name); repeat for more', repeatable: true, field: 'task_ids' },
    { flags: '--to <ref>', description: 'Target version', field: 'to_version_id' },
    { flags: '--to-latest', description: 'Target the branch’s newest ACTIVE or DEPLOYING version' },
    { ...agent, description: 'Agent (namespace/name) for vN and git-hash references' },
    { flags: '--dry-run', description: 'Only show what would move' },
    ...ROLLOUT_OPTIONS,
    {
      flags: '--rehearse',
      description: 'Move nothing: replay the tasks’ recorded events on the target in shadow tasks and report the differences (exit 1 on regressions)',
    },
    { flags: '--sample <n>', description: 'With --rehearse: replay this many of the tasks, picked at random', integer: true },
    { flags: '--max-events <n>', description: 'With --rehearse: replay at most this many events per task (default 1000)', integer: true },
  ],
  examples: [
    'agentctl tasks migrate --from v1 --to-latest --agent default/bot',
    'agentctl tasks migrate --from ver_01J... --to-latest',
    'agentctl tasks migrate --agent default/bot --from 3f2a9c1 --to 9b8e7d6 --yes',
    'agentctl tasks migrate --task task_01J... --task task_01K... --to ver_01J... --yes --json',
    'agentctl tasks migrate --agent default/bot --from v1 --to-latest --steps 10,50,100 --watch 5m --max-error-rate 2%',
    'agentctl tasks migrate --from v1 --to v2 --rehearse --sample 20 --max-events 200',
  ],
  notFoundNext: 'agentctl versions list --agent <ns/name>',
  handler: async (ctx, _args, options) => {
    const taskRefs: string[] = options.task ?? [];
    const shapeProblem =
      migrationChoiceProblem('source', { names: ['--from REF', '--task ID (repeatable)'], given: [Boolean(options.from), taskRefs.length > 0] }) ??
      migrationChoiceProblem('target', { names: ['--to REF', '--to-latest'], given: [Boolean(options.to), Boolean(options.toLatest)] });
    if (shapeProblem) throw usageError(shapeProblem, undefined, 'agentctl tasks migrate --from <version> --to-latest');
    if (wantsRollout(options)) {
      if (options.rehearse)
        throw usageError(
          '--rehearse moves nothing, a rollout moves tasks: rehearse first, then start the rollout',
          undefined,
          'agentctl tasks migrate --from v1 --to v2 --rehearse',
        );
      return startRollout(ctx, options);
    }
    const client = await ctx.client();
    // Task names as ids, a few requests at a time (a migration may name up to 1000 tasks).
    const taskIds: string[] = [];
    for (let i = 0; i < taskRefs.length; i += 16) taskIds.push(...(await Promise.all(taskRefs.slice(i, i + 16).map((ref) => resolveTaskId(client, ref)))));
    const body: Partial<MigrateTasksRequest> = {
      from_version_id: options.from ? await resolveVersionId(client, options.from, options.agent, '--from') : null,
      task_ids: taskIds.length ? taskIds : null,
      to_version_id: options.to ? await resolveVersionId(client, options.to, options.agent, '--to') : null,
      to_latest: Boolean(options.toLatest),
    };
    if (options.rehearse) return rehearseMigration(ctx, body, options);
    if (options.sample !== undefined || options.maxEvents !== undefined)
      throw usageError('--sample and --max-events go with --rehearse', undefined, 'agentctl tasks migrate --from v1 --to v2 --rehearse --sample 10');
    const retry = shellCommand(
      'agentctl',
      'tasks',
      'migrate',
      ...(options.agent ? ['--agent', options.agent] : []),
      ...(options.from ? ['--from', options.from] : []),
      ...taskRefs.flatMap((ref) => ['--task', ref]),
      ...(options.to ? ['--to', options.to] : []),
      options.toLatest && '--to-latest',
      '--yes',
    );

    // Where each task is now, so the undo command can send it back (specific mode may span versions).
    const before = body.task_ids ? await currentVersions(ctx, body.task_ids) : undefined;

    const outcome = await planConfirmApply(ctx, {
      plan: () => ctx.call('migrateTasks', { body: { ...body, dry_run: true } }),
      describe: (plan) => planText(ctx, plan.data, body, before),
      isEmpty: (plan) => plan.data.tasks.length === 0,
      question: (plan) => `Move ${plural(plan.data.tasks.length, 'task')}?`,
      needs: 'Migrating tasks needs confirmation',
      retry,
      dryRun: options.dryRun,
      apply: () => ctx.call('migrateTasks', { body: { ...body, dry_run: false } }),
    });
    if (!outcome.applied) {
      if (options.dryRun)
        return {
          json: outcome.plan!.raw,
          view: table(
            await taskTable(ctx, outcome.plan!.data.tasks, outcome.plan!.data.branch_id),
            outcome.plan!.data.tasks,
            'Dry run: nothing would move.',
            'Dry run: the plan (nothing has moved)',
          ),
        };
      return { json: undefined, view: table(taskColumns(idsOnly, new Map()), [], 'Nothing to move.') };
    }
    const { data, raw } = outcome.result;
    if (data.tasks.length === 0) {
      ctx.io.stderr.write(`${ctx.chalk.yellow('warning:')} ${await nothingMoved(ctx, body)}\n`);
      return { json: raw, view: table(taskColumns(idsOnly, new Map()), [], 'No task was moved.') };
    }
    ctx.success(
      `Moved ${plural(data.tasks.length, 'task')} to ${versionLabel(data.to_version.number)} (${shortHash(data.to_version.git_hash)}, ${data.to_version.status}; ${data.to_version.id})`,
    );
    for (const line of await undoLines(ctx, data, body, before)) ctx.info(line);
    return { json: raw, view: table(await taskTable(ctx, data.tasks, data.branch_id), data.tasks, 'No task was moved.') };
  },
});

/** `--rehearse`: the migration's target (the plan says which, for --to-latest), then a rehearsal of its tasks. */
async function rehearseMigration(ctx: CommandContext, body: Partial<MigrateTasksRequest>, options: Record<string, unknown>): Promise<Outcome> {
  if (options.dryRun) throw usageError('--rehearse moves nothing already; leave out --dry-run');
  const plan = await ctx.call('migrateTasks', { body: { ...body, dry_run: true } });
  const { data, raw } = await rehearse(ctx, {
    from_version_id: body.from_version_id ?? null,
    task_ids: body.task_ids ?? null,
    to_version_id: plan.data.to_version.id,
    ...(options.sample !== undefined ? { sample: options.sample as number } : {}),
    ...(options.maxEvents !== undefined ? { max_events: options.maxEvents as number } : {}),
  });
  return rehearsalOutcome(ctx, data, raw);
}

/** The task table's columns, with the names and version numbers these tasks need (their agent is the branch's). */
async function taskTable(ctx: CommandContext, tasks: Task[], branchId: string) {
  if (ctx.globals.json || tasks.length === 0) return taskColumns(idsOnly, new Map());
  const client = await ctx.client();
  const agent = await client.getAgent({ params: { agent_id: (await client.getBranch({ params: { branch_id: branchId } })).agent_id } });
  for (const task of tasks) task.agents ??= [agent];
  const [names, versions] = await Promise.all([
    nameBook(ctx, ['namespaces']),
    versionLabels(
      ctx,
      tasks.map((t) => t.current_version_id),
    ),
  ]);
  return taskColumns(names, versions);
}

async function currentVersions(ctx: CommandContext, ids: string[]): Promise<Map<string, string>> {
  const client = await ctx.client();
  const result = new Map<string, string>();
  // A few at a time: a migration may name up to 1000 tasks.
  for (let i = 0; i < ids.length; i += 16) {
    const tasks = await Promise.all(ids.slice(i, i + 16).map((task_id) => client.getTask({ params: { task_id } })));
    for (const task of tasks) if (task.current_version_id) result.set(task.id, task.current_version_id);
  }
  return result;
}

function sources(response: MigrateTasksResponse, body: Partial<MigrateTasksRequest>, before?: Map<string, string>): Map<string, string[]> {
  const bySource = new Map<string, string[]>();
  for (const task of response.tasks) {
    const from = body.from_version_id ?? before?.get(task.id);
    if (!from || from === response.to_version.id) continue;
    bySource.set(from, [...(bySource.get(from) ?? []), task.id]);
  }
  return bySource;
}

/** The plan in the words people use: the branch by name, versions by number (ids with --wide). */
async function planText(
  ctx: CommandContext,
  response: MigrateTasksResponse,
  body: Partial<MigrateTasksRequest>,
  before?: Map<string, string>,
): Promise<string> {
  const client = await ctx.client();
  const label = (v: { id: string; number: number }) => (ctx.globals.wide ? `${versionLabel(v.number)} (${v.id})` : versionLabel(v.number));
  const to = response.to_version;
  const fromIds = [...sources(response, body, before).keys()];
  if (!fromIds.length && body.from_version_id) fromIds.push(body.from_version_id);
  const from = await Promise.all(fromIds.map(async (id) => label(await client.getVersion({ params: { version_id: id } }))));
  const branch = ctx.globals.wide ? `${to.git_branch} (${response.branch_id})` : to.git_branch;
  return `Plan: move ${plural(response.tasks.length, 'task')} on branch ${branch} from ${from.length ? from.join(', ') : 'their versions'} to ${label(to)} (${shortHash(to.git_hash)} "${to.git_message}", ${to.status}).`;
}

/** Why a migration moved nothing, in the words of its source: `v1 is RETIRED and has no RUNNING or IDLE tasks`. */
async function nothingMoved(ctx: CommandContext, body: Partial<MigrateTasksRequest>): Promise<string> {
  if (!body.from_version_id) return 'No task moved: the named tasks are already on the target version.';
  const from = await (await ctx.client()).getVersion({ params: { version_id: body.from_version_id } });
  return `No task moved: ${versionLabel(from.number)} is ${from.status} and has no RUNNING or IDLE tasks.`;
}

/**
 * The undo command per source version, when tasks can still go back there: a DRAINING source
 * retires the moment its last task leaves, and a retired version takes no tasks.
 */
async function undoLines(
  ctx: CommandContext,
  response: MigrateTasksResponse,
  body: Partial<MigrateTasksRequest>,
  before?: Map<string, string>,
): Promise<string[]> {
  const client = await ctx.client();
  const lines: string[] = [];
  for (const [from, ids] of sources(response, body, before)) {
    const { status, number } = await client.getVersion({ params: { version_id: from } });
    if (isIn(ROUTABLE_VERSION_STATUSES, status)) {
      lines.push(`Undo with: ${shellCommand('agentctl', 'tasks', 'migrate', ...ids.flatMap((id) => ['--task', id]), '--to', from, '--yes')}`);
    } else {
      // A pasteable rollback names the agent and branch, which the migration's answer gives only as ids.
      const branch = await client.getBranch({ params: { branch_id: response.branch_id } });
      const agent = await agentPathOf(client, branch.agent_id);
      const rollback = shellCommand(
        'agentctl',
        'rollback',
        '--agent',
        `${agent.namespace_slug}/${agent.agent_name}`,
        '--branch',
        branch.git_branch,
        '--to',
        versionLabel(number),
        '--yes',
      );
      lines.push(
        `${versionLabel(number)} is now ${status}: it takes no tasks, so they cannot be moved back. To serve it again, roll the branch back: ${rollback}`,
      );
    }
  }
  return lines;
}
