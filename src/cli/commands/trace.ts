import { defineCommand } from '../command.js';
import { usageError } from '../errors.js';
import { text } from '../output/view.js';

export default defineCommand({
  path: ['trace'],
  summary: 'Show one trace by its id (from --debug or an error’s trace: line) as a waterfall',
  args: [{ name: 'trace_id', description: 'The W3C trace id: 32 hex digits', required: true }],
  options: [{ flags: '--db', description: 'Show the database spans too' }],
  examples: ['agentctl trace 4bf92f3577b34da6a3ce929d0e0e4736', 'agentctl trace 4bf92f3577b34da6a3ce929d0e0e4736 --json'],
  notFoundNext: 'agentctl tasks trace <task>',
  handler: async (ctx, [traceId], options) => {
    const id = traceId!.trim().toLowerCase();
    if (!/^[0-9a-f]{32}$/.test(id)) throw usageError(`${traceId} is not a trace id: 32 hex digits, as --debug and error output show them`);
    const { data, raw } = await ctx.call('getTrace', { params: { trace_id: id } });
    const { renderWaterfall } = await import('../output/waterfall.js');
    return { json: raw, view: text(renderWaterfall(data, { chalk: ctx.chalk, columns: ctx.io.stdout.columns, db: Boolean(options.db) })) };
  },
});
