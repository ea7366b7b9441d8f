import { defineCommand } from '../../command.js';
import { taskRecord } from '../../output/resources.js';

export default defineCommand({
  path: ['tasks', 'get'],
  summary: 'Show a task (by task_ id or by name)',
  args: [{ name: 'task', description: 'task_ id or task name', required: true }],
  examples: ['agentctl tasks get task_01J...', 'agentctl tasks get nightly-report --json'],
  notFoundNext: 'agentctl tasks list',
  handler: async (ctx, [ref]) => {
    const { data, raw } = ref.startsWith('task_')
      ? await ctx.call('getTask', { params: { task_id: ref } })
      : await ctx.call('getTaskByName', { params: { task_name: ref } });
    return { json: raw, view: taskRecord(data) };
  },
});
