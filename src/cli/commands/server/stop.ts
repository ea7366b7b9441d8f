import { defineCommand } from '../../command.js';
import { CliError } from '../../errors.js';
import { ExitCode } from '../../exit-codes.js';
import { record } from '../../output/view.js';
import { isServerProcess, readInfo, readPid, removeServerFiles, serverCommand, serverFilesInUse } from './files.js';

export default defineCommand({
  path: ['server', 'stop'],
  summary: 'Stop the background service started with --detach (by its pid file)',
  options: [
    {
      flags: '--data-dir <dir>',
      description: 'Data directory of the server (env AGENTCTL_DATA_DIR; default: the one the profile in use points at, else the default)',
    },
    { flags: '--timeout <seconds>', description: 'How long to wait for it to exit', integer: true, default: 20 },
  ],
  examples: ['agentctl server stop', 'agentctl server stop --data-dir ./data'],
  handler: async (ctx, _args, options) => {
    const files = serverFilesInUse(ctx, options.dataDir);
    const pid = readPid(files);
    if (pid === undefined || !isServerProcess(pid)) {
      if (pid !== undefined) removeServerFiles(files, pid);
      throw new CliError(`No server is running from ${files.dir}${pid !== undefined ? ` (removed the stale pid file of ${pid})` : ''}`, {
        exitCode: ExitCode.notFound,
        code: 'not_running',
        next: serverCommand('start', files, ctx.env, '--detach'),
      });
    }
    const info = readInfo(files);
    process.kill(pid, 'SIGTERM');
    const spinner = await ctx.spinner(`Stopping the server of ${files.dir} (pid ${pid})`);
    const deadline = Date.now() + options.timeout * 1000;
    while (isServerProcess(pid)) {
      if (Date.now() > deadline) {
        process.kill(pid, 'SIGKILL');
        spinner.fail(`The server did not stop within ${options.timeout} s; killed it`);
        removeServerFiles(files, pid);
        return {
          json: { pid, url: info?.url ?? null, data_dir: files.dir, stopped: true, killed: true },
          view: record([
            ['PID', pid],
            ['Data', files.dir],
            ['Stopped', 'killed'],
          ]),
          exitCode: ExitCode.failure,
        };
      }
      await ctx.sleep(100);
    }
    removeServerFiles(files, pid);
    spinner.succeed(`Stopped the server of ${files.dir} (pid ${pid})`);
    return {
      json: { pid, url: info?.url ?? null, data_dir: files.dir, stopped: true, killed: false },
      view: record([
        ['PID', pid],
        ['URL', info?.url],
        ['Data', files.dir],
        ['Stopped', 'yes'],
      ]),
    };
  },
});
