import type { Handler } from '../../command.js';
import { call } from '../../api.js';
import { keyRecord } from '../../output/resources.js';
import { agentctl } from '../../shell.js';

const revoke: Handler = async (ctx, [id]) => {
  await ctx.confirm(`Revoke key ${id}? Every request with it fails from now on.`, agentctl('keys', 'revoke', id, '--yes'));
  const { data, raw } = await call(ctx, 'revokeKey', { params: { key_id: id } });
  ctx.success(`Revoked key ${data.name} (${data.key_prefix}…)`);
  return { json: raw, view: keyRecord(data) };
};
export default revoke;
