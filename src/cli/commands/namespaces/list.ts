import { defineCommand } from '../../command.js';
import { namespaceColumns, table } from '../../output/resources.js';
import { listPaged } from '../../paging.js';
import { all, limit, page } from '../../options.js';

export default defineCommand({
  path: ['namespaces', 'list'],
  summary: 'List namespaces',
  options: [limit(), page, all],
  examples: ['agentctl namespaces list', 'agentctl namespaces list --all --json'],
  handler: async (ctx, _args, options) => {
    const { items, raw } = await listPaged(ctx, options, 'namespaces', async (page, limit) => {
      const { data, raw } = await ctx.call('listNamespaces', { query: { limit, page_number: page } });
      return { items: data.namespaces, total: data.total, raw };
    });
    return { json: raw, view: table(namespaceColumns, items, 'No namespaces.') };
  },
});
