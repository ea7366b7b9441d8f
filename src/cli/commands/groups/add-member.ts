import { defineCommand } from '../../command.js';
import { record } from '../../output/view.js';
import { resolveGroupIds, resolveKeyId } from './shared.js';

/** PUT /groups/{id}/members/{key_id}: idempotent, so adding a member twice is not an error. */
export default defineCommand({
  path: ['groups', 'add-member'],
  summary: 'Add an API key to a sharing group (org admins): it shares the group’s access',
  args: [
    { name: 'group', description: 'grp_ id or group name', required: true },
    { name: 'key', description: 'key_ id or key name', required: true },
  ],
  examples: ['agentctl groups add-member platform ci-deploy', 'agentctl groups add-member grp_01J... key_01J... --json'],
  notFoundNext: 'agentctl groups list',
  handler: async (ctx, [groupRef, keyRef]) => {
    const client = await ctx.client();
    const [[groupId], keyId] = await Promise.all([resolveGroupIds(client, [groupRef!], 'group'), resolveKeyId(client, keyRef!, 'key')]);
    const { data, raw } = await ctx.call('addGroupMember', { params: { group_id: groupId, member_id: keyId } });
    ctx.success(`${data.name} (${data.member_id}) is a member of sharing group ${groupRef}`);
    return {
      json: raw,
      view: record([
        ['Group', data.group_id],
        ['Member', data.member_id],
        ['Name', data.name],
        ['Added', data.added_at, 'time'],
      ]),
    };
  },
});
