import { defineCommand } from '../../command.js';
import { CliError } from '../../errors.js';
import { ExitCode } from '../../exit-codes.js';
import { record } from '../../output/view.js';
import { scopeText } from '../../output/resources.js';
import { idsOnly, kindsOfScopes, nameBook } from '../../names.js';

/** Where a value came from, in the words a person would use to change it. */
const origin = (source: string | undefined, flag: string, env: string, profile: string) =>
  ({ flag, env, profile: `profile "${profile}"`, config: 'current_profile in the config file', default: 'default' })[source ?? 'default'] ?? source;

export default defineCommand({
  path: ['auth', 'status'],
  summary: 'Show the active profile, where the URL and key come from, and who the key is',
  examples: ['agentctl auth status', 'agentctl auth status --json'],
  handler: async (ctx) => {
    const c = ctx.credentials();
    for (const variable of c.envOverrides) ctx.warn(`${variable} overrides the value saved in profile "${c.profile}"`);
    if (!c.apiKey) {
      throw new CliError(`Not logged in: profile "${c.profile}" has no API key and AGENTCTL_API_KEY is not set`, {
        exitCode: ExitCode.auth,
        code: 'no_api_key',
        hint: `Base URL: ${c.baseUrl} (from ${origin(c.baseUrlSource, '--base-url', 'AGENTCTL_BASE_URL', c.profile)}).`,
        next: 'agentctl auth login',
      });
    }
    const { data: whoami, raw } = await ctx.call('whoami');
    const names = await nameBook(ctx, [...kindsOfScopes([whoami]), ...(whoami.sharing_group_ids.length ? (['groups'] as const) : [])]);
    return {
      json: {
        profile: c.profile,
        profile_source: c.profileSource,
        base_url: c.baseUrl,
        base_url_source: c.baseUrlSource,
        api_key_source: c.apiKeySource,
        env_overrides: c.envOverrides,
        whoami: raw,
      },
      view: record([
        ['Profile', `${c.profile} (from ${origin(c.profileSource, '--profile', 'AGENTCTL_PROFILE', c.profile)})`],
        ['Base URL', `${c.baseUrl} (from ${origin(c.baseUrlSource, '--base-url', 'AGENTCTL_BASE_URL', c.profile)})`],
        ['API key', `${whoami.key_prefix}… (from ${origin(c.apiKeySource, '--api-key', 'AGENTCTL_API_KEY', c.profile)})`],
        ['Key', `${whoami.name} (${whoami.id})`],
        ['Org', whoami.org_id],
        ['Scopes', scopeText(whoami, names)],
        ['Scope ids', scopeText(whoami, idsOnly), 'text', 'wide'],
        ['Groups', whoami.sharing_group_ids.map((id) => names.group(id)).join(', ')],
        ['Group ids', whoami.sharing_group_ids.join(', '), 'text', 'wide'],
        ['Expires', whoami.expires_at, 'time'],
      ]),
    };
  },
});
