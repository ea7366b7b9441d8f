import type { Handler } from '../../command.js';
import { call } from '../../api.js';
import { filesystemTable } from './shared.js';

const list: Handler = async (ctx, _args, options) => {
  const target = options.project ? { project_id: options.project as string } : { namespace: (options.namespace as string | undefined) ?? 'default' };
  const { data, raw } = await call(ctx, 'listFilesystems', { query: { ...target, limit: options.limit, page_number: options.page } });
  return { json: raw, view: filesystemTable(data.filesystems) };
};
export default list;
