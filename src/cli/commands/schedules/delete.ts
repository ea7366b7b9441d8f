import { defineCommand } from '../../command.js';
import { scheduleRecord } from './shared.js';

export default defineCommand({
  path: ['schedules', 'delete'],
  summary: 'Delete a schedule (the tasks it created stay)',
  args: [{ name: 'schedule', description: 'sch_ id', required: true, field: 'schedule_id' }],
  examples: ['agentctl schedules delete sch_01J...'],
  notFoundNext: 'agentctl schedules list',
  handler: async (ctx, [id]) => {
    const { data, raw } = await ctx.call('deleteSchedule', { params: { schedule_id: id! } });
    ctx.success(`Deleted schedule ${data.id}`);
    return { json: raw, view: scheduleRecord(data) };
  },
});
