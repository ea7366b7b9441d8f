import type { Handler } from '../../command.js';
import { call } from '../../api.js';
import { record } from '../../output/view.js';
import { parseAgentPath } from '../../refs.js';
import { agentctl } from '../../shell.js';

const remove: Handler = async (ctx, [ref]) => {
  await ctx.confirm(`Delete agent ${ref}, its branches, versions and environments?`, agentctl('agents', 'delete', ref, '--yes'));
  const { data, raw } = ref.startsWith('agt_')
    ? await call(ctx, 'deleteAgent', { params: { agent_id: ref } })
    : await call(ctx, 'deleteAgentByName', { params: parseAgentPath(ref) });
  ctx.success(data.message);
  return { json: raw, view: record([['ID', data.id], ['Result', data.message]]) };
};
export default remove;
