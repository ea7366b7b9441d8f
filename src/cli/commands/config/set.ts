import { defineCommand } from '../../command.js';
import { usageError } from '../../errors.js';
import { record } from '../../output/view.js';

export default defineCommand({
  path: ['config', 'set'],
  summary: 'Set a setting of the active profile (creates the profile)',
  args: [
    { name: 'key', description: 'base_url or api_key', required: true, choices: ['base_url', 'api_key'] },
    { name: 'value', description: 'The new value', required: true },
  ],
  examples: ['agentctl config set base_url https://agents.example.com --profile prod', 'agentctl config set api_key "$KEY" --profile prod'],
  handler: async (ctx, [key, value]) => {
    if (key === 'base_url' && !/^https?:\/\/[^\s/]+/.test(value)) throw usageError(`base_url must be an http(s) URL, got "${value}"`);
    const store = ctx.config();
    const { profile } = ctx.credentials({ creating: true });
    await store.updateProfile(profile, { [key]: value });
    if (!store.currentProfile) await store.setCurrentProfile(profile);
    ctx.success(`Set ${key} of profile "${profile}"`);
    const shown = key === 'api_key' ? `${value.slice(0, 12)}…` : value;
    return {
      json: { profile, key, value: shown },
      view: record([
        ['Profile', profile],
        [key, shown],
      ]),
    };
  },
});
