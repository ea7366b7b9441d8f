import type { Handler } from '../../command.js';
import { call } from '../../api.js';
import { taskRecord } from '../../output/resources.js';

const cancel: Handler = async (ctx, [id]) => {
  const { data, raw } = await call(ctx, 'cancelTask', { params: { task_id: id } });
  ctx.success(`Task ${data.id} is ${data.status}`);
  return { json: raw, view: taskRecord(data) };
};
export default cancel;
