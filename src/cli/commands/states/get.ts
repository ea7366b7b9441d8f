import { defineCommand } from '../../command.js';
import { stateRecord } from '../../output/resources.js';
import { findState, noState } from './shared.js';
import { agent } from '../../options.js';

export default defineCommand({
  path: ['states', 'get'],
  summary: 'Show a state record (by st_ id, or by --task and --agent)',
  args: [{ name: 'state', description: 'st_ id (or use --task and --agent)' }],
  options: [
    { flags: '--task <task>', description: 'Task: task_ id or task name', field: 'task_id' },
    { ...agent, description: 'Agent (namespace/name or agt_ id)' },
  ],
  examples: ['agentctl states get st_01J...', 'agentctl states get --task task_01J... --agent default/bot --json'],
  notFoundNext: 'agentctl states list --task <task_id>',
  handler: async (ctx, [id], options) => {
    const target = await findState(ctx, id, options, 'agentctl states get');
    if (!target.state) throw noState(target, options.agent);
    return { json: target.raw, view: stateRecord(target.state) };
  },
});
