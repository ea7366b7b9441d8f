import type { Handler } from '../../command.js';
import { call } from '../../api.js';
import { readJsonObject } from '../../json-input.js';
import { taskRecord } from '../../output/resources.js';
import { requireAgentOption } from '../../refs.js';
import { watchTask } from './conversation.js';

const create: Handler = async (ctx, _args, options) => {
  const agent = requireAgentOption(options.agent, 'agentctl tasks create');
  const { data, raw } = await call(ctx, 'createTask', {
    body: {
      ...(agent.startsWith('agt_') ? { agent_id: agent } : { agent_name: agent }),
      branch: options.branch,
      name: options.name,
      params: options.params !== undefined ? await readJsonObject(ctx, options.params, '--params') : undefined,
      project_id: options.project,
    },
  });
  ctx.success(`Created task ${data.id} on ${data.current_version_id ?? 'no version'}`);
  // --watch: the task's stream from its first record (its creation) until it ends.
  if (options.watch) return { exitCode: await watchTask(ctx, data.id) };
  return { json: raw, view: taskRecord(data) };
};
export default create;
