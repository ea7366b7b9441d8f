import path from 'node:path';
import { defineCommand } from '../../command.js';
import { usageError } from '../../errors.js';
import { runSync, syncTransport, syncView } from './shared.js';
import { agentctl, placeholder } from '../../shell.js';

/** `agentctl fs pull DIR --fs ID`: makes DIR equal to the filesystem (created if missing). */
export default defineCommand({
  path: ['fs', 'pull'],
  summary: 'Make a directory equal to a filesystem (created if missing; files the filesystem lacks are removed)',
  args: [{ name: 'dir', description: 'Directory to write', required: true }],
  options: [{ flags: '--fs <id>', description: 'Filesystem (fs_ id)' }],
  examples: ['agentctl fs pull ./workspace --fs fs_01J...', 'agentctl fs pull ./workspace --fs fs_01J... --json'],
  handler: async (ctx, [dirArg], options) => {
    const dir = path.resolve(ctx.io.cwd, dirArg!);
    if (!options.fs)
      throw usageError(
        'Missing --fs',
        'Name the filesystem (fs_ id); agentctl fs list shows them.',
        agentctl('fs', 'pull', dirArg, '--fs', placeholder('fs_id')),
      );
    const fsId = options.fs as string;
    const transport = syncTransport(ctx);
    const { syncDown } = await import('../../../sync/index.js');
    const result = await runSync(ctx, { fsId, dir: dirArg!, verb: 'pull' }, (onProgress) => syncDown(transport, fsId, dir, { onProgress, signal: ctx.signal }));
    ctx.success(
      result.bytes
        ? `Pulled ${fsId} into ${dirArg}: ${result.added} added, ${result.modified} modified, ${result.deleted} deleted`
        : `${dirArg} already matches ${fsId}: nothing downloaded`,
    );
    return { json: result, view: syncView('pull', fsId, dirArg!, result) };
  },
});
