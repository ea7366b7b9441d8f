import { defineCommand } from '../../command.js';
import { tickRecord } from './shared.js';

export default defineCommand({
  path: ['schedules', 'trigger'],
  summary: 'Run a schedule now, once (also while paused)',
  args: [{ name: 'schedule', description: 'sch_ id', required: true, field: 'schedule_id' }],
  examples: ['agentctl schedules trigger sch_01J...', 'agentctl schedules trigger sch_01J... --json'],
  notFoundNext: 'agentctl schedules list',
  handler: async (ctx, [id]) => {
    const { data, raw } = await ctx.call('triggerSchedule', { params: { schedule_id: id! } });
    ctx.success(data.task_id ? `Created task ${data.task_id}` : `Sent event ${data.event_id}`);
    return { json: raw, view: tickRecord(data) };
  },
});
