import type { Handler } from '../../command.js';
import { call } from '../../api.js';
import { record } from '../../output/view.js';
import { agentPathOf, requireAgentOption } from '../../refs.js';
import { agentctl } from '../../shell.js';

const remove: Handler = async (ctx, [name], options) => {
  const agent = requireAgentOption(options.agent, 'agentctl envs delete');
  await ctx.confirm(`Delete environment ${name} of ${agent}?`, agentctl('envs', 'delete', name, '--agent', agent, '--yes'));
  const path = await agentPathOf(await ctx.client(), agent);
  const { data, raw } = await call(ctx, 'deleteEnvironment', { params: { ...path, env_name: name } });
  ctx.success(data.message);
  return { json: raw, view: record([['ID', data.id], ['Result', data.message]]) };
};
export default remove;
