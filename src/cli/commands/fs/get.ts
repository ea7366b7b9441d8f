import { defineCommand } from '../../command.js';
import { record } from '../../output/view.js';
import { formatBytes } from './shared.js';

export default defineCommand({
  path: ['fs', 'get'],
  summary: 'Show a filesystem: checksum, file count, size',
  args: [{ name: 'filesystem', description: 'fs_ id', required: true }],
  examples: ['agentctl fs get fs_01J...', 'agentctl fs get fs_01J... --json'],
  handler: async (ctx, [id]) => {
    const { data, raw } = await ctx.call('getFilesystem', { params: { filesystem_id: id! } });
    return {
      json: raw,
      view: record([
        ['ID', data.id],
        ['Namespace', data.namespace_id],
        ['Project', data.project_id],
        ['Checksum', data.archive_checksum ?? '(empty)'],
        ['Files', data.files_count],
        ['Size', formatBytes(data.size_bytes)],
        ['Created', data.created_at, 'time'],
        ['Updated', data.updated_at, 'time'],
      ]),
    };
  },
});
