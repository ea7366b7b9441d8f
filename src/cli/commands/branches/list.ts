import type { Handler } from '../../command.js';
import { call } from '../../api.js';
import { branchColumns, table } from '../../output/resources.js';
import { agentPathOf, requireAgentOption } from '../../refs.js';

const list: Handler = async (ctx, _args, options) => {
  const agent = requireAgentOption(options.agent, 'agentctl branches list');
  const path = await agentPathOf(await ctx.client(), agent);
  const { data, raw } = options.env
    ? await call(ctx, 'listEnvironmentBranches', { params: { ...path, env_name: options.env } })
    : await call(ctx, 'listAgentBranches', { params: path, query: { include_retired: options.includeRetired ? 'true' : 'false' } });
  return { json: raw, view: table(branchColumns, data.branches, `No branches${options.includeRetired ? '' : ' (add --include-retired for retired ones)'}.`) };
};
export default list;
