import { defineCommand } from '../../command.js';
import { resolveTaskId, watchTask } from './conversation.js';

export default defineCommand({
  path: ['tasks', 'watch'],
  summary: 'Follow a task live: messages on stdout, events, progress and status on stderr',
  description:
    'Ends when the task does: exit 0 when it COMPLETED, 1 when it failed, was canceled or terminated; Ctrl-C exits 130. --json prints the stream records as JSON Lines. A dropped connection resumes where it left off; while the service is unreachable each attempt is said on stderr, and after about 20 s it exits 6 (--retry: keep trying).',
  args: [{ name: 'task', description: 'task_ id or task name', required: true }],
  options: [
    { flags: '--after <sequence>', description: 'Start after this sequence_id (default: from the beginning)', integer: true },
    { flags: '--retry', description: 'Keep reconnecting while the service is unreachable (default: exit 6 after about 20 s of failed attempts)' },
    { flags: '--until-idle', description: 'End (exit 0) once the agent has no turn open and everything of its turns was shown' },
  ],
  examples: ['agentctl tasks watch task_01J...', 'agentctl tasks watch support-chat --until-idle', 'agentctl tasks watch nightly-report --json | jq -c .kind'],
  notFoundNext: 'agentctl tasks list',
  handler: async (ctx, [ref], options) => {
    const taskId = await resolveTaskId(ctx, ref!);
    return { exitCode: await watchTask(ctx, taskId, options.after ?? 0, { retry: options.retry, untilIdle: options.untilIdle }) };
  },
});
