import type { Handler } from '../../command.js';
import { call } from '../../api.js';
import { keyRecord } from '../../output/resources.js';
import { kindsOfScopes, nameBook } from '../../names.js';
import { resolveKeyId } from '../../refs.js';
import { agentctl } from '../../shell.js';

const revoke: Handler = async (ctx, [ref]) => {
  await ctx.confirm(`Revoke key ${ref}? Every request with it fails from now on.`, agentctl('keys', 'revoke', ref, '--yes'));
  const id = await resolveKeyId(await ctx.client(), ref!, false);
  const { data, raw } = await call(ctx, 'revokeKey', { params: { key_id: id } });
  ctx.success(`Revoked key ${data.name} (${data.key_prefix}…)`);
  return { json: raw, view: keyRecord(data, await nameBook(ctx, [...kindsOfScopes([data]), 'groups'])) };
};
export default revoke;
