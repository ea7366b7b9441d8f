import { ROLLOUT_STATUSES } from '../../../contract/rollout-rules.js';
import { defineCommand } from '../../command.js';
import { agent } from '../../options.js';
import { resolveAgent } from '../../refs.js';
import { labelsOf, rolloutTable } from '../../rollouts.js';

export default defineCommand({
  path: ['rollouts', 'list'],
  summary: 'List rollouts, newest first',
  options: [
    { ...agent, description: 'Only this agent’s rollouts (namespace/name or agt_ id)' },
    { flags: '--status <status>', description: 'Only this status', choices: ROLLOUT_STATUSES },
    { flags: '--limit <n>', description: 'How many to list (1-200)', integer: true, default: 50 },
  ],
  examples: ['agentctl rollouts list --agent default/bot', 'agentctl rollouts list --status RUNNING --json'],
  notFoundNext: 'agentctl agents list',
  handler: async (ctx, _args, options) => {
    const agentId = options.agent ? (await resolveAgent(await ctx.client(), options.agent)).id : undefined;
    const { data, raw } = await ctx.call('listRollouts', { query: { agent_id: agentId, status: options.status, limit: options.limit } });
    const labels = await labelsOf(
      ctx,
      data.rollouts.flatMap((r) => [r.from_version_id, r.to_version_id]),
    );
    return { json: raw, view: rolloutTable(data.rollouts, labels) };
  },
});
