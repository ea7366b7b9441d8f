import { defineCommand } from '../../command.js';
import { confirmApply } from '../../confirm.js';
import { needsFlag } from '../../errors.js';
import { branchRecord } from '../../output/resources.js';
import { resolveBranch } from '../../refs.js';
import { agentctl } from '../../shell.js';
import { agent } from '../../options.js';

export default defineCommand({
  path: ['branches', 'retire'],
  summary: 'Retire a branch: its versions become RETIRED (asks first; --yes to skip)',
  args: [{ name: 'branch', description: 'br_ id, or a git branch name with --agent', required: true }],
  options: [
    agent,
    { flags: '--reason <text>', description: 'Why (recorded on the branch)' },
    { flags: '--force', description: 'Terminate its running tasks instead of refusing' },
  ],
  examples: ['agentctl branches retire feature/old --agent default/bot --reason "merged"', 'agentctl branches retire br_01J... --reason merged --force --yes'],
  notFoundNext: 'agentctl branches list --agent <ns/name>',
  handler: async (ctx, [ref], options) => {
    let reason: string | undefined = options.reason;
    if (!reason) {
      if (!ctx.canPrompt()) throw needsFlag('--reason', 'Retiring a branch records a reason');
      reason = await (await ctx.prompts()).input({ message: 'Why is this branch retired?', required: true });
    }
    const branch = await resolveBranch(await ctx.client(), ref, options.agent, 'agentctl branches retire');
    const { data, raw } = await confirmApply(ctx, {
      question: `Retire branch ${branch.git_branch} (${branch.id})? Its versions become RETIRED${options.force ? ' and its running tasks are terminated' : ''}.`,
      retry: agentctl('branches', 'retire', branch.id, '--reason', reason, options.force && '--force', '--yes'),
      apply: () => ctx.call('retireBranch', { params: { branch_id: branch.id }, body: { reason, force: Boolean(options.force) } }),
    });
    ctx.success(`Retired branch ${data.git_branch}`);
    return { json: raw, view: branchRecord(data) };
  },
});
