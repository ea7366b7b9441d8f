import { defineCommand } from '../../command.js';
import { unknownProfile } from '../../errors.js';
import { record } from '../../output/view.js';

export default defineCommand({
  path: ['config', 'use'],
  summary: 'Make a profile the current one',
  args: [{ name: 'profile', description: 'Profile name', required: true, complete: 'profiles' }],
  examples: ['agentctl config use prod', 'agentctl config use local'],
  handler: async (ctx, [name]) => {
    const store = ctx.config();
    if (!store.profile(name)) throw unknownProfile(name, undefined, Object.keys(store.profiles()));
    await store.setCurrentProfile(name);
    ctx.success(`Now using profile "${name}"`);
    if (ctx.env.AGENTCTL_PROFILE && ctx.env.AGENTCTL_PROFILE !== name)
      ctx.warn(`AGENTCTL_PROFILE=${ctx.env.AGENTCTL_PROFILE} still takes precedence in this environment`);
    return { json: { current_profile: name }, view: record([['Current profile', name]]) };
  },
});
