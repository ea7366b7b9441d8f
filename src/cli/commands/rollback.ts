import { isIn, SETTLED_VERSION_STATUSES } from '../../contract/lifecycle.js';
import { defineCommand } from '../command.js';
import type { Client } from '../../client/index.js';
import type { Branch } from '../../contract/resources.js';
import { plural } from '../../contract/plural.js';
import { versionLabel } from '../../contract/version-ref.js';
import type { CommandContext } from '../context.js';
import { usageError } from '../errors.js';
import { currentGitBranch } from '../git.js';
import { confirmApply } from '../confirm.js';
import { record } from '../output/view.js';
import { agentPathOf, requireAgentOption, resolveBranch, resolveVersionId, shortHash } from '../refs.js';
import { agentctl, shellCommand } from '../shell.js';
import { waitForVersion } from '../wait.js';
import { agent, waitOptions } from '../options.js';

export default defineCommand({
  path: ['rollback'],
  summary: 'Roll a branch back to an earlier version (asks first; --yes to skip)',
  description: 'Without --to, the newest earlier version whose image has not expired. State records and API keys are not rolled back.',
  options: [
    { ...agent, description: 'Agent as namespace/name' },
    {
      flags: '--branch <name>',
      description: 'Git branch (or a br_ id); default: the checked-out git branch when the agent has it, else the agent’s only branch',
    },
    { flags: '--to <ref>', description: 'Target version: vN, a git-hash prefix (4+ characters) or a ver_ id', field: 'target_version_id' },
    ...waitOptions,
  ],
  examples: [
    'agentctl rollback',
    'agentctl rollback --agent default/bot --branch main',
    'agentctl rollback --agent default/bot --branch main --to 3f2a9c1 --yes --json',
  ],
  notFoundNext: 'agentctl branches list --agent <ns/name>',
  handler: async (ctx, _args, options) => {
    const agent = requireAgentOption(options.agent, 'agentctl rollback');
    const client = await ctx.client();
    const branch = options.branch ? await resolveBranch(client, options.branch, agent, 'agentctl rollback') : await defaultBranch(ctx, client, agent);
    const targetId = options.to ? await resolveVersionId(client, options.to, agent, '--to') : null;
    const rolledBack = async (id: string) => versionLabel((await client.getVersion({ params: { version_id: id } })).number);
    const request = (dryRun: boolean) =>
      ctx.call('rollbackBranch', { params: { branch_id: branch.id }, body: { target_version_id: targetId, dry_run: dryRun } });

    const { data, raw } = await confirmApply(ctx, {
      plan: async () => (await request(true)).data,
      describe: async ({ target_version: t, rolled_back_version_id, tasks_migrated }) =>
        `Plan: branch ${branch.git_branch} goes from ${await rolledBack(rolled_back_version_id)} back to ${versionLabel(t.number)} (${shortHash(t.git_hash)} "${t.git_message}", deployed ${t.deployed_at}); ${plural(tasks_migrated, 'running task')} ${tasks_migrated === 1 ? 'moves' : 'move'} with it.`,
      question: 'Roll back?',
      needs: 'Rolling back needs confirmation',
      retry: agentctl('rollback', '--agent', agent, '--branch', branch.git_branch, ...(options.to ? ['--to', options.to] : []), '--yes'),
      apply: () => request(false),
    });
    const from = await rolledBack(data.rolled_back_version_id);
    const undo = shellCommand('agentctl', 'rollback', '--agent', agent, '--branch', branch.git_branch, '--to', from, '--yes');
    ctx.success(`Rolled back ${branch.git_branch}: ${from} → ${versionLabel(data.target_version.number)} (${plural(data.tasks_migrated, 'task')} moved)`);
    ctx.info('Not rolled back: state records, API keys, environments and tasks that already ended stay as they are.');
    ctx.info(`Undo with: ${undo}`);
    let target = data.target_version;
    if (!isIn(SETTLED_VERSION_STATUSES, target.status) && !options.detach) target = (await waitForVersion(ctx, target.id, options.timeout, 'Rollback')).version;
    return {
      json: raw,
      view: record([
        ['Branch', `${branch.git_branch} (${data.branch_id})`],
        ['Rolled back', `${from} (${data.rolled_back_version_id})`],
        ['Now serving', `${versionLabel(target.number)} (${target.id})`],
        ['Status', target.status, 'status'],
        ['Tasks moved', data.tasks_migrated],
        ['Undo', undo],
      ]),
    };
  },
});

/**
 * The branch to roll back without --branch: the checked-out git branch when the agent has it, else
 * the agent's only (unretired) branch; said on stderr. Several and none checked out: a usage error naming them.
 */
async function defaultBranch(ctx: CommandContext, client: Client, agent: string): Promise<Branch> {
  const { branches } = await client.listAgentBranches({ params: await agentPathOf(client, agent) });
  const checkedOut = await currentGitBranch(ctx.io.cwd);
  const here = checkedOut ? branches.find((b) => b.git_branch === checkedOut) : undefined;
  if (here) {
    ctx.info(`Branch ${here.git_branch} (checked out here; --branch to pick another)`);
    return here;
  }
  if (branches.length === 1) {
    ctx.info(`Branch ${branches[0]!.git_branch} (the only branch of ${agent})`);
    return branches[0]!;
  }
  const names = branches.map((b) => b.git_branch);
  throw usageError(
    names.length ? `Missing --branch: ${agent} has ${plural(names.length, 'branch', 'branches')} (${names.join(', ')})` : `${agent} has no branch to roll back`,
    names.length ? 'Name the git branch to roll back, or run where it is checked out.' : 'Deploy it first.',
    names.length ? agentctl('rollback', '--agent', agent, '--branch', names[0]!) : agentctl('deploy', '--agent', agent),
  );
}
