import path from 'node:path';
import { defineCommand } from '../../command.js';
import { CliError, usageError } from '../../errors.js';
import { ExitCode } from '../../exit-codes.js';
import { record } from '../../output/view.js';
import { isServerProcess, readPid, serverCommand, serverFiles } from './files.js';

export default defineCommand({
  path: ['server', 'secrets-rotate-key'],
  summary: 'Re-wrap every agent secret under a new master key (run with the server stopped)',
  description:
    'Each secret keeps its value and data key; only the data keys are wrapped again, in one transaction. With the key file (<data dir>/secrets.key) a new key is made and replaces it; with AGENTCTL_SECRETS_KEY give the new key (base64 of 32 bytes) on standard input with --new-key-stdin, then set the variable to it before the next start. With PostgreSQL, stop every server replica first.',
  options: [
    { flags: '--data-dir <dir>', description: 'Data directory of the server (env AGENTCTL_DATA_DIR; default under the user data dir)' },
    { flags: '--database-url <url>', description: 'PostgreSQL URL instead of embedded PGlite (env DATABASE_URL)' },
    { flags: '--new-key-stdin', description: 'Read the new master key (base64 of 32 bytes) from standard input' },
  ],
  examples: ['agentctl server secrets-rotate-key', 'openssl rand -base64 32 > new.key && agentctl server secrets-rotate-key --new-key-stdin < new.key'],
  handler: async (ctx, _args, options) => {
    const files = serverFiles(options.dataDir, ctx.env, ctx.io.cwd);
    const pid = readPid(files);
    if (pid !== undefined && isServerProcess(pid)) {
      throw new CliError(`A server from ${files.dir} is running (pid ${pid}): stop it first, so no agent starts while the key changes`, {
        exitCode: ExitCode.conflict,
        code: 'already_running',
        next: serverCommand('stop', files, ctx.env),
      });
    }
    const databaseUrl: string | undefined = options.databaseUrl ?? ctx.env.DATABASE_URL;
    const [{ openStore }, keyring, { rotateSecretsKey }] = await Promise.all([
      import('../../../server/store/db.js'),
      import('../../../server/secrets/keyring.js'),
      import('../../../server/secrets/rotate.js'),
    ]);
    let newKey;
    if (options.newKeyStdin) {
      if (ctx.io.stdin.isTTY)
        throw usageError(
          '--new-key-stdin reads the new key from standard input: pipe it in',
          undefined,
          'agentctl server secrets-rotate-key --new-key-stdin < new.key',
        );
      try {
        newKey = keyring.parseMasterKey(await ctx.readStdin(), 'standard input');
      } catch (error) {
        throw usageError((error as Error).message);
      }
    }
    const store = await openStore({ databaseUrl, dataDir: databaseUrl ? undefined : files.database });
    try {
      const result = await rotateSecretsKey(
        store.db,
        { envKey: ctx.env[keyring.SECRETS_KEY_ENV], file: path.join(files.dir, keyring.SECRETS_KEY_FILE) },
        newKey,
      ).catch((error: unknown) => {
        if (error instanceof keyring.MasterKeyError) throw new CliError(error.message, { exitCode: ExitCode.failure, code: 'secrets_key' });
        throw error;
      });
      ctx.success(`Re-wrapped ${result.rewrapped} secret${result.rewrapped === 1 ? '' : 's'} under master key ${result.key_id}`);
      if (!result.key_file) ctx.info(`Set ${keyring.SECRETS_KEY_ENV} to the new key before the next start.`);
      return {
        json: result,
        view: record([
          ['Re-wrapped', result.rewrapped],
          ['Previous key', result.previous_key_id],
          ['Key', result.key_id],
          ['Key file', result.key_file],
        ]),
      };
    } finally {
      await store.close();
    }
  },
});
