import type { Handler } from '../../command.js';
import { call } from '../../api.js';
import { filesystemTable } from './shared.js';

const create: Handler = async (ctx, _args, options) => {
  const body = options.project ? { project_id: options.project as string } : { namespace: (options.namespace as string | undefined) ?? 'default' };
  const { data, raw } = await call(ctx, 'createFilesystem', { body });
  ctx.success(`Created filesystem ${data.id}`);
  return { json: raw, view: filesystemTable([data]) };
};
export default create;
