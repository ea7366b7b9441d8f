import { defineCommand } from '../../command.js';
import { labelsOf, rolloutRecord } from '../../rollouts.js';

export default defineCommand({
  path: ['rollouts', 'abort'],
  summary: 'Abort a rollout: the tasks it moved go back to the source',
  args: [{ name: 'rollout', description: 'A ro_ id', required: true }],
  examples: ['agentctl rollouts abort ro_01J...'],
  notFoundNext: 'agentctl rollouts list',
  handler: async (ctx, [id]) => {
    const { data, raw } = await ctx.call('abortRollout', { params: { rollout_id: id! } });
    ctx.success(`Rollout ${data.id} is ${data.status}${data.reason ? `: ${data.reason}` : ''}`);
    return { json: raw, view: rolloutRecord(data, await labelsOf(ctx, [data.from_version_id, data.to_version_id])) };
  },
});
