import type { Handler } from '../../command.js';
import { call } from '../../api.js';
import { taskRecord } from '../../output/resources.js';

const get: Handler = async (ctx, [ref]) => {
  const { data, raw } = ref.startsWith('task_')
    ? await call(ctx, 'getTask', { params: { task_id: ref } })
    : await call(ctx, 'getTaskByName', { params: { task_name: ref } });
  return { json: raw, view: taskRecord(data) };
};
export default get;
