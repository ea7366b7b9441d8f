import type { Handler } from '../../command.js';
import { call } from '../../api.js';
import { groupColumns, table } from '../../output/resources.js';

const list: Handler = async (ctx) => {
  const { data, raw } = await call(ctx, 'listGroups');
  return { json: raw, view: table(groupColumns, data.groups, 'No sharing groups. Create one with: agentctl groups create <name>') };
};
export default list;
