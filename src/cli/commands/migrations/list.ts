import { defineCommand } from '../../command.js';
import { agent } from '../../options.js';
import { resolveAgent } from '../../refs.js';
import { labelsOf, migrationColumns } from '../../rollouts.js';
import { table } from '../../output/view.js';

export default defineCommand({
  path: ['migrations', 'list'],
  summary: 'The migration history, newest first: every migration, rollout step, revert and undo',
  options: [
    { ...agent, description: 'Only this agent’s migrations (namespace/name or agt_ id)' },
    { flags: '--rollout <id>', description: 'Only the steps and revert of this rollout (ro_ id)', field: 'rollout_id' },
    { flags: '--limit <n>', description: 'How many to list (1-200)', integer: true, default: 50 },
  ],
  examples: ['agentctl migrations list --agent default/bot', 'agentctl migrations list --rollout ro_01J... --json'],
  notFoundNext: 'agentctl agents list',
  handler: async (ctx, _args, options) => {
    const agentId = options.agent ? (await resolveAgent(await ctx.client(), options.agent)).id : undefined;
    const { data, raw } = await ctx.call('listMigrations', { query: { agent_id: agentId, rollout_id: options.rollout, limit: options.limit } });
    const labels = await labelsOf(
      ctx,
      data.migrations.flatMap((m) => [m.to_version_id, ...m.from_version_ids]),
    );
    return { json: raw, view: table(migrationColumns(labels), data.migrations, 'No migrations.') };
  },
});
