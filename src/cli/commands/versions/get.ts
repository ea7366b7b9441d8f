import { defineCommand } from '../../command.js';
import { eventColumns, table, versionRecord } from '../../output/resources.js';
import { resolveVersionId } from '../../refs.js';
import { agent } from '../../options.js';

export default defineCommand({
  path: ['versions', 'get'],
  summary: 'Show a version (and with --events its lifecycle events)',
  args: [{ name: 'version', description: 'vN or a git-hash prefix (4+ characters) of the --agent, or a ver_ id', required: true }],
  options: [agent, { flags: '--events', description: 'List its lifecycle events instead' }],
  examples: ['agentctl versions get v3 --agent default/bot', 'agentctl versions get 3f2a9c1 --agent default/bot --events', 'agentctl versions get ver_01J...'],
  notFoundNext: 'agentctl versions list --agent <ns/name>',
  handler: async (ctx, [ref], options) => {
    const id = await resolveVersionId(await ctx.client(), ref, options.agent, 'version');
    if (options.events) {
      const { data, raw } = await ctx.call('listVersionEvents', { params: { version_id: id } });
      return { json: raw, view: table(eventColumns, data.events, 'No events.') };
    }
    const { data, raw } = await ctx.call('getVersion', { params: { version_id: id } });
    return { json: raw, view: versionRecord(data) };
  },
});
