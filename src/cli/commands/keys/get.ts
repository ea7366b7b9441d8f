import { defineCommand } from '../../command.js';
import { keyRecord } from '../../output/resources.js';
import { kindsOfScopes, nameBook } from '../../names.js';
import { resolveKeyId } from '../../refs.js';

export default defineCommand({
  path: ['keys', 'get'],
  summary: 'Show an API key',
  args: [{ name: 'key', description: 'key_ id or key name (a name several keys share is refused)', required: true }],
  examples: ['agentctl keys get key_01J...', 'agentctl keys get ci-deploy --json'],
  notFoundNext: 'agentctl keys list',
  handler: async (ctx, [ref]) => {
    const id = await resolveKeyId(await ctx.client(), ref!, true);
    const { data, raw } = await ctx.call('getKey', { params: { key_id: id } });
    return { json: raw, view: keyRecord(data, await nameBook(ctx, [...kindsOfScopes([data]), 'groups'])) };
  },
});
