import { defineCommand } from '../../command.js';
import { record } from '../../output/view.js';
import { resolveTaskId } from '../../refs.js';

export default defineCommand({
  path: ['tasks', 'interrupt'],
  summary: 'Stop the running turn of a task: the handler’s signal fires, streaming messages end INTERRUPTED; the task stays open',
  description:
    'The agent’s running handler is told to stop (ctx.signal); a handler that ignores it is cut off after the grace period and its delivery is completed, not sent again. Events queued behind it are then handled as the agent’s double-texting policy says. With no turn running there is nothing to do (exit 0, said so).',
  args: [{ name: 'task', description: 'task_ id or task name', required: true }],
  examples: ['agentctl tasks interrupt task_01J...', 'agentctl tasks interrupt nightly-report --json'],
  notFoundNext: 'agentctl tasks list',
  handler: async (ctx, [ref]) => {
    const id = await resolveTaskId(await ctx.client(), ref!);
    const { data, raw } = await ctx.call('interruptTask', { params: { task_id: id } });
    if (data.interrupted) ctx.success(data.detail);
    else ctx.info(data.detail);
    return {
      json: raw,
      view: record([
        ['Task', data.task_id],
        ['Interrupted', data.interrupted ? 'yes' : 'no (nothing running)'],
        ['Turn delivery', data.turn_delivery_id],
      ]),
    };
  },
});
