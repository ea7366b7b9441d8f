import type { Handler } from '../../command.js';
import { call } from '../../api.js';
import { text } from '../../output/view.js';
import { agentctl } from '../../shell.js';
import { resolveKeyId } from '../../refs.js';

const rotate: Handler = async (ctx, [ref]) => {
  await ctx.confirm(`Rotate key ${ref}? Its current secret stops working at once.`, agentctl('keys', 'rotate', ref, '--yes'));
  const id = await resolveKeyId(await ctx.client(), ref!, false);
  const credentials = ctx.credentials();
  // Rotating the key this profile logs in with would lock the profile out: keep it in step.
  const own = credentials.apiKeySource === 'profile' ? (await call(ctx, 'whoami')).data.id === id : false;
  const { data, raw } = await call(ctx, 'rotateKey', { params: { key_id: id } });
  if (own) {
    await ctx.config().updateProfile(credentials.profile, { api_key: data.key });
    ctx.info(`Saved the new secret into profile "${credentials.profile}".`);
  }
  ctx.warn(`New secret for ${data.api_key.name} (${data.api_key.id}) is on stdout: store it now, it is not shown again.`);
  return { json: raw, view: text(data.key) };
};
export default rotate;
