import type { Handler } from '../../command.js';
import { resolveTaskId, watchTask } from './conversation.js';

const watch: Handler = async (ctx, [ref], options) => {
  const taskId = await resolveTaskId(ctx, ref!);
  return { exitCode: await watchTask(ctx, taskId, options.after ?? 0) };
};
export default watch;
