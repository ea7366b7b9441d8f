import type { Handler } from '../../command.js';
import { call } from '../../api.js';
import { taskRecord } from '../../output/resources.js';
import { resolveTaskId } from '../../refs.js';
import { agentctl } from '../../shell.js';

const remove: Handler = async (ctx, [ref]) => {
  await ctx.confirm(`Delete task ${ref}? It is marked DELETED and can no longer change.`, agentctl('tasks', 'delete', ref, '--yes'));
  const id = await resolveTaskId(await ctx.client(), ref!);
  const { data, raw } = await call(ctx, 'deleteTask', { params: { task_id: id } });
  ctx.success(`Task ${data.name ?? data.id} is ${data.status}`);
  return { json: raw, view: taskRecord(data) };
};
export default remove;
