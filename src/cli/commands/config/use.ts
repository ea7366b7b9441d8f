import type { Handler } from '../../command.js';
import { unknownProfile } from '../../errors.js';
import { record } from '../../output/view.js';

const use: Handler = async (ctx, [name]) => {
  const store = ctx.config();
  if (!store.profile(name)) throw unknownProfile(name, undefined, Object.keys(store.profiles()));
  await store.setCurrentProfile(name);
  ctx.success(`Now using profile "${name}"`);
  if (ctx.env.AGENTCTL_PROFILE && ctx.env.AGENTCTL_PROFILE !== name) ctx.warn(`AGENTCTL_PROFILE=${ctx.env.AGENTCTL_PROFILE} still takes precedence in this environment`);
  return { json: { current_profile: name }, view: record([['Current profile', name]]) };
};
export default use;
