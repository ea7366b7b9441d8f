import { defineCommand } from '../../command.js';
import { environmentColumns, table } from '../../output/resources.js';
import { agentPathOf, requireAgentOption } from '../../refs.js';
import { agent } from '../../options.js';

export default defineCommand({
  path: ['envs', 'list'],
  summary: 'List environments of an agent',
  options: [agent],
  examples: ['agentctl envs list --agent default/bot'],
  notFoundNext: 'agentctl agents list',
  handler: async (ctx, _args, options) => {
    const path = await agentPathOf(await ctx.client(), requireAgentOption(options.agent, 'agentctl envs list'));
    const { data, raw } = await ctx.call('listEnvironments', { params: path });
    return { json: raw, view: table(environmentColumns, data.environments, 'No environments.') };
  },
});
