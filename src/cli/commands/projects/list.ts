import { defineCommand } from '../../command.js';
import { projectColumns, table } from '../../output/resources.js';
import { nameBook } from '../../names.js';
import { listPaged } from '../../paging.js';
import { all, limit, page } from '../../options.js';

export default defineCommand({
  path: ['projects', 'list'],
  summary: 'List projects',
  options: [{ flags: '-n, --namespace <slug>', description: 'Only this namespace' }, limit(), page, all],
  examples: ['agentctl projects list', 'agentctl projects list --namespace research --all --json'],
  handler: async (ctx, _args, options) => {
    const { items, raw } = await listPaged(ctx, options, 'projects', async (page, limit) => {
      const { data, raw } = await ctx.call('listProjects', { query: { namespace: options.namespace, limit, page_number: page } });
      return { items: data.projects, total: data.total, raw };
    });
    return { json: raw, view: table(projectColumns(await nameBook(ctx, ['namespaces'])), items, 'No projects.') };
  },
});
