import { defineCommand } from '../../command.js';
import { environmentRecord } from '../../output/resources.js';
import { agentPathOf, requireAgentOption } from '../../refs.js';
import { agent } from '../../options.js';

export default defineCommand({
  path: ['envs', 'get'],
  summary: 'Show an environment',
  args: [{ name: 'name', description: 'Environment name', required: true }],
  options: [agent],
  examples: ['agentctl envs get production --agent default/bot --json'],
  notFoundNext: 'agentctl envs list --agent <ns/name>',
  handler: async (ctx, [name], options) => {
    const path = await agentPathOf(await ctx.client(), requireAgentOption(options.agent, 'agentctl envs get'));
    const { data, raw } = await ctx.call('getEnvironment', { params: { ...path, env_name: name } });
    return { json: raw, view: environmentRecord(data) };
  },
});
