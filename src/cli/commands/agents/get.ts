import { defineCommand } from '../../command.js';
import { agentRecord } from '../../output/resources.js';
import { nameBook } from '../../names.js';
import { parseAgentPath } from '../../refs.js';

export default defineCommand({
  path: ['agents', 'get'],
  summary: 'Show an agent',
  args: [{ name: 'agent', description: 'namespace/name or an agt_ id', required: true, complete: 'agents' }],
  examples: ['agentctl agents get default/bot', 'agentctl agents get agt_01J... --json'],
  notFoundNext: 'agentctl agents list',
  handler: async (ctx, [ref]) => {
    const { data, raw } = ref.startsWith('agt_')
      ? await ctx.call('getAgent', { params: { agent_id: ref } })
      : await ctx.call('getAgentByName', { params: parseAgentPath(ref) });
    return { json: raw, view: agentRecord(data, await nameBook(ctx, ['namespaces'])) };
  },
});
