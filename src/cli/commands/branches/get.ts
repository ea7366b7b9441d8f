import { defineCommand } from '../../command.js';
import { branchRecord } from '../../output/resources.js';
import { resolveBranch } from '../../refs.js';
import { agent } from '../../options.js';

export default defineCommand({
  path: ['branches', 'get'],
  summary: 'Show a branch and its current version',
  args: [{ name: 'branch', description: 'br_ id, or a git branch name with --agent', required: true }],
  options: [agent],
  examples: ['agentctl branches get main --agent default/bot', 'agentctl branches get br_01J... --json'],
  notFoundNext: 'agentctl branches list --agent <ns/name>',
  handler: async (ctx, [ref], options) => {
    const branch = await resolveBranch(await ctx.client(), ref, options.agent, 'agentctl branches get');
    const { data, raw } = await ctx.call('getBranch', { params: { branch_id: branch.id } });
    return { json: raw, view: branchRecord(data) };
  },
});
