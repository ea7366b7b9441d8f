import type { Handler } from '../../command.js';
import { call } from '../../api.js';
import { listPaged } from '../../paging.js';
import { filesystemTable } from './shared.js';

const list: Handler = async (ctx, _args, options) => {
  const target = options.project ? { project_id: options.project as string } : { namespace: (options.namespace as string | undefined) ?? 'default' };
  const { items, raw } = await listPaged(ctx, options, 'filesystems', async (page, limit) => {
    const { data, raw } = await call(ctx, 'listFilesystems', { query: { ...target, limit, page_number: page } });
    return { items: data.filesystems, total: data.total, raw };
  });
  return { json: raw, view: filesystemTable(items) };
};
export default list;
