import type { Handler } from '../../command.js';
import { stateRecord } from '../../output/resources.js';
import { findState, noState } from './shared.js';

const get: Handler = async (ctx, [id], options) => {
  const target = await findState(ctx, id, options, 'agentctl states get');
  if (!target.state) throw noState(target, options.agent);
  return { json: target.raw, view: stateRecord(target.state) };
};
export default get;
