import type { Handler } from '../../command.js';
import { call } from '../../api.js';
import { record } from '../../output/view.js';
import { resolveGroupIds, resolveKeyId } from './shared.js';

/** PUT /groups/{id}/members/{key_id}: idempotent, so adding a member twice is not an error. */
const addMember: Handler = async (ctx, [groupRef, keyRef]) => {
  const client = await ctx.client();
  const [[groupId], keyId] = await Promise.all([resolveGroupIds(client, [groupRef!], 'group'), resolveKeyId(client, keyRef!, 'key')]);
  const { data, raw } = await call(ctx, 'addGroupMember', { params: { group_id: groupId, member_id: keyId } });
  ctx.success(`${data.name} (${data.member_id}) is a member of sharing group ${groupRef}`);
  return { json: raw, view: record([['Group', data.group_id], ['Member', data.member_id], ['Name', data.name], ['Added', data.added_at, 'time']]) };
};
export default addMember;
