import { defineCommand } from '../../command.js';
import { groupColumns, table } from '../../output/resources.js';
import { listPaged } from '../../paging.js';
import { all, limit, page } from '../../options.js';

export default defineCommand({
  path: ['groups', 'list'],
  summary: 'List sharing groups',
  options: [limit(), page, all],
  examples: ['agentctl groups list', 'agentctl groups list --all --json'],
  handler: async (ctx, _args, options) => {
    const { items, raw } = await listPaged(ctx, options, 'groups', async (page, limit) => {
      const { data, raw } = await ctx.call('listGroups', { query: { limit, page_number: page } });
      return { items: data.groups, total: data.total, raw };
    });
    return { json: raw, view: table(groupColumns, items, 'No sharing groups. Create one with: agentctl groups create <name>') };
  },
});
