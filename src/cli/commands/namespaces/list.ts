import type { Handler } from '../../command.js';
import { call } from '../../api.js';
import { namespaceColumns, table } from '../../output/resources.js';

const list: Handler = async (ctx, _args, options) => {
  const { data, raw } = await call(ctx, 'listNamespaces', { query: { limit: options.limit, page_number: options.page } });
  return { json: raw, view: table(namespaceColumns, data.namespaces, 'No namespaces.') };
};
export default list;
