import { defineCommand } from '../../command.js';
import { usageError } from '../../errors.js';
import { stateColumns, table } from '../../output/resources.js';
import { resolveAgent, resolveTaskId } from '../../refs.js';
import { agent } from '../../options.js';

export default defineCommand({
  path: ['states', 'list'],
  summary: 'List state records of a task and/or an agent',
  options: [
    { flags: '--task <task>', description: 'Task: task_ id or task name', field: 'task_id' },
    { ...agent, description: 'Agent (namespace/name or agt_ id)' },
  ],
  examples: ['agentctl states list --task task_01J...', 'agentctl states list --agent default/bot --json'],
  handler: async (ctx, _args, options) => {
    if (!options.task && !options.agent) throw usageError('Give --task, --agent or both', undefined, 'agentctl states list --task <task_id>');
    const agentId = options.agent ? (options.agent.startsWith('agt_') ? options.agent : (await resolveAgent(await ctx.client(), options.agent)).id) : undefined;
    const taskId = options.task ? await resolveTaskId(await ctx.client(), options.task) : undefined;
    const { data, raw } = await ctx.call('listStates', { query: { task_id: taskId, agent_id: agentId } });
    return { json: raw, view: table(stateColumns, data.states, 'No state records.') };
  },
});
