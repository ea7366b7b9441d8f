import { defineCommand } from '../../command.js';
import { scheduleRecord } from './shared.js';

export default defineCommand({
  path: ['schedules', 'resume'],
  summary: 'Resume a paused schedule from its next tick (ticks of the pause are not run)',
  args: [{ name: 'schedule', description: 'sch_ id', required: true, field: 'schedule_id' }],
  examples: ['agentctl schedules resume sch_01J...'],
  notFoundNext: 'agentctl schedules list',
  handler: async (ctx, [id]) => {
    const { data, raw } = await ctx.call('resumeSchedule', { params: { schedule_id: id! } });
    ctx.success(`Schedule ${data.id} is ${data.status}; next run ${data.next_run_at}`);
    return { json: raw, view: scheduleRecord(data) };
  },
});
