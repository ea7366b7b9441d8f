import { defineCommand } from '../../command.js';
import { labelsOf, rolloutRecord } from '../../rollouts.js';

export default defineCommand({
  path: ['rollouts', 'resume'],
  summary: 'Resume a paused rollout: the current step is watched again from now',
  args: [{ name: 'rollout', description: 'A ro_ id', required: true }],
  examples: ['agentctl rollouts resume ro_01J...'],
  notFoundNext: 'agentctl rollouts list',
  handler: async (ctx, [id]) => {
    const { data, raw } = await ctx.call('resumeRollout', { params: { rollout_id: id! } });
    ctx.success(`Rollout ${data.id} is ${data.status}${data.reason ? `: ${data.reason}` : ''}`);
    return { json: raw, view: rolloutRecord(data, await labelsOf(ctx, [data.from_version_id, data.to_version_id])) };
  },
});
