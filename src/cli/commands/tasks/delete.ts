import type { Handler } from '../../command.js';
import { call } from '../../api.js';
import { taskRecord } from '../../output/resources.js';
import { agentctl } from '../../shell.js';

const remove: Handler = async (ctx, [id]) => {
  await ctx.confirm(`Delete task ${id}? It is marked DELETED and can no longer change.`, agentctl('tasks', 'delete', id, '--yes'));
  const { data, raw } = await call(ctx, 'deleteTask', { params: { task_id: id } });
  ctx.success(`Task ${data.id} is ${data.status}`);
  return { json: raw, view: taskRecord(data) };
};
export default remove;
