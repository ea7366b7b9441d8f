import { defineCommand } from '../../command.js';
import { table } from '../../output/view.js';
import { manifestColumns } from './shared.js';

export default defineCommand({
  path: ['fs', 'files'],
  summary: 'List every file of a filesystem with its mode and size',
  args: [{ name: 'filesystem', description: 'fs_ id', required: true }],
  examples: ['agentctl fs files fs_01J...', 'agentctl fs files fs_01J... --json'],
  handler: async (ctx, [id]) => {
    const { data, raw } = await ctx.call('listFilesystemFiles', { params: { filesystem_id: id! } });
    return { json: raw, view: table(manifestColumns, data.files, 'The filesystem is empty.') };
  },
});
