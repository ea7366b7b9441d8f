import { defineCommand } from '../../command.js';
import { usageError } from '../../errors.js';
import { environmentRecord } from '../../output/resources.js';
import { agentPathOf, requireAgentOption } from '../../refs.js';
import { agentctl } from '../../shell.js';
import { agent } from '../../options.js';

export default defineCommand({
  path: ['envs', 'create'],
  summary: 'Create an environment with branch rules',
  args: [{ name: 'name', description: 'Environment name', required: true }],
  options: [
    agent,
    {
      flags: '--rule <rule>',
      description: 'Branch rule: exact name, prefix wildcard feature/*, or *; repeat for more',
      repeatable: true,
      field: 'branch_rules',
    },
    { flags: '--description <text>', description: 'Description' },
  ],
  examples: ['agentctl envs create staging --agent default/bot --rule staging --rule "release/*"'],
  notFoundNext: 'agentctl agents list',
  handler: async (ctx, [name], options) => {
    const agent = requireAgentOption(options.agent, 'agentctl envs create');
    const rules: string[] | undefined = options.rule;
    if (!rules?.length)
      throw usageError(
        'Missing --rule',
        'Give at least one branch rule: a name, a prefix wildcard like feature/*, or *.',
        agentctl('envs', 'create', name, '--agent', agent, '--rule', '*'),
      );
    const path = await agentPathOf(await ctx.client(), agent);
    const { data, raw } = await ctx.call('createEnvironment', { params: path, body: { name, branch_rules: rules, description: options.description ?? '' } });
    ctx.success(`Created environment ${data.name} (${data.branch_rules.join(', ')})`);
    return { json: raw, view: environmentRecord(data) };
  },
});
