import { createClient, UnreachableError, ApiRequestError } from '../../../client/index.js';
import { defineCommand } from '../../command.js';
import { CliError } from '../../errors.js';
import { ExitCode } from '../../exit-codes.js';
import { record } from '../../output/view.js';
import { isServerProcess, readInfo, readPid, serverCommand, serverFilesInUse } from './files.js';

export default defineCommand({
  path: ['server', 'status'],
  summary: 'Show the background service’s URL, engine and health',
  options: [
    {
      flags: '--data-dir <dir>',
      description: 'Data directory of the server (env AGENTCTL_DATA_DIR; default: the one the profile in use points at, else the default)',
    },
  ],
  examples: ['agentctl server status', 'agentctl server status --json'],
  handler: async (ctx, _args, options) => {
    const files = serverFilesInUse(ctx, options.dataDir);
    const pid = readPid(files);
    const info = readInfo(files);
    if (pid === undefined || !info || !isServerProcess(pid)) {
      throw new CliError(`No server is running from ${files.dir}`, {
        exitCode: ExitCode.notFound,
        code: 'not_running',
        next: serverCommand('start', files, ctx.env, '--detach'),
      });
    }
    let health = 'ok';
    try {
      await createClient({ baseUrl: info.url, retries: 0, timeoutMs: 5000, signal: ctx.signal }).readyz();
    } catch (error) {
      if (!(error instanceof UnreachableError || error instanceof ApiRequestError)) throw error;
      health = error.message;
    }
    const healthy = health === 'ok';
    return {
      json: { ...info, healthy, health },
      view: record([
        ['URL', info.url],
        ['PID', info.pid],
        ['Engine', info.engine],
        ['Health', health, 'status'],
        ['Data', info.data_dir],
        ['Profile', info.profile],
        ['Log', info.log_file],
        ['Started', info.started_at, 'time'],
      ]),
      exitCode: healthy ? ExitCode.ok : ExitCode.unreachable,
    };
  },
});
