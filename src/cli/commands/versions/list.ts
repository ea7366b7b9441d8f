import { defineCommand } from '../../command.js';
import { usageError } from '../../errors.js';
import { table, versionColumns } from '../../output/resources.js';
import { noteNewest } from '../../paging.js';
import { agentPathOf, requireAgentOption } from '../../refs.js';
import { VERSION_LIST_LIMIT, VERSION_LIST_MAX } from '../../../contract/enums.js';
import { agentctl, placeholder } from '../../shell.js';
import { agent, limit } from '../../options.js';
import { VERSION_STATUSES } from '../../../contract/lifecycle.js';

const EMPTY = 'No versions. Deploy one with: agentctl deploy --agent <ns/name> --image <url>';

export default defineCommand({
  path: ['versions', 'list'],
  summary: 'List versions of an agent, newest first',
  options: [
    agent,
    { flags: '--branch <name>', description: 'Only this git branch (or a br_ id)' },
    { flags: '--status <status>', description: 'Only this status', choices: VERSION_STATUSES },
    limit(VERSION_LIST_LIMIT),
  ],
  examples: ['agentctl versions list --agent default/bot', 'agentctl versions list --agent default/bot --branch main --status ACTIVE --json'],
  notFoundNext: 'agentctl agents list',
  handler: async (ctx, _args, options) => {
    if (!options.agent && typeof options.branch === 'string' && options.branch.startsWith('br_')) {
      if (options.status)
        throw usageError(
          '--status needs --agent (the branch list has no status filter)',
          undefined,
          agentctl('versions', 'list', '--agent', placeholder('ns/name'), '--branch', placeholder('name'), '--status', options.status),
        );
      const { data, raw } = await ctx.call('listBranchVersions', { params: { branch_id: options.branch }, query: { limit: options.limit } });
      noteNewest(ctx, data.versions.length, data.total, VERSION_LIST_MAX);
      return { json: raw, view: table(versionColumns, data.versions, EMPTY) };
    }
    const agent = requireAgentOption(options.agent, 'agentctl versions list');
    const path = await agentPathOf(await ctx.client(), agent);
    const { data, raw } = await ctx.call('listAgentVersions', {
      params: path,
      query: { branch: options.branch, status: options.status, limit: options.limit },
    });
    noteNewest(ctx, data.versions.length, data.total, VERSION_LIST_MAX);
    return { json: raw, view: table(versionColumns, data.versions, EMPTY) };
  },
});
