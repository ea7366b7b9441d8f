import { defineCommand } from '../../command.js';
import { CliError } from '../../errors.js';
import { ExitCode } from '../../exit-codes.js';
import { readJsonObject } from '../../json-input.js';
import { record } from '../../output/view.js';
import { contentSummary, resolveTaskId, watchTask } from './conversation.js';

export default defineCommand({
  path: ['tasks', 'send'],
  summary: 'Send an event to a task: TEXT, or structured data with --data',
  args: [
    { name: 'task', description: 'task_ id or task name', required: true },
    { name: 'text', description: 'The event text (or use --data)' },
  ],
  description:
    '--watch then follows the turn as `tasks watch` does (the answer as it streams) until the agent is idle again, and exits 0 (1 when the task ends otherwise than COMPLETED meanwhile). An agent whose double-texting policy is reject refuses an event while it is busy: 409 task_busy.',
  options: [
    { flags: '--data <json>', description: 'Send a DataPart: a JSON object, @file.json, or - for standard input', field: 'content' },
    { flags: '--watch', description: 'Then watch the turn until the agent is idle again' },
  ],
  examples: [
    'agentctl tasks send task_01J... "hello"',
    'agentctl tasks send support-chat "what changed?" --watch',
    'agentctl tasks send nightly-report --data \'{"action":"approve"}\' --json',
  ],
  notFoundNext: 'agentctl tasks list',
  handler: async (ctx, [ref, text], options) => {
    if ((text === undefined) === (options.data === undefined)) {
      throw new CliError('Give the event as TEXT or as --data JSON (one of them)', {
        exitCode: ExitCode.usage,
        code: 'usage',
        hint: 'agentctl tasks send TASK "hello", or --data \'{"action":"approve"}\'',
      });
    }
    const taskId = await resolveTaskId(ctx, ref!);
    const content = text !== undefined ? text : { type: 'data' as const, data: await readJsonObject(ctx, options.data!, '--data') };
    // The client sends one Idempotency-Key per call (createEvent takes one): a retry never sends the event twice.
    const { data, raw } = await ctx.call('createEvent', { params: { task_id: taskId }, body: { content } });
    ctx.success(`Sent ${data.id} to ${taskId} (sequence ${data.sequence_id})`);
    if (options.watch) return { exitCode: await watchTask(ctx, taskId, data.sequence_id, { untilIdle: true }) };
    return {
      json: raw,
      view: record([
        ['ID', data.id],
        ['Task', data.task_id],
        ['Sequence', data.sequence_id],
        ['Content', contentSummary(data.content)],
        ['Created', data.created_at, 'time'],
      ]),
    };
  },
});
