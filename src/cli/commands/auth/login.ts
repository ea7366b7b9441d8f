import { createClient } from '../../../client/index.js';
import { defineCommand } from '../../command.js';
import { needsFlag, usageError } from '../../errors.js';
import { record } from '../../output/view.js';
import { VERSION } from '../../version.js';
import { agentctl } from '../../shell.js';

export default defineCommand({
  path: ['auth', 'login'],
  summary: 'Save an API key (and base URL) into a profile after checking it',
  description: 'Prompts for the key on a terminal; otherwise pipe it in with --with-token (kept out of shell history and ps), or pass --api-key.',
  options: [{ flags: '--with-token', description: 'Read the API key from standard input' }],
  examples: [
    'agentctl auth login',
    'agentctl auth login --with-token --profile prod < key.txt',
    'echo "$KEY" | agentctl auth login --with-token --base-url https://agents.example.com --profile prod',
  ],
  handler: async (ctx, _args, options) => {
    const store = ctx.config();
    const current = ctx.credentials({ creating: true });
    const profile = current.profile;
    let apiKey: string | undefined;
    if (options.withToken) {
      // As `gh auth login --with-token`: the key never appears in the shell's history or in ps.
      if (ctx.globals.apiKey) throw usageError('Give the key with --with-token (standard input) or --api-key, not both');
      if (ctx.io.stdin.isTTY)
        throw usageError('--with-token reads the key from standard input: pipe it in', undefined, 'agentctl auth login --with-token < key.txt');
      apiKey = (await ctx.readStdin()).trim();
      if (!apiKey) throw usageError('--with-token read no key from standard input', undefined, 'agentctl auth login --with-token < key.txt');
    } else apiKey = ctx.globals.apiKey ?? ctx.env.AGENTCTL_API_KEY;
    if (!apiKey) {
      if (!ctx.canPrompt()) throw needsFlag('--api-key', 'Logging in needs a key', 'agentctl auth login --api-key <key>');
      apiKey = (await (await ctx.prompts()).password({ message: `API key for ${current.baseUrl}` })).trim();
    }
    const baseUrl = current.baseUrl;
    // Check the key before saving it: a typo should not replace a working profile.
    const client = createClient({ baseUrl, apiKey, signal: ctx.signal, userAgent: `agentctl/${VERSION}`, retries: 1 });
    const { data: whoami, raw } = await client.request('whoami');
    await store.updateProfile(profile, { base_url: baseUrl, api_key: apiKey });
    if (!store.currentProfile) await store.setCurrentProfile(profile);
    ctx.success(`Logged in to ${baseUrl} as ${whoami.name} (${whoami.key_prefix}…); saved in profile "${profile}"`);
    if (store.currentProfile !== profile) ctx.info(`Profile "${store.currentProfile}" is still the current one: ${agentctl('config', 'use', profile)}`);
    return {
      json: raw,
      view: record([
        ['Profile', profile],
        ['Base URL', baseUrl],
        ['Key', whoami.name],
        ['Prefix', whoami.key_prefix],
      ]),
    };
  },
});
