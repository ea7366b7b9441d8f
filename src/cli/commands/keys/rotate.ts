import { defineCommand } from '../../command.js';
import { confirmApply } from '../../confirm.js';
import { text } from '../../output/view.js';
import { agentctl } from '../../shell.js';
import { resolveKeyId } from '../../refs.js';

export default defineCommand({
  path: ['keys', 'rotate'],
  summary: 'Issue a new secret for a key; the old one stops working (asks first; --yes to skip)',
  args: [{ name: 'key', description: 'key_ id or key name (a name several keys share is refused)', required: true }],
  examples: ['agentctl keys rotate key_01J... --yes'],
  notFoundNext: 'agentctl keys list',
  handler: async (ctx, [ref]) => {
    const credentials = ctx.credentials();
    const { own, data, raw } = await confirmApply(ctx, {
      question: `Rotate key ${ref}? Its current secret stops working at once.`,
      retry: agentctl('keys', 'rotate', ref, '--yes'),
      apply: async () => {
        const id = await resolveKeyId(await ctx.client(), ref, false);
        // Rotating the key this profile logs in with would lock the profile out: keep it in step.
        const own = credentials.apiKeySource === 'profile' ? (await ctx.call('whoami')).data.id === id : false;
        return { own, ...(await ctx.call('rotateKey', { params: { key_id: id } })) };
      },
    });
    if (own) {
      await ctx.config().updateProfile(credentials.profile, { api_key: data.secret });
      ctx.info(`Saved the new secret into profile "${credentials.profile}".`);
    }
    ctx.warn(`New secret for ${data.api_key.name} (${data.api_key.id}) is on stdout: store it now, it is not shown again.`);
    return { json: raw, view: text(data.secret) };
  },
});
