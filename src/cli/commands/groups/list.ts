import type { Handler } from '../../command.js';
import { call } from '../../api.js';
import { groupColumns, table } from '../../output/resources.js';
import { listPaged } from '../../paging.js';

const list: Handler = async (ctx, _args, options) => {
  const { items, raw } = await listPaged(ctx, options, 'groups', async (page, limit) => {
    const { data, raw } = await call(ctx, 'listGroups', { query: { limit, page_number: page } });
    return { items: data.groups, total: data.total, raw };
  });
  return { json: raw, view: table(groupColumns, items, 'No sharing groups. Create one with: agentctl groups create <name>') };
};
export default list;
