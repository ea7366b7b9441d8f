import { defineCommand } from '../../command.js';
import { CliError } from '../../errors.js';
import { ExitCode } from '../../exit-codes.js';
import { text } from '../../output/view.js';

export default defineCommand({
  path: ['config', 'get'],
  summary: 'Print one setting of the active profile (base_url, api_key, current_profile)',
  args: [{ name: 'key', description: 'base_url, api_key or current_profile', required: true, choices: ['base_url', 'api_key', 'current_profile'] }],
  options: [{ flags: '--reveal', description: 'Print the whole API key instead of its prefix' }],
  examples: ['agentctl config get base_url', 'agentctl config get api_key --reveal --profile prod'],
  handler: async (ctx, [key], options) => {
    const store = ctx.config();
    const { profile } = ctx.credentials();
    let value: string | undefined;
    if (key === 'current_profile') value = store.currentProfile;
    else {
      const saved = store.profile(profile)?.[key as 'base_url' | 'api_key'];
      value = key === 'api_key' && saved && !options.reveal ? `${saved.slice(0, 12)}…` : saved;
    }
    if (value === undefined) {
      throw new CliError(`${key === 'current_profile' ? 'No current profile is set' : `Profile "${profile}" has no ${key}`}`, {
        exitCode: ExitCode.notFound,
        code: 'not_found',
        next: 'agentctl config list',
      });
    }
    return { json: { profile, key, value }, view: text(value) };
  },
});
