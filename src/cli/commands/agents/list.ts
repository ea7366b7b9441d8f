import { defineCommand } from '../../command.js';
import { agentColumns, table } from '../../output/resources.js';
import { nameBook } from '../../names.js';
import { listPaged } from '../../paging.js';
import { all, limit, page } from '../../options.js';

export default defineCommand({
  path: ['agents', 'list'],
  summary: 'List agents',
  options: [{ flags: '-n, --namespace <slug>', description: 'Only this namespace' }, limit(), page, all],
  examples: ['agentctl agents list', 'agentctl agents list --namespace default --json'],
  notFoundNext: 'agentctl namespaces list',
  handler: async (ctx, _args, options) => {
    const { items, raw } = await listPaged(ctx, options, 'agents', async (page, limit) => {
      const { data, raw } = await ctx.call('listAgents', { query: { namespace: options.namespace, limit, page_number: page } });
      return { items: data.agents, total: data.total, raw };
    });
    return {
      json: raw,
      view: table(agentColumns(await nameBook(ctx, ['namespaces'])), items, 'No agents. Deploy one with: agentctl deploy --agent default/<name> --image <url>'),
    };
  },
});
