import { ROLLOUT_STATUSES } from '../../../contract/rollout-rules.js';
import { defineCommand } from '../../command.js';
import { agent, all, limit, page } from '../../options.js';
import { listPaged } from '../../paging.js';
import { resolveAgent } from '../../refs.js';
import { labelsOf, rolloutTable } from '../../rollouts.js';

export default defineCommand({
  path: ['rollouts', 'list'],
  summary: 'List rollouts, newest first',
  options: [
    { ...agent, description: 'Only this agent’s rollouts (namespace/name or agt_ id)' },
    { flags: '--status <status>', description: 'Only this status', choices: ROLLOUT_STATUSES },
    limit(),
    page,
    all,
  ],
  examples: ['agentctl rollouts list --agent default/bot', 'agentctl rollouts list --status RUNNING --json', 'agentctl rollouts list --all'],
  notFoundNext: 'agentctl agents list',
  handler: async (ctx, _args, options) => {
    const agentId = options.agent ? (await resolveAgent(await ctx.client(), options.agent)).id : undefined;
    const { items, raw } = await listPaged(ctx, options, 'rollouts', async (page_number, limit) => {
      const { data, raw } = await ctx.call('listRollouts', { query: { agent_id: agentId, status: options.status, limit, page_number } });
      return { items: data.rollouts, total: data.total, raw };
    });
    const labels = await labelsOf(
      ctx,
      items.flatMap((r) => [r.from_version_id, r.to_version_id]),
    );
    return { json: raw, view: rolloutTable(items, labels, Boolean(options.agent || options.status)) };
  },
});
