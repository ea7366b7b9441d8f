import { defineCommand } from '../../command.js';
import { confirmApply } from '../../confirm.js';
import { record } from '../../output/view.js';
import { resolveGroupIds, resolveKeyId } from './shared.js';
import { agentctl } from '../../shell.js';

export default defineCommand({
  path: ['groups', 'remove-member'],
  summary: 'Remove an API key from a sharing group (asks first; --yes to skip)',
  args: [
    { name: 'group', description: 'grp_ id or group name', required: true },
    { name: 'key', description: 'key_ id or key name', required: true },
  ],
  examples: ['agentctl groups remove-member platform ci-deploy --yes', 'agentctl groups remove-member grp_01J... key_01J... --yes --json'],
  notFoundNext: 'agentctl groups list',
  handler: async (ctx, [groupRef, keyRef]) => {
    const client = await ctx.client();
    const [[groupId], keyId] = await Promise.all([resolveGroupIds(client, [groupRef!], 'group'), resolveKeyId(client, keyRef!, 'key')]);
    const { data, raw } = await confirmApply(ctx, {
      question: `Remove ${keyRef} from sharing group ${groupRef}? It loses the access the group gives.`,
      retry: agentctl('groups', 'remove-member', groupRef, keyRef, '--yes'),
      apply: () => ctx.call('removeGroupMember', { params: { group_id: groupId, member_id: keyId } }),
    });
    ctx.success(`${keyRef} (${keyId}) is no longer a member of ${groupRef}`);
    return {
      json: raw,
      view: record([
        ['ID', data.id],
        ['Message', data.message],
      ]),
    };
  },
});
