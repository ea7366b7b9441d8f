import { defineCommand } from '../../command.js';
import { confirmApply } from '../../confirm.js';
import { record } from '../../output/view.js';
import { agentPathOf, requireAgentOption } from '../../refs.js';
import { agentctl } from '../../shell.js';
import { agent } from '../../options.js';

export default defineCommand({
  path: ['secrets', 'delete'],
  summary: 'Delete a secret of an agent (asks first; --yes to skip)',
  args: [{ name: 'name', description: 'Secret name', required: true }],
  options: [agent, { flags: '--env <name>', description: 'The one scoped to this environment (default: the agent-wide one)' }],
  examples: ['agentctl secrets delete OPENAI_API_KEY --yes', 'agentctl secrets rm DATABASE_URL --env production --agent default/bot --yes'],
  notFoundNext: 'agentctl secrets list',
  handler: async (ctx, [name], options) => {
    const agentRef = requireAgentOption(options.agent, 'agentctl secrets delete');
    const where = options.env ? ` (environment ${options.env})` : '';
    const { data, raw } = await confirmApply(ctx, {
      question: `Delete secret ${name}${where} of ${agentRef}? Its versions restart without it.`,
      retry: agentctl('secrets', 'delete', name, '--agent', agentRef, ...(options.env ? ['--env', options.env] : []), '--yes'),
      apply: async () =>
        ctx.call('deleteSecret', {
          params: { ...(await agentPathOf(await ctx.client(), agentRef)), secret_name: name },
          ...(options.env ? { query: { environment: options.env } } : {}),
        }),
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
