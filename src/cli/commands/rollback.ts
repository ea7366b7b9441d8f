import { isIn, SETTLED_VERSION_STATUSES } from '../../contract/lifecycle.js';
import { defineCommand } from '../command.js';
import { usageError } from '../errors.js';
import { confirmApply } from '../confirm.js';
import { record } from '../output/view.js';
import { requireAgentOption, resolveBranch, resolveVersionId, shortHash } from '../refs.js';
import { agentctl, shellCommand } from '../shell.js';
import { waitForVersion } from '../wait.js';
import { agent, waitOptions } from '../options.js';

export default defineCommand({
  path: ['rollback'],
  summary: 'Roll a branch back to an earlier version (asks first; --yes to skip)',
  description: 'Without --to, the newest earlier version whose image has not expired. State records and API keys are not rolled back.',
  options: [
    { ...agent, description: 'Agent as namespace/name' },
    { flags: '--branch <name>', description: 'Git branch (or a br_ id)' },
    { flags: '--to <ref>', description: 'Target version: vN, a git-hash prefix (4+ characters) or a ver_ id', field: 'target_version_id' },
    ...waitOptions,
  ],
  examples: ['agentctl rollback --agent default/bot --branch main', 'agentctl rollback --agent default/bot --branch main --to 3f2a9c1 --yes --json'],
  notFoundNext: 'agentctl branches list --agent <ns/name>',
  handler: async (ctx, _args, options) => {
    const agent = requireAgentOption(options.agent, 'agentctl rollback');
    if (!options.branch) throw usageError('Missing --branch', 'Name the git branch to roll back.', agentctl('rollback', '--agent', agent, '--branch', 'main'));
    const client = await ctx.client();
    const branch = await resolveBranch(client, options.branch, agent, 'agentctl rollback');
    const targetId = options.to ? await resolveVersionId(client, options.to, agent, '--to') : null;
    const request = (dryRun: boolean) => ctx.call('rollbackBranch', { params: { branch_id: branch.id }, body: { target_version_id: targetId, dry_run: dryRun } });

    const { data, raw } = await confirmApply(ctx, {
      plan: async () => (await request(true)).data,
      describe: ({ target_version: t, rolled_back_version_id, tasks_migrated }) =>
        `Plan: branch ${branch.git_branch} goes from ${rolled_back_version_id} back to ${t.id} (${shortHash(t.git_hash)} "${t.git_message}", deployed ${t.deployed_at}); ${tasks_migrated} running task(s) move with it.`,
      question: 'Roll back?',
      needs: 'Rolling back needs confirmation',
      retry: agentctl('rollback', '--agent', agent, '--branch', branch.git_branch, ...(options.to ? ['--to', options.to] : []), '--yes'),
      apply: () => request(false),
    });
    const undo = shellCommand('agentctl', 'rollback', '--agent', agent, '--branch', branch.git_branch, '--to', data.rolled_back_version_id, '--yes');
    ctx.success(`Rolled back ${branch.git_branch}: ${data.rolled_back_version_id} → ${data.target_version.id} (${data.tasks_migrated} task(s) moved)`);
    ctx.info('Not rolled back: state records, API keys, environments and tasks that already ended stay as they are.');
    ctx.info(`Undo with: ${undo}`);
    let target = data.target_version;
    if (!isIn(SETTLED_VERSION_STATUSES, target.status) && !options.detach) target = (await waitForVersion(ctx, target.id, options.timeout, 'Rollback')).version;
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
  },
});
