import { defineCommand } from '../../command.js';
import { namespaceColumns, table } from '../../output/resources.js';

export default defineCommand({
  path: ['namespaces', 'create'],
  summary: 'Create a namespace (org admins)',
  args: [{ name: 'slug', description: 'Slug: lowercase letters, digits and dashes', required: true }],
  options: [{ flags: '--name <name>', description: 'Display name (default: the slug)' }],
  examples: ['agentctl namespaces create research --name "Research"'],
  handler: async (ctx, [slug], options) => {
    const { data, raw } = await ctx.call('createNamespace', { body: { slug, name: options.name ?? slug } });
    ctx.success(`Created namespace ${data.slug} (${data.id})`);
    return { json: raw, view: table(namespaceColumns, [data], '') };
  },
});
