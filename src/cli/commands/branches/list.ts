import { defineCommand } from '../../command.js';
import { branchColumns, table } from '../../output/resources.js';
import { agentPathOf, requireAgentOption } from '../../refs.js';
import { agent } from '../../options.js';

export default defineCommand({
  path: ['branches', 'list'],
  summary: 'List branches of an agent',
  options: [
    agent,
    { flags: '--include-retired', description: 'Include retired branches' },
    { flags: '--env <name>', description: 'Only branches that this environment serves' },
  ],
  examples: ['agentctl branches list --agent default/bot', 'agentctl branches list --agent default/bot --env preview --json'],
  notFoundNext: 'agentctl agents list',
  handler: async (ctx, _args, options) => {
    const agent = requireAgentOption(options.agent, 'agentctl branches list');
    const path = await agentPathOf(await ctx.client(), agent);
    const { data, raw } = options.env
      ? await ctx.call('listEnvironmentBranches', { params: { ...path, env_name: options.env } })
      : await ctx.call('listAgentBranches', { params: path, query: { include_retired: options.includeRetired ? 'true' : 'false' } });
    return { json: raw, view: table(branchColumns, data.branches, `No branches${options.includeRetired ? '' : ' (add --include-retired for retired ones)'}.`) };
  },
});
