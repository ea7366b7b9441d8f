import { randomUUID } from 'node:crypto';
import type { Handler } from '../../command.js';
import { call } from '../../api.js';
import { CliError } from '../../errors.js';
import { ExitCode } from '../../exit-codes.js';
import { readJsonObject } from '../../json-input.js';
import { record } from '../../output/view.js';
import { contentSummary, resolveTaskId } from './conversation.js';

const send: Handler = async (ctx, [ref, text], options) => {
  if ((text === undefined) === (options.data === undefined)) {
    throw new CliError('Give the event as TEXT or as --data JSON (one of them)', { exitCode: ExitCode.usage, code: 'usage', hint: 'agentctl tasks send TASK "hello", or --data \'{"action":"approve"}\'' });
  }
  const taskId = await resolveTaskId(ctx, ref!);
  const content = text !== undefined ? text : { type: 'data' as const, data: await readJsonObject(ctx, options.data, '--data') };
  // One key per invocation: a retried request can never send the event twice.
  const { data, raw } = await call(ctx, 'createEvent', { params: { task_id: taskId }, body: { content } }, { headers: { 'idempotency-key': randomUUID() } });
  ctx.success(`Sent ${data.id} to ${taskId} (sequence ${data.sequence_id})`);
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
};
export default send;
