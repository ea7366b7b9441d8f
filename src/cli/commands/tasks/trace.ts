import { defineCommand } from '../../command.js';
import { text } from '../../output/view.js';
import { resolveTaskId } from './conversation.js';

export default defineCommand({
  path: ['tasks', 'trace'],
  summary: 'Show a turn of a task as a waterfall: the CLI request, the server, the outbox wait, the delivery, the agent’s handler and its spans',
  description:
    'The server keeps the spans of recent turns (bounded by count and age). Without --turn the last one is shown; --json prints every kept trace of the task (or the one --turn picks).',
  args: [{ name: 'task', description: 'task_ id or task name', required: true }],
  options: [
    { flags: '--turn <n>', description: 'The Nth kept turn (1 = the first; -1 = the last)', integer: true },
    { flags: '--db', description: 'Show the database spans too' },
  ],
  examples: ['agentctl tasks trace task_01J...', 'agentctl tasks trace nightly-report --turn 2', 'agentctl tasks trace task_01J... --json'],
  notFoundNext: 'agentctl tasks list',
  handler: async (ctx, [ref], options) => {
    const taskId = await resolveTaskId(ctx, ref!);
    // The text view shows one turn: without --turn it asks for the last one only (a long task keeps thousands).
    const lastOnly = !ctx.globals.json && options.turn === undefined;
    const { data, raw } = await ctx.call('getTaskTraces', { params: { task_id: taskId }, query: { turn: options.turn, limit: lastOnly ? 1 : undefined } });
    if (data.traces.length === 0) {
      ctx.info(`The server keeps no trace of ${taskId} (tracing off, or its turns are older than the span store keeps).`);
      return { json: raw };
    }
    const { renderWaterfall } = await import('../../output/waterfall.js');
    const shown = data.traces.at(-1)!;
    if (options.turn === undefined && data.total > 1) ctx.info(`Turn ${data.total} of ${data.total} kept; --turn N shows another.`);
    return { json: raw, view: text(renderWaterfall(shown, { chalk: ctx.chalk, columns: ctx.io.stdout.columns, db: Boolean(options.db) })) };
  },
});
