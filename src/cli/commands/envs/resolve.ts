import { defineCommand } from '../../command.js';
import { usageError } from '../../errors.js';
import { record } from '../../output/view.js';
import { agentPathOf, requireAgentOption } from '../../refs.js';
import { agentctl } from '../../shell.js';
import { agent } from '../../options.js';

export default defineCommand({
  path: ['envs', 'resolve'],
  summary: 'Show which environment a git branch falls in',
  options: [agent, { flags: '--branch <name>', description: 'Git branch name' }],
  examples: ['agentctl envs resolve --agent default/bot --branch feature/search'],
  notFoundNext: 'agentctl agents list',
  handler: async (ctx, _args, options) => {
    const agent = requireAgentOption(options.agent, 'agentctl envs resolve');
    if (!options.branch)
      throw usageError('Missing --branch', 'Name the git branch to resolve.', agentctl('envs', 'resolve', '--agent', agent, '--branch', 'main'));
    const path = await agentPathOf(await ctx.client(), agent);
    const { data, raw } = await ctx.call('resolveEnvironment', { params: path, query: { branch: options.branch } });
    return {
      json: raw,
      view: record([
        ['Branch', data.branch],
        ['Environment', data.environment.name],
        ['Production', data.environment.is_prod, 'bool'],
        ['Rules', data.environment.branch_rules.join(', ')],
      ]),
    };
  },
});
