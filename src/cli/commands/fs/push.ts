import path from 'node:path';
import { stat } from 'node:fs/promises';
import { defineCommand } from '../../command.js';
import { usageError } from '../../errors.js';
import { runSync, syncTransport, syncView } from './shared.js';
import { agentctl, placeholder } from '../../shell.js';

/** `agentctl fs push DIR --fs ID`: uploads DIR if it differs from the last synced tree, conditional on that base. */
export default defineCommand({
  path: ['fs', 'push'],
  summary: 'Upload a directory into a filesystem if it changed; refused (exit 5) when the filesystem changed since the last sync',
  description: 'Leaves out .git/, node_modules/ and what .agentctlignore names. Only an upload based on the filesystem’s current content is accepted.',
  args: [{ name: 'dir', description: 'Directory to upload', required: true }],
  options: [
    { flags: '--fs <id>', description: 'Filesystem (fs_ id)' },
    { flags: '--force', description: 'Replace the remote content even if it changed since the last sync' },
  ],
  examples: ['agentctl fs push ./workspace --fs fs_01J...', 'agentctl fs push . --fs fs_01J... --json'],
  handler: async (ctx, [dirArg], options) => {
    const dir = path.resolve(ctx.io.cwd, dirArg!);
    const st = await stat(dir).catch(() => undefined);
    if (!st?.isDirectory()) throw usageError(`${dirArg} is not a directory`);
    if (!options.fs)
      throw usageError(
        'Missing --fs',
        'Name the filesystem (fs_ id); agentctl fs list shows them.',
        agentctl('fs', 'push', dirArg, '--fs', placeholder('fs_id')),
      );
    const fsId = options.fs as string;
    const transport = syncTransport(ctx);
    const { syncUp } = await import('../../../sync/index.js');
    const result = await runSync(ctx, { fsId, dir: dirArg!, verb: 'push' }, (onProgress) =>
      syncUp(transport, fsId, dir, { onProgress, force: Boolean(options.force), signal: ctx.signal }),
    );
    ctx.success(
      result.bytes
        ? `Pushed ${dirArg} to ${fsId}: ${result.added} added, ${result.modified} modified, ${result.deleted} deleted`
        : `${fsId} already matches ${dirArg}: nothing sent`,
    );
    return { json: result, view: syncView('push', fsId, dirArg!, result) };
  },
});
