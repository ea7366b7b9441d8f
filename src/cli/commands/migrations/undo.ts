import { defineCommand } from '../../command.js';
import { confirmApply } from '../../confirm.js';
import { plural } from '../../../contract/plural.js';
import { labelsOf, migrationRecordView } from '../../rollouts.js';
import { agentctl } from '../../shell.js';

export default defineCommand({
  path: ['migrations', 'undo'],
  summary: 'Move exactly the tasks of a migration back where they came from (refused when they moved on since)',
  args: [{ name: 'migration', description: 'A mig_ id', required: true }],
  examples: ['agentctl migrations undo mig_01J...', 'agentctl migrations undo mig_01J... --yes --json'],
  notFoundNext: 'agentctl migrations list',
  handler: async (ctx, [id]) => {
    const undone = await confirmApply(ctx, {
      plan: async () => (await ctx.call('getMigration', { params: { migration_id: id! } })).data,
      describe: async (m) => {
        const labels = await labelsOf(ctx, [m.to_version_id, ...m.from_version_ids]);
        return `Plan: move the ${plural(m.count, 'task')} of ${m.id} from ${labels.get(m.to_version_id) ?? m.to_version_id} back to ${m.from_version_ids.map((v) => labels.get(v) ?? v).join(', ')}.`;
      },
      question: 'Undo this migration?',
      needs: 'Undoing a migration needs confirmation',
      retry: agentctl('migrations', 'undo', id!, '--yes'),
      apply: () => ctx.call('undoMigration', { params: { migration_id: id! } }),
    });
    const { data, raw } = undone;
    const labels = await labelsOf(ctx, [data.to_version_id, ...data.from_version_ids]);
    ctx.success(`Moved ${plural(data.count, 'task')} back to ${labels.get(data.to_version_id) ?? data.to_version_id} (${data.id} undoes ${data.undoes_id})`);
    return { json: raw, view: migrationRecordView(data, labels) };
  },
});
