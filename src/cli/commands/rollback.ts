import type { Handler } from '../command.js';
import { needsFlag, usageError } from '../errors.js';
import { record } from '../output/view.js';
import { requireAgentOption, resolveBranch, resolveVersionId, shortHash } from '../refs.js';
import { agentctl, shellCommand } from '../shell.js';
import { waitForVersion } from '../wait.js';

const rollback: Handler = async (ctx, _args, options) => {
  const agent = requireAgentOption(options.agent, 'agentctl rollback');
  if (!options.branch) throw usageError('Missing --branch', 'Name the git branch to roll back.', agentctl('rollback', '--agent', agent, '--branch', 'main'));
  const client = await ctx.client();
  const branch = await resolveBranch(client, options.branch, agent, 'agentctl rollback');
  const targetId = options.to ? await resolveVersionId(client, options.to, agent, '--to') : null;
  const request = (dryRun: boolean) => client.request('rollbackBranch', { params: { branch_id: branch.id }, body: { target_version_id: targetId, dry_run: dryRun } });

  if (!ctx.globals.yes && !ctx.globals.json) {
    if (!ctx.canPrompt()) throw needsFlag('--yes', 'Rolling back needs confirmation', agentctl('rollback', '--agent', agent, '--branch', branch.git_branch, ...(options.to ? ['--to', options.to] : []), '--yes'));
    const plan = (await request(true)).data;
    const t = plan.target_version;
    ctx.info(
      `Plan: branch ${branch.git_branch} goes from ${plan.rolled_back_version_id} back to ${t.id} (${shortHash(t.git_hash)} "${t.git_message}", deployed ${t.deployed_at}); ${plan.tasks_migrated} running task(s) move with it.`,
    );
    await ctx.confirm('Roll back?');
  }
  const { data, raw } = await request(false);
  const undo = shellCommand('agentctl', 'rollback', '--agent', agent, '--branch', branch.git_branch, '--to', data.rolled_back_version_id, '--yes');
  ctx.success(`Rolled back ${branch.git_branch}: ${data.rolled_back_version_id} → ${data.target_version.id} (${data.tasks_migrated} task(s) moved)`);
  ctx.info('Not rolled back: state records, API keys, environments and tasks that already ended stay as they are.');
  ctx.info(`Undo with: ${undo}`);
  let target = data.target_version;
  if (target.status === 'DEPLOYING' && !options.detach) target = (await waitForVersion(ctx, target.id, options.timeout, 'Rollback')).version;
  return {
    json: raw,
    view: record([
      ['Branch', `${branch.git_branch} (${data.branch_id})`],
      ['Rolled back', data.rolled_back_version_id],
      ['Now serving', target.id],
      ['Status', target.status, 'status'],
      ['Tasks moved', data.tasks_migrated],
      ['Undo', undo],
    ]),
  };
};
export default rollback;
