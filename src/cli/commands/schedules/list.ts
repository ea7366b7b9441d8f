import { defineCommand } from '../../command.js';
import { agent, all, limit, page } from '../../options.js';
import { listPaged } from '../../paging.js';
import { SCHEDULE_STATUSES } from '../../../contract/enums.js';
import { scheduleColumns, table } from './shared.js';

export default defineCommand({
  path: ['schedules', 'list'],
  summary: 'List schedules with their next run times, soonest first',
  options: [agent, { flags: '--status <status>', description: 'Only this status', choices: SCHEDULE_STATUSES }, limit(), page, all],
  examples: ['agentctl schedules list --agent default/bot', 'agentctl schedules list --status PAUSED --json'],
  notFoundNext: 'agentctl agents list',
  handler: async (ctx, _args, options) => {
    const agentRef: string | undefined = options.agent;
    const { items, raw } = await listPaged(ctx, options, 'schedules', async (page, limit) => {
      const { data, raw } = await ctx.call('listSchedules', {
        query: {
          agent_id: agentRef?.startsWith('agt_') ? agentRef : undefined,
          agent: agentRef && !agentRef.startsWith('agt_') ? agentRef : undefined,
          status: options.status,
          limit,
          page_number: page,
        },
      });
      return { items: data.schedules, total: data.total, raw };
    });
    return { json: raw, view: table(scheduleColumns, items, 'No schedules.') };
  },
});
