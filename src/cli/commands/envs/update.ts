import type { Handler } from '../../command.js';
import { call } from '../../api.js';
import { usageError } from '../../errors.js';
import { environmentRecord } from '../../output/resources.js';
import { agentPathOf, requireAgentOption } from '../../refs.js';

const update: Handler = async (ctx, [name], options) => {
  const agent = requireAgentOption(options.agent, 'agentctl envs update');
  if (!options.rule && options.description === undefined) throw usageError('Nothing to change', 'Pass --rule (repeatable) and/or --description.');
  const path = await agentPathOf(await ctx.client(), agent);
  const { data, raw } = await call(ctx, 'updateEnvironment', { params: { ...path, env_name: name }, body: { branch_rules: options.rule, description: options.description } });
  ctx.success(`Updated environment ${data.name}`);
  return { json: raw, view: environmentRecord(data) };
};
export default update;
