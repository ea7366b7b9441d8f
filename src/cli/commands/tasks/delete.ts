import { defineCommand } from '../../command.js';
import { confirmApply } from '../../confirm.js';
import { taskRecord } from '../../output/resources.js';
import { resolveTaskId } from '../../refs.js';
import { agentctl } from '../../shell.js';

export default defineCommand({
  path: ['tasks', 'delete'],
  summary: 'Delete a task (soft; asks first; --yes to skip)',
  args: [{ name: 'task', description: 'task_ id or task name', required: true }],
  examples: ['agentctl tasks delete task_01J... --yes'],
  notFoundNext: 'agentctl tasks list',
  handler: async (ctx, [ref]) => {
    const { data, raw } = await confirmApply(ctx, {
      question: `Delete task ${ref}? It is marked DELETED and can no longer change.`,
      retry: agentctl('tasks', 'delete', ref, '--yes'),
      apply: async () => ctx.call('deleteTask', { params: { task_id: await resolveTaskId(await ctx.client(), ref) } }),
    });
    ctx.success(`Task ${data.name ?? data.id} is ${data.status}`);
    return { json: raw, view: taskRecord(data) };
  },
});
