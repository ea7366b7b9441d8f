import { defineCommand } from '../../command.js';
import { confirmApply } from '../../confirm.js';
import { record } from '../../output/view.js';
import { parseAgentPath } from '../../refs.js';
import { agentctl } from '../../shell.js';

export default defineCommand({
  path: ['agents', 'delete'],
  summary: 'Delete an agent (asks first; --yes to skip)',
  args: [{ name: 'agent', description: 'namespace/name or an agt_ id', required: true, complete: 'agents' }],
  examples: ['agentctl agents delete default/old-bot', 'agentctl agents delete default/old-bot --yes --json'],
  notFoundNext: 'agentctl agents list',
  handler: async (ctx, [ref]) => {
    const { data, raw } = await confirmApply(ctx, {
      question: `Delete agent ${ref}, its branches, versions and environments?`,
      retry: agentctl('agents', 'delete', ref, '--yes'),
      apply: () =>
        ref.startsWith('agt_') ? ctx.call('deleteAgent', { params: { agent_id: ref } }) : ctx.call('deleteAgentByName', { params: parseAgentPath(ref) }),
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
