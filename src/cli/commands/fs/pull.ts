import path from 'node:path';
import type { Handler } from '../../command.js';
import { usageError } from '../../errors.js';
import { runSync, syncTransport, syncView } from './shared.js';
import { agentctl, placeholder } from '../../shell.js';

/** `agentctl fs pull DIR --fs ID`: makes DIR equal to the filesystem (created if missing). */
const pull: Handler = async (ctx, [dirArg], options) => {
  const dir = path.resolve(ctx.io.cwd, dirArg!);
  if (!options.fs) throw usageError('Missing --fs', 'Name the filesystem (fs_ id); agentctl fs list shows them.', agentctl('fs', 'pull', dirArg, '--fs', placeholder('fs_id')));
  const fsId = options.fs as string;
  const transport = syncTransport(ctx);
  const { syncDown } = await import('../../../sync/index.js');
  const result = await runSync(ctx, { fsId, dir: dirArg!, verb: 'pull' }, (onProgress) => syncDown(transport, fsId, dir, { onProgress, signal: ctx.signal }));
  ctx.success(result.bytes ? `Pulled ${fsId} into ${dirArg}: ${result.added} added, ${result.modified} modified, ${result.deleted} deleted` : `${dirArg} already matches ${fsId}: nothing downloaded`);
  return { json: result, view: syncView('pull', fsId, dirArg!, result) };
};
export default pull;
