import { defineCommand } from '../../command.js';
import { agent, all, limit, page } from '../../options.js';
import { listPaged } from '../../paging.js';
import { resolveAgent } from '../../refs.js';
import { labelsOf, migrationColumns } from '../../rollouts.js';
import { table } from '../../output/view.js';

export default defineCommand({
  path: ['migrations', 'list'],
  summary: 'The migration history, newest first: every migration, rollout step, revert and undo',
  options: [
    { ...agent, description: 'Only this agent’s migrations (namespace/name or agt_ id)' },
    { flags: '--rollout <id>', description: 'Only the steps and revert of this rollout (ro_ id)', field: 'rollout_id' },
    limit(),
    page,
    all,
  ],
  examples: ['agentctl migrations list --agent default/bot', 'agentctl migrations list --rollout ro_01J... --json', 'agentctl migrations list --all'],
  notFoundNext: 'agentctl agents list',
  handler: async (ctx, _args, options) => {
    const agentId = options.agent ? (await resolveAgent(await ctx.client(), options.agent)).id : undefined;
    const { items, raw } = await listPaged(ctx, options, 'migrations', async (page_number, limit) => {
      const { data, raw } = await ctx.call('listMigrations', { query: { agent_id: agentId, rollout_id: options.rollout, limit, page_number } });
      return { items: data.migrations, total: data.total, raw };
    });
    const labels = await labelsOf(
      ctx,
      items.flatMap((m) => [m.to_version_id, ...m.from_version_ids]),
    );
    const empty = options.rollout
      ? `Rollout ${options.rollout} has moved no tasks yet.`
      : options.agent
        ? 'No migrations match.'
        : 'No migrations yet. Move tasks with: agentctl tasks migrate --from v1 --to-latest (add --steps 10,50,100 for a rollout)';
    return { json: raw, view: table(migrationColumns(labels), items, empty) };
  },
});
