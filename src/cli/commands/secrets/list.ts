import { defineCommand } from '../../command.js';
import { table, type Column } from '../../output/view.js';
import { agentPathOf, requireAgentOption } from '../../refs.js';
import { agent } from '../../options.js';
import type { AgentSecret } from '../../../contract/secrets.js';

const secretColumns: Column<AgentSecret>[] = [
  { header: 'NAME', value: (s) => s.name },
  { header: 'SCOPE', value: (s) => s.scope },
  { header: 'ENVIRONMENT', value: (s) => s.environment ?? '' },
  { header: 'REVISION', value: (s) => s.revision },
  { header: 'UPDATED', value: (s) => s.updated_at, format: 'time' },
  { header: 'ID', value: (s) => s.id, wide: true },
];

export default defineCommand({
  path: ['secrets', 'list'],
  summary: 'List the secrets of an agent: names, scopes and times (never values)',
  options: [agent],
  examples: ['agentctl secrets list', 'agentctl secrets list --agent default/bot --json'],
  notFoundNext: 'agentctl agents list',
  handler: async (ctx, _args, options) => {
    const path = await agentPathOf(await ctx.client(), requireAgentOption(options.agent, 'agentctl secrets list'));
    const { data, raw } = await ctx.call('listSecrets', { params: path });
    return { json: raw, view: table(secretColumns, data.secrets, 'No secrets.') };
  },
});
