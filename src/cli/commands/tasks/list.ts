import { defineCommand } from '../../command.js';
import { usageError } from '../../errors.js';
import { table, taskColumns } from '../../output/resources.js';
import { resolveVersionId } from '../../refs.js';
import { listPaged } from '../../paging.js';
import { nameBook, versionLabels } from '../../names.js';
import { agent, all, limit, page } from '../../options.js';
import { TASK_STATUSES } from '../../../contract/lifecycle.js';

export default defineCommand({
  path: ['tasks', 'list'],
  summary: 'List tasks',
  options: [
    agent,
    { flags: '--branch <name>', description: 'Only this git branch (with --agent) or br_ id', field: ['branch', 'branch_id'] },
    {
      flags: '--on-version <ref>',
      description: 'Only tasks currently on this version (vN or git-hash prefix of the --agent, or a ver_ id)',
      field: 'version_id',
    },
    { flags: '--status <status>', description: 'Only this status', choices: TASK_STATUSES },
    { flags: '--include-shadows', description: 'Also the shadow tasks of rehearsals (tasks replay, migrate --rehearse), hidden by default' },
    limit(),
    page,
    all,
  ],
  examples: [
    'agentctl tasks list --agent default/bot --status RUNNING',
    'agentctl tasks list --agent default/bot --all --json',
    'agentctl tasks list --on-version ver_01J... --json',
  ],
  handler: async (ctx, _args, options) => {
    const agent: string | undefined = options.agent;
    const branch: string | undefined = options.branch;
    if (branch && !branch.startsWith('br_') && !agent) throw usageError('--branch by name needs --agent namespace/name (or pass a br_ id)');
    const versionId = options.onVersion ? await resolveVersionId(await ctx.client(), options.onVersion, agent, '--on-version') : undefined;
    const { items, raw } = await listPaged(ctx, options, 'tasks', async (page, limit) => {
      const { data, raw } = await ctx.call('listTasks', {
        query: {
          agent_id: agent?.startsWith('agt_') ? agent : undefined,
          agent: agent && !agent.startsWith('agt_') ? agent : undefined,
          branch: branch && !branch.startsWith('br_') ? branch : undefined,
          branch_id: branch?.startsWith('br_') ? branch : undefined,
          version_id: versionId,
          status: options.status,
          ...(options.includeShadows ? { include_shadows: 'true' } : {}),
          limit,
          page_number: page,
          // The AGENT column's names; --json prints the server's answer as asked.
          relationships: ctx.globals.json ? undefined : 'agents',
        },
      });
      // total is always there: only include_total=false leaves it out.
      return { items: data.tasks, total: data.total ?? data.tasks.length, raw };
    });
    const [names, versions] = await Promise.all([
      nameBook(ctx, ['namespaces']),
      versionLabels(
        ctx,
        items.map((t) => t.current_version_id),
      ),
    ]);
    return { json: raw, view: table(taskColumns(names, versions), items, 'No tasks.') };
  },
});
