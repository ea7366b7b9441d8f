import { defineCommand } from '../../command.js';
import { labelsOf, migrationRecordView } from '../../rollouts.js';

export default defineCommand({
  path: ['migrations', 'get'],
  summary: 'Show a migration record with exactly the tasks it moved',
  args: [{ name: 'migration', description: 'A mig_ id', required: true }],
  examples: ['agentctl migrations get mig_01J...', 'agentctl migrations get mig_01J... --json'],
  notFoundNext: 'agentctl migrations list',
  handler: async (ctx, [id]) => {
    const { data, raw } = await ctx.call('getMigration', { params: { migration_id: id! } });
    return { json: raw, view: migrationRecordView(data, await labelsOf(ctx, [data.to_version_id, ...data.from_version_ids])) };
  },
});
