import type { Handler } from '../../command.js';
import { call } from '../../api.js';
import { environmentColumns, table } from '../../output/resources.js';
import { agentPathOf, requireAgentOption } from '../../refs.js';

const list: Handler = async (ctx, _args, options) => {
  const path = await agentPathOf(await ctx.client(), requireAgentOption(options.agent, 'agentctl envs list'));
  const { data, raw } = await call(ctx, 'listEnvironments', { params: path });
  return { json: raw, view: table(environmentColumns, data.environments, 'No environments.') };
};
export default list;
