import { defineCommand } from '../../command.js';
import { boundsText, MESSAGE_LIST_LIMIT } from '../../../contract/enums.js';
import { table } from '../../output/view.js';
import type { Message } from '../../../contract/conversation.js';
import { contentSummary, handlerErrorOf, resolveTaskId } from './conversation.js';

export default defineCommand({
  path: ['tasks', 'messages'],
  summary: 'List a task’s messages in order (handler errors flagged)',
  args: [{ name: 'task', description: 'task_ id or task name', required: true }],
  options: [
    { flags: '--after <sequence>', description: 'Only messages after this sequence_id', integer: true, field: 'after_sequence_id' },
    { flags: '--limit <n>', description: `At most this many (${boundsText(MESSAGE_LIST_LIMIT, true)})`, integer: true },
  ],
  examples: ['agentctl tasks messages task_01J...', 'agentctl tasks messages nightly-report --after 40 --json'],
  notFoundNext: 'agentctl tasks list',
  handler: async (ctx, [ref], options) => {
    const taskId = await resolveTaskId(ctx, ref!);
    const { data, raw } = await ctx.call('listMessages', { query: { task_id: taskId, after_sequence_id: options.after, limit: options.limit } });
    if (data.has_more) ctx.info(`More messages follow: --after ${data.messages.at(-1)!.sequence_id}`);
    return {
      json: raw,
      view: table<Message>(
        [
          { header: 'SEQ', value: (m) => m.sequence_id },
          { header: 'ID', value: (m) => m.id },
          { header: 'AUTHOR', value: (m) => (handlerErrorOf(m.content) ? 'agent (handler error)' : m.author) },
          { header: 'STREAMING', value: (m) => m.streaming_status },
          { header: 'CONTENT', value: (m) => contentSummary(m.content) },
          { header: 'CREATED', value: (m) => m.created_at, format: 'time' },
        ],
        data.messages,
        'No messages yet',
      ),
    };
  },
});
