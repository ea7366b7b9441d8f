import { defineCommand } from '../../command.js';
import { versionLabels } from '../../names.js';
import { agent, all, limit, page } from '../../options.js';
import { table } from '../../output/view.js';
import { listPaged } from '../../paging.js';
import { resolveAgent, resolveTaskId } from '../../refs.js';

export default defineCommand({
  path: ['states', 'history'],
  summary: 'The values a task’s state held before it was replaced, since the task’s last migration, newest first',
  description: 'One value per task sequence at which the state was written (the last one written at it); the current value is `agentctl states get`.',
  args: [{ name: 'task', description: 'task_ id or task name', required: true }],
  options: [{ ...agent, description: 'Only this agent’s state (namespace/name or agt_ id)' }, limit(), page, all],
  examples: ['agentctl states history task_01J...', 'agentctl states history my-task --agent default/bot --json'],
  notFoundNext: 'agentctl tasks list',
  handler: async (ctx, [task], options) => {
    const client = await ctx.client();
    const taskId = await resolveTaskId(client, task);
    const agentId = options.agent ? (options.agent.startsWith('agt_') ? options.agent : (await resolveAgent(client, options.agent)).id) : undefined;
    // The last migration, as the pages say (the history starts there).
    const seen: { since: string | null } = { since: null };
    const { items, raw } = await listPaged(ctx, options, 'history', async (page_number, limit) => {
      const { data, raw } = await ctx.call('listStateHistory', { params: { task_id: taskId }, query: { agent_id: agentId, limit, page_number } });
      seen.since = data.since_migration;
      return { items: data.history, total: data.total, raw };
    });
    const labels = await versionLabels(
      ctx,
      items.map((h) => h.written_by_version_id),
    );
    const moved = seen.since;
    if (moved) ctx.info(`Since the task’s last migration, at ${moved}.`);
    return {
      json: raw,
      view: table(
        [
          { header: 'SEQUENCE', value: (h) => h.sequence_id },
          { header: 'AGENT', value: (h) => h.agent_id },
          { header: 'WRITTEN', value: (h) => h.written_at, format: 'time' },
          { header: 'BY', value: (h) => (h.written_by_version_id ? (labels.get(h.written_by_version_id) ?? h.written_by_version_id) : '-') },
          { header: 'STATE', value: (h) => JSON.stringify(h.state) },
        ],
        items,
        moved ? 'No earlier values since the task’s last migration.' : 'No earlier values: the state has not been replaced yet.',
      ),
    };
  },
});
