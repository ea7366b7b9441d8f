import { defineCommand } from '../../command.js';
import { CliError } from '../../errors.js';
import { ExitCode } from '../../exit-codes.js';
import { record } from '../../output/view.js';

export default defineCommand({
  path: ['auth', 'logout'],
  summary: 'Remove the API key from a profile',
  examples: ['agentctl auth logout', 'agentctl auth logout --profile prod'],
  handler: async (ctx) => {
    const store = ctx.config();
    const { profile } = ctx.credentials();
    if (!store.profile(profile)?.api_key) {
      throw new CliError(`Profile "${profile}" holds no API key`, { exitCode: ExitCode.notFound, code: 'not_found', next: 'agentctl config list' });
    }
    await store.updateProfile(profile, { api_key: undefined });
    ctx.success(`Removed the API key from profile "${profile}"`);
    if (ctx.env.AGENTCTL_API_KEY) ctx.warn('AGENTCTL_API_KEY is still set in this environment and will keep being used');
    return {
      json: { profile, api_key: null },
      view: record([
        ['Profile', profile],
        ['API key', null],
      ]),
    };
  },
});
