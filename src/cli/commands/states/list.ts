import type { Handler } from '../../command.js';
import { call } from '../../api.js';
import { usageError } from '../../errors.js';
import { stateColumns, table } from '../../output/resources.js';
import { resolveAgent, resolveTaskId } from '../../refs.js';

const list: Handler = async (ctx, _args, options) => {
  if (!options.task && !options.agent) throw usageError('Give --task, --agent or both', undefined, 'agentctl states list --task <task_id>');
  const agentId = options.agent ? (options.agent.startsWith('agt_') ? options.agent : (await resolveAgent(await ctx.client(), options.agent)).id) : undefined;
  const taskId = options.task ? await resolveTaskId(await ctx.client(), options.task) : undefined;
  const { data, raw } = await call(ctx, 'listStates', { query: { task_id: taskId, agent_id: agentId } });
  return { json: raw, view: table(stateColumns, data.states, 'No state records.') };
};
export default list;
