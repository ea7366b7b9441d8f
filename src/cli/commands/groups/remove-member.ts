import type { Handler } from '../../command.js';
import { call } from '../../api.js';
import { record } from '../../output/view.js';
import { resolveGroupIds, resolveKeyId } from './shared.js';

const removeMember: Handler = async (ctx, [groupRef, keyRef]) => {
  const client = await ctx.client();
  const [[groupId], keyId] = await Promise.all([resolveGroupIds(client, [groupRef!], 'group'), resolveKeyId(client, keyRef!, 'key')]);
  await ctx.confirm(`Remove ${keyRef} from sharing group ${groupRef}? It loses the access the group gives.`);
  const { data, raw } = await call(ctx, 'removeGroupMember', { params: { group_id: groupId, member_id: keyId } });
  ctx.success(`${keyRef} (${keyId}) is no longer a member of ${groupRef}`);
  return { json: raw, view: record([['ID', data.id], ['Message', data.message]]) };
};
export default removeMember;
