import { defineCommand } from '../../command.js';
import { scheduleRecord } from './shared.js';

export default defineCommand({
  path: ['schedules', 'pause'],
  summary: 'Pause a schedule: no tick runs until it is resumed',
  args: [{ name: 'schedule', description: 'sch_ id', required: true, field: 'schedule_id' }],
  examples: ['agentctl schedules pause sch_01J...'],
  notFoundNext: 'agentctl schedules list',
  handler: async (ctx, [id]) => {
    const { data, raw } = await ctx.call('pauseSchedule', { params: { schedule_id: id! } });
    ctx.success(`Schedule ${data.id} is ${data.status}`);
    return { json: raw, view: scheduleRecord(data) };
  },
});
