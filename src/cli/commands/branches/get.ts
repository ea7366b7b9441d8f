import type { Handler } from '../../command.js';
import { call } from '../../api.js';
import { branchRecord } from '../../output/resources.js';
import { resolveBranch } from '../../refs.js';

const get: Handler = async (ctx, [ref], options) => {
  const branch = await resolveBranch(await ctx.client(), ref, options.agent, 'agentctl branches get');
  const { data, raw } = await call(ctx, 'getBranch', { params: { branch_id: branch.id } });
  return { json: raw, view: branchRecord(data) };
};
export default get;
