import { defineCommand } from '../../command.js';
import { keyColumns, table } from '../../output/resources.js';
import { kindsOfScopes, nameBook } from '../../names.js';

export default defineCommand({
  path: ['keys', 'list'],
  summary: 'List API keys (prefixes only)',
  options: [{ flags: '--include-revoked', description: 'Include revoked keys' }],
  examples: ['agentctl keys list', 'agentctl keys list --include-revoked --json'],
  handler: async (ctx, _args, options) => {
    const { data, raw } = await ctx.call('listKeys', { query: { include_revoked: options.includeRevoked ? 'true' : 'false' } });
    return { json: raw, view: table(keyColumns(await nameBook(ctx, kindsOfScopes(data.api_keys))), data.api_keys, 'No API keys.') };
  },
});
