import type { Handler } from '../../command.js';
import { call } from '../../api.js';
import { record } from '../../output/view.js';
import { findState, ifMatch, noState } from './shared.js';
import { agentctl } from '../../shell.js';

const remove: Handler = async (ctx, [id], options) => {
  const target = await findState(ctx, id, options, 'agentctl states delete');
  if (!target.state) throw noState(target, options.agent);
  await ctx.confirm(`Delete state ${target.state.id} of task ${target.state.task_id}?`, agentctl('states', 'delete', target.state.id, '--yes'));
  const { data, raw } = await call(ctx, 'deleteState', { params: { state_id: target.state.id } }, { headers: ifMatch(options.ifMatch) });
  ctx.success(data.message);
  return { json: raw, view: record([['ID', data.id], ['Result', data.message]]) };
};
export default remove;
