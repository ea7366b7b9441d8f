import { defineCommand } from '../../command.js';
import { listPaged } from '../../paging.js';
import { filesystemTable } from './shared.js';
import { all, limit, page } from '../../options.js';

export default defineCommand({
  path: ['fs', 'list'],
  summary: 'List the filesystems of a project, or the bare ones of a namespace',
  options: [
    { flags: '--project <id>', description: 'Project (prj_ id)', field: 'project_id' },
    { flags: '-n, --namespace <slug>', description: 'Namespace (default: default)' },
    limit(),
    page,
    all,
  ],
  examples: ['agentctl fs list --project prj_01J...', 'agentctl fs list --namespace default --json'],
  handler: async (ctx, _args, options) => {
    const target = options.project ? { project_id: options.project as string } : { namespace: (options.namespace as string | undefined) ?? 'default' };
    const { items, raw } = await listPaged(ctx, options, 'filesystems', async (page, limit) => {
      const { data, raw } = await ctx.call('listFilesystems', { query: { ...target, limit, page_number: page } });
      return { items: data.filesystems, total: data.total, raw };
    });
    return { json: raw, view: filesystemTable(items) };
  },
});
