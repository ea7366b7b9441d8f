import { defineCommand } from '../../command.js';
import { taskRecord } from '../../output/resources.js';
import { resolveTaskId } from '../../refs.js';

export default defineCommand({
  path: ['tasks', 'cancel'],
  summary: 'Cancel a task',
  args: [{ name: 'task', description: 'task_ id or task name', required: true }],
  examples: ['agentctl tasks cancel task_01J...', 'agentctl tasks cancel nightly-report --json'],
  notFoundNext: 'agentctl tasks list',
  handler: async (ctx, [ref]) => {
    const id = await resolveTaskId(await ctx.client(), ref!);
    const { data, raw } = await ctx.call('cancelTask', { params: { task_id: id } });
    ctx.success(`Task ${data.name ?? data.id} is ${data.status}`);
    return { json: raw, view: taskRecord(data) };
  },
});
