import { defineCommand } from '../../command.js';
import { confirmApply } from '../../confirm.js';
import { keyRecord } from '../../output/resources.js';
import { kindsOfScopes, nameBook } from '../../names.js';
import { resolveKeyId } from '../../refs.js';
import { agentctl } from '../../shell.js';

export default defineCommand({
  path: ['keys', 'revoke'],
  summary: 'Revoke an API key at once (asks first; --yes to skip)',
  aliases: ['rm'],
  args: [{ name: 'key', description: 'key_ id or key name (a name several keys share is refused)', required: true }],
  examples: ['agentctl keys revoke key_01J... --yes', 'agentctl keys rm ci-deploy --yes'],
  notFoundNext: 'agentctl keys list',
  handler: async (ctx, [ref]) => {
    const { data, raw } = await confirmApply(ctx, {
      question: `Revoke key ${ref}? Every request with it fails from now on.`,
      retry: agentctl('keys', 'revoke', ref, '--yes'),
      apply: async () => ctx.call('revokeKey', { params: { key_id: await resolveKeyId(await ctx.client(), ref, false) } }),
    });
    ctx.success(`Revoked key ${data.name} (${data.key_prefix}…)`);
    return { json: raw, view: keyRecord(data, await nameBook(ctx, [...kindsOfScopes([data]), 'groups'])) };
  },
});
