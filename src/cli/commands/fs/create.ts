import { defineCommand } from '../../command.js';
import { filesystemTable } from './shared.js';

export default defineCommand({
  path: ['fs', 'create'],
  summary: 'Create a filesystem in a project, or bare in a namespace (default: the default namespace)',
  options: [
    { flags: '--project <id>', description: 'Project (prj_ id) the filesystem belongs to', field: 'project_id' },
    { flags: '-n, --namespace <slug>', description: 'Namespace of a filesystem outside any project' },
  ],
  examples: ['agentctl fs create --project prj_01J...', 'agentctl fs create --namespace default --json'],
  handler: async (ctx, _args, options) => {
    const body = options.project ? { project_id: options.project as string } : { namespace: (options.namespace as string | undefined) ?? 'default' };
    const { data, raw } = await ctx.call('createFilesystem', { body });
    ctx.success(`Created filesystem ${data.id}`);
    return { json: raw, view: filesystemTable([data]) };
  },
});
