import type { Handler } from '../../command.js';
import { call } from '../../api.js';
import { environmentRecord } from '../../output/resources.js';
import { agentPathOf, requireAgentOption } from '../../refs.js';

const get: Handler = async (ctx, [name], options) => {
  const path = await agentPathOf(await ctx.client(), requireAgentOption(options.agent, 'agentctl envs get'));
  const { data, raw } = await call(ctx, 'getEnvironment', { params: { ...path, env_name: name } });
  return { json: raw, view: environmentRecord(data) };
};
export default get;
