import type { Handler } from '../../command.js';
import { usageError } from '../../errors.js';
import { record } from '../../output/view.js';

const set: Handler = async (ctx, [key, value]) => {
  if (key === 'base_url' && !/^https?:\/\/[^\s/]+/.test(value)) throw usageError(`base_url must be an http(s) URL, got "${value}"`);
  const store = ctx.config();
  const { profile } = ctx.credentials({ creating: true });
  await store.updateProfile(profile, { [key]: value });
  if (!store.currentProfile) await store.setCurrentProfile(profile);
  ctx.success(`Set ${key} of profile "${profile}"`);
  const shown = key === 'api_key' ? `${value.slice(0, 12)}…` : value;
  return { json: { profile, key, value: shown }, view: record([['Profile', profile], [key, shown]]) };
};
export default set;
