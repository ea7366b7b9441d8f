import type { Handler } from '../../command.js';
import { call } from '../../api.js';
import { taskRecord } from '../../output/resources.js';
import { resolveTaskId } from '../../refs.js';

const cancel: Handler = async (ctx, [ref]) => {
  const id = await resolveTaskId(await ctx.client(), ref!);
  const { data, raw } = await call(ctx, 'cancelTask', { params: { task_id: id } });
  ctx.success(`Task ${data.name ?? data.id} is ${data.status}`);
  return { json: raw, view: taskRecord(data) };
};
export default cancel;
