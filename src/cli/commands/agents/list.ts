import type { Handler } from '../../command.js';
import { call } from '../../api.js';
import { agentColumns, table } from '../../output/resources.js';

const list: Handler = async (ctx, _args, options) => {
  const { data, raw } = await call(ctx, 'listAgents', { query: { namespace: options.namespace, limit: options.limit, page_number: options.page } });
  return { json: raw, view: table(agentColumns, data.agents, 'No agents. Deploy one with: agentctl deploy --agent default/<name> --image <url>') };
};
export default list;
