import { defineCommand } from '../../command.js';
import { projectColumns, table } from '../../output/resources.js';
import { nameBook } from '../../names.js';

export default defineCommand({
  path: ['projects', 'create'],
  summary: 'Create a project',
  args: [{ name: 'name', description: 'Project name', required: true }],
  options: [
    { flags: '-n, --namespace <slug>', description: 'Namespace', default: 'default' },
    { flags: '--description <text>', description: 'Description' },
  ],
  examples: ['agentctl projects create docs --namespace research --description "Shared files"'],
  handler: async (ctx, [name], options) => {
    const { data, raw } = await ctx.call('createProject', { body: { name, namespace: options.namespace, description: options.description ?? '' } });
    ctx.success(`Created project ${data.name} (${data.id})`);
    return { json: raw, view: table(projectColumns(await nameBook(ctx, ['namespaces'])), [data], '') };
  },
});
