import { defineCommand } from '../../command.js';
import { groupColumns, table } from '../../output/resources.js';

export default defineCommand({
  path: ['groups', 'create'],
  summary: 'Create a sharing group (org admins)',
  args: [{ name: 'name', description: 'Group name', required: true }],
  options: [{ flags: '--description <text>', description: 'Description' }],
  examples: ['agentctl groups create platform --description "Platform team"'],
  handler: async (ctx, [name], options) => {
    const { data, raw } = await ctx.call('createGroup', { body: { name, description: options.description ?? '' } });
    ctx.success(`Created sharing group ${data.name} (${data.id})`);
    return { json: raw, view: table(groupColumns, [data], '') };
  },
});
