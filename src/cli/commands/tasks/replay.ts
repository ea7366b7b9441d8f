import { defineCommand } from '../../command.js';
import { usageError } from '../../errors.js';
import { rehearsalOutcome, rehearse } from '../../rehearsal.js';
import { agentPathOf, resolveTaskId, resolveVersionId } from '../../refs.js';

export default defineCommand({
  path: ['tasks', 'replay'],
  summary: 'Replay a task’s recorded events on another version in a shadow task and compare (exit 1 on regressions)',
  description:
    'The shadow task starts from the task’s creation (no state, its params, a copy of its files) and gets the task’s events one by one, behind live work; with --from-sequence S it starts from a copy of the task’s current state and replays the events from S on. The shadow’s messages and state never show as the task’s. Prints the differences event by event; --json prints the report.',
  args: [{ name: 'task', description: 'task_ id or task name', required: true, complete: 'tasks' }],
  options: [
    { flags: '--on <ref>', description: 'The version to replay on: vN, a git-hash prefix, or a ver_ id (of the task’s agent)', field: 'to_version_id' },
    { flags: '--from-sequence <n>', description: 'Replay the events from this sequence_id on', integer: true, field: 'from_sequence' },
    { flags: '--max-events <n>', description: 'Replay at most this many events (default 1000)', integer: true, field: 'max_events' },
  ],
  examples: ['agentctl tasks replay nightly-report --on v2', 'agentctl tasks replay task_01J... --on v3 --from-sequence 40 --max-events 100 --json'],
  notFoundNext: 'agentctl tasks list',
  handler: async (ctx, [ref], options) => {
    if (!options.on) throw usageError('--on <version> is required: the version to replay the task on', undefined, 'agentctl tasks replay <task> --on v2');
    const client = await ctx.client();
    const taskId = await resolveTaskId(client, ref);
    const task = await client.getTask({ params: { task_id: taskId }, query: { relationships: ['agents'] } });
    const owner = task.agents?.[0];
    const path = owner ? await agentPathOf(client, owner.id) : undefined;
    const agentRef = path ? `${path.namespace_slug}/${path.agent_name}` : undefined;
    const { data, raw } = await rehearse(ctx, {
      task_ids: [taskId],
      to_version_id: await resolveVersionId(client, options.on, agentRef, '--on'),
      ...(options.fromSequence !== undefined ? { from_sequence: options.fromSequence } : {}),
      ...(options.maxEvents !== undefined ? { max_events: options.maxEvents } : {}),
    });
    return rehearsalOutcome(ctx, data, raw);
  },
});
