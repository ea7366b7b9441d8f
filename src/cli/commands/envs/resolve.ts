import type { Handler } from '../../command.js';
import { call } from '../../api.js';
import { usageError } from '../../errors.js';
import { record } from '../../output/view.js';
import { agentPathOf, requireAgentOption } from '../../refs.js';
import { agentctl } from '../../shell.js';

const resolve: Handler = async (ctx, _args, options) => {
  const agent = requireAgentOption(options.agent, 'agentctl envs resolve');
  if (!options.branch) throw usageError('Missing --branch', 'Name the git branch to resolve.', agentctl('envs', 'resolve', '--agent', agent, '--branch', 'main'));
  const path = await agentPathOf(await ctx.client(), agent);
  const { data, raw } = await call(ctx, 'resolveEnvironment', { params: path, query: { branch: options.branch } });
  return {
    json: raw,
    view: record([
      ['Branch', data.branch],
      ['Environment', data.environment.name],
      ['Production', data.environment.is_prod, 'bool'],
      ['Rules', data.environment.branch_rules.join(', ')],
    ]),
  };
};
export default resolve;
