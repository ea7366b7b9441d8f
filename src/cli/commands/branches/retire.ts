import type { Handler } from '../../command.js';
import { call } from '../../api.js';
import { needsFlag } from '../../errors.js';
import { branchRecord } from '../../output/resources.js';
import { resolveBranch } from '../../refs.js';
import { agentctl } from '../../shell.js';

const retire: Handler = async (ctx, [ref], options) => {
  let reason: string | undefined = options.reason;
  if (!reason) {
    if (!ctx.canPrompt()) throw needsFlag('--reason', 'Retiring a branch records a reason');
    reason = await (await ctx.prompts()).input({ message: 'Why is this branch retired?', required: true });
  }
  const branch = await resolveBranch(await ctx.client(), ref, options.agent, 'agentctl branches retire');
  await ctx.confirm(
    `Retire branch ${branch.git_branch} (${branch.id})? Its versions become RETIRED${options.force ? ' and its running tasks are terminated' : ''}.`,
    agentctl('branches', 'retire', branch.id, '--reason', reason, options.force && '--force', '--yes'),
  );
  const { data, raw } = await call(ctx, 'retireBranch', { params: { branch_id: branch.id }, body: { reason, force: Boolean(options.force) } });
  ctx.success(`Retired branch ${data.git_branch}`);
  return { json: raw, view: branchRecord(data) };
};
export default retire;
