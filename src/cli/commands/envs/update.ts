import { defineCommand } from '../../command.js';
import { usageError } from '../../errors.js';
import { environmentRecord } from '../../output/resources.js';
import { agentPathOf, requireAgentOption } from '../../refs.js';
import { agent } from '../../options.js';

export default defineCommand({
  path: ['envs', 'update'],
  summary: 'Change an environment’s rules or description',
  args: [{ name: 'name', description: 'Environment name', required: true }],
  options: [
    agent,
    { flags: '--rule <rule>', description: 'Replace the branch rules; repeat for more', repeatable: true, field: 'branch_rules' },
    { flags: '--description <text>', description: 'New description' },
  ],
  examples: ['agentctl envs update staging --agent default/bot --rule "release/*"'],
  notFoundNext: 'agentctl envs list --agent <ns/name>',
  handler: async (ctx, [name], options) => {
    const agent = requireAgentOption(options.agent, 'agentctl envs update');
    if (!options.rule && options.description === undefined) throw usageError('Nothing to change', 'Pass --rule (repeatable) and/or --description.');
    const path = await agentPathOf(await ctx.client(), agent);
    const { data, raw } = await ctx.call('updateEnvironment', {
      params: { ...path, env_name: name },
      body: { branch_rules: options.rule, description: options.description },
    });
    ctx.success(`Updated environment ${data.name}`);
    return { json: raw, view: environmentRecord(data) };
  },
});
