import { defineCommand } from '../../command.js';
import { confirmApply } from '../../confirm.js';
import { record } from '../../output/view.js';
import { agentPathOf, requireAgentOption } from '../../refs.js';
import { agentctl } from '../../shell.js';
import { agent } from '../../options.js';

export default defineCommand({
  path: ['envs', 'delete'],
  summary: 'Delete an environment (asks first; --yes to skip)',
  args: [{ name: 'name', description: 'Environment name', required: true }],
  options: [agent],
  examples: ['agentctl envs delete staging --agent default/bot --yes'],
  notFoundNext: 'agentctl envs list --agent <ns/name>',
  handler: async (ctx, [name], options) => {
    const agent = requireAgentOption(options.agent, 'agentctl envs delete');
    const { data, raw } = await confirmApply(ctx, {
      question: `Delete environment ${name} of ${agent}?`,
      retry: agentctl('envs', 'delete', name, '--agent', agent, '--yes'),
      apply: async () => ctx.call('deleteEnvironment', { params: { ...(await agentPathOf(await ctx.client(), agent)), env_name: name } }),
    });
    ctx.success(data.message);
    return {
      json: raw,
      view: record([
        ['ID', data.id],
        ['Result', data.message],
      ]),
    };
  },
});
