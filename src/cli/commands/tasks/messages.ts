import type { Handler } from '../../command.js';
import { call } from '../../api.js';
import { table } from '../../output/view.js';
import type { Message } from '../../../contract/conversation.js';
import { contentSummary, handlerErrorOf, resolveTaskId } from './conversation.js';

const messages: Handler = async (ctx, [ref], options) => {
  const taskId = await resolveTaskId(ctx, ref!);
  const { data, raw } = await call(ctx, 'listMessages', { query: { task_id: taskId, after_sequence_id: options.after, limit: options.limit } });
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
};
export default messages;
