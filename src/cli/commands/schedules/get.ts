import { defineCommand } from '../../command.js';
import { scheduleRecord } from './shared.js';

export default defineCommand({
  path: ['schedules', 'get'],
  summary: 'Show a schedule and its most recent runs',
  args: [{ name: 'schedule', description: 'sch_ id', required: true, field: 'schedule_id' }],
  examples: ['agentctl schedules get sch_01J...', 'agentctl schedules get sch_01J... --json'],
  notFoundNext: 'agentctl schedules list',
  handler: async (ctx, [id]) => {
    const { data, raw } = await ctx.call('getSchedule', { params: { schedule_id: id! } });
    return { json: raw, view: scheduleRecord(data) };
  },
});
