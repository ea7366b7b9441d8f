import type { Handler } from '../../command.js';
import { call } from '../../api.js';
import { usageError } from '../../errors.js';
import { table, taskColumns } from '../../output/resources.js';
import { resolveVersionId } from '../../refs.js';
import { listPaged } from '../../paging.js';

const list: Handler = async (ctx, _args, options) => {
  const agent: string | undefined = options.agent;
  const branch: string | undefined = options.branch;
  if (branch && !branch.startsWith('br_') && !agent) throw usageError('--branch by name needs --agent namespace/name (or pass a br_ id)');
  const versionId = options.onVersion ? await resolveVersionId(await ctx.client(), options.onVersion, agent, '--on-version') : undefined;
  const { items, raw } = await listPaged(ctx, options, 'tasks', async (page, limit) => {
    const { data, raw } = await call(ctx, 'listTasks', {
      query: {
      agent_id: agent?.startsWith('agt_') ? agent : undefined,
      agent: agent && !agent.startsWith('agt_') ? agent : undefined,
      branch: branch && !branch.startsWith('br_') ? branch : undefined,
      branch_id: branch?.startsWith('br_') ? branch : undefined,
      version_id: versionId,
      status: options.status,
      limit,
      page_number: page,
      },
    });
    // total is always there: only include_total=false leaves it out.
    return { items: data.tasks, total: data.total ?? data.tasks.length, raw };
  });
  return { json: raw, view: table(taskColumns, items, 'No tasks.') };
};
export default list;
