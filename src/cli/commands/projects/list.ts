import type { Handler } from '../../command.js';
import { call } from '../../api.js';
import { projectColumns, table } from '../../output/resources.js';

const list: Handler = async (ctx, _args, options) => {
  const { data, raw } = await call(ctx, 'listProjects', { query: { namespace: options.namespace, limit: options.limit, page_number: options.page } });
  return { json: raw, view: table(projectColumns, data.projects, 'No projects.') };
};
export default list;
