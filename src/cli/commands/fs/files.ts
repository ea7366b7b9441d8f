import type { Handler } from '../../command.js';
import { call } from '../../api.js';
import { table } from '../../output/view.js';
import { manifestColumns } from './shared.js';

const files: Handler = async (ctx, [id]) => {
  const { data, raw } = await call(ctx, 'listFilesystemFiles', { params: { filesystem_id: id! } });
  return { json: raw, view: table(manifestColumns, data.files, 'The filesystem is empty.') };
};
export default files;
