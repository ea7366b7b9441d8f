import { defineCommand } from '../../command.js';
import { boundsText, EVENT_LIST_LIMIT } from '../../../contract/enums.js';
import { table } from '../../output/view.js';
import type { Event } from '../../../contract/conversation.js';
import { contentSummary, resolveTaskId } from './conversation.js';

export default defineCommand({
  path: ['tasks', 'events'],
  summary: 'List the events sent to a task, in order',
  args: [{ name: 'task', description: 'task_ id or task name', required: true }],
  options: [
    { flags: '--after <sequence>', description: 'Only events after this sequence_id', integer: true, field: 'after_sequence_id' },
    { flags: '--limit <n>', description: `At most this many (${boundsText(EVENT_LIST_LIMIT, true)})`, integer: true },
  ],
  examples: ['agentctl tasks events task_01J...', 'agentctl tasks events nightly-report --json'],
  notFoundNext: 'agentctl tasks list',
  handler: async (ctx, [ref], options) => {
    const taskId = await resolveTaskId(ctx, ref!);
    const { data, raw } = await ctx.call('listEvents', { query: { task_id: taskId, after_sequence_id: options.after, limit: options.limit } });
    if (data.has_more) ctx.info(`More events follow: --after ${data.events.at(-1)!.sequence_id}`);
    return {
      json: raw,
      view: table<Event>(
        [
          { header: 'SEQ', value: (e) => e.sequence_id },
          { header: 'ID', value: (e) => e.id },
          { header: 'CONTENT', value: (e) => contentSummary(e.content) },
          { header: 'CREATED', value: (e) => e.created_at, format: 'time' },
        ],
        data.events,
        'No events yet',
      ),
    };
  },
});
