import { spawn } from 'node:child_process';
import { createServer } from 'node:net';
import path from 'node:path';
import { closeSync, existsSync, mkdirSync, openSync, readFileSync, writeFileSync } from 'node:fs';
import { defineCommand, type Outcome } from '../../command.js';
import type { CommandContext } from '../../context.js';
import { shellCommand, shellQuote } from '../../shell.js';
import { CliError, InterruptedError, usageError } from '../../errors.js';
import { ExitCode } from '../../exit-codes.js';
import { record } from '../../output/view.js';
import { SECRETS_KEY_FILE } from '../../../server/secrets/keyring.js';
import { DEFAULT_HOST, DEFAULT_PORT, DEFAULT_RUNTIME, RUNTIME_NAMES } from '../../../contract/enums.js';
import {
  isServerProcess,
  readInfo,
  readPid,
  removeServerFiles,
  serverCommand,
  serverFiles,
  serverProfileName,
  type ServerFiles,
  type ServerInfo,
} from './files.js';

/** Set in the environment of the background child so it neither prints the key nor re-detaches. */
const DETACHED_ENV = 'AGENTCTL_SERVER_DETACHED';

export default defineCommand({
  path: ['server', 'start'],
  summary: 'Start the service (foreground, or --detach with a pid file and a log file)',
  description:
    'Uses embedded PGlite under the data directory, or PostgreSQL when --database-url / DATABASE_URL is set. On a fresh database the bootstrap org-admin key is saved into the server’s own profile: "local" for the default data directory, "local-<dir name>" for another (made current when there is none).',
  options: [
    { flags: '--host <host>', description: 'Interface to listen on', default: DEFAULT_HOST },
    { flags: '--port <port>', description: 'Port to listen on (0 picks a free one)', integer: true, default: DEFAULT_PORT },
    { flags: '--data-dir <dir>', description: 'Data directory (env AGENTCTL_DATA_DIR; default under the user data dir)' },
    { flags: '--database-url <url>', description: 'PostgreSQL URL instead of embedded PGlite (env DATABASE_URL)' },
    { flags: '--detach', description: 'Run in the background; stop it with agentctl server stop' },
    {
      flags: '--runtime <name>',
      description: `What runs deployed versions: local child processes, kubernetes, or none (env AGENTCTL_RUNTIME; default ${DEFAULT_RUNTIME})`,
      choices: RUNTIME_NAMES,
    },
    {
      flags: '--log-level <level>',
      description: 'Request log: one JSON line per request on stderr (readable on a terminal)',
      choices: ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'],
      default: 'info',
    },
    {
      flags: '--metrics-port <port>',
      description: 'Also serve GET /metrics without a key on this port (on the main port it needs an org-admin key)',
      integer: true,
    },
  ],
  examples: [
    'agentctl server start',
    'agentctl server start --detach --port 7420',
    'DATABASE_URL=postgres://localhost/agents agentctl server start --host 0.0.0.0',
    'agentctl server start --runtime none',
  ],
  handler: async (ctx, _args, options) => {
    const files = serverFiles(options.dataDir, ctx.env, ctx.io.cwd);
    const running = readPid(files);
    if (running !== undefined && running !== process.pid && isServerProcess(running)) {
      throw new CliError(`A server from ${files.dir} is already running (pid ${running}${readInfo(files) ? `, ${readInfo(files)!.url}` : ''})`, {
        exitCode: ExitCode.conflict,
        code: 'already_running',
        next: serverCommand('stop', files, ctx.env),
      });
    }
    // Before anything is created (data directory, database, the one-time key): a taken port ends here.
    if (!ctx.env[DETACHED_ENV]) await ensurePortFree(options.host, options.port, serverCommand('start', files, ctx.env, '--port', '0'));
    mkdirSync(files.dir, { recursive: true, mode: 0o700 });
    const databaseUrl: string | undefined = options.databaseUrl ?? ctx.env.DATABASE_URL;
    if (options.detach && !ctx.env[DETACHED_ENV]) return detach(ctx, files, options);
    return foreground(ctx, files, {
      host: options.host,
      port: options.port,
      databaseUrl,
      runtime: options.runtime ?? ctx.env.AGENTCTL_RUNTIME,
      logLevel: options.logLevel,
      metricsPort: options.metricsPort,
    });
  },
});

async function foreground(
  ctx: CommandContext,
  files: ServerFiles,
  options: { host: string; port: number; databaseUrl?: string; runtime?: string; logLevel: string; metricsPort?: number },
): Promise<Outcome> {
  const detached = Boolean(ctx.env[DETACHED_ENV]);
  const [{ startServer, runtimeName }, { readableLogStream }] = await Promise.all([import('../../../server/main.js'), import('../../../server/log-format.js')]);
  let runtime;
  try {
    runtime = runtimeName(options.runtime);
  } catch (error) {
    throw usageError((error as Error).message);
  }
  const level = options.logLevel.toLowerCase();
  // JSON lines on stderr (the log file when detached); readable lines on a terminal.
  const logger = level === 'silent' ? false : { level, stream: ctx.io.stderr.isTTY ? readableLogStream(ctx.io.stderr) : ctx.io.stderr };
  const server = await startServer({
    host: options.host,
    port: options.port,
    dataDir: options.databaseUrl ? undefined : files.database,
    databaseUrl: options.databaseUrl,
    runtime,
    blobDir: path.join(files.dir, 'blobs'),
    runtimeOptions: { dataDir: files.dir },
    logger,
    metricsPort: options.metricsPort,
    secretsKeyFile: path.join(files.dir, SECRETS_KEY_FILE),
  }).catch((error: unknown) => {
    // The master key of agent secrets is missing or wrong: a sentence that says which and what to do, no stack.
    if ((error as Error)?.name === 'MasterKeyError') throw new CliError((error as Error).message, { exitCode: ExitCode.failure, code: 'secrets_key' });
    throw portInUse(error, serverCommand('start', files, ctx.env, '--port', '0')) ?? error;
  });
  const store = ctx.config();
  let saved = false;
  let profile: string | null = serverProfileName(files, ctx.env);
  if (server.bootstrap.secret) {
    const existing = store.profile(profile);
    // A key for another server (a wiped directory served elsewhere, or a namesake directory) is kept: this one gets a profile of its own.
    if (existing?.api_key && existing.base_url !== server.url) profile = `${profile}-${new URL(server.url).port}`;
    await store.updateProfile(profile, { base_url: server.url, api_key: server.bootstrap.secret, data_dir: files.dir });
    if (!store.currentProfile) await store.setCurrentProfile(profile);
    saved = true;
  } else if (store.profile(profile)) {
    // Same database, maybe another port: keep its profile pointing at this server.
    await store.updateProfile(profile, { base_url: server.url, data_dir: files.dir });
  } else profile = null;
  const info: ServerInfo = {
    pid: process.pid,
    url: server.url,
    engine: server.engine,
    data_dir: files.dir,
    log_file: detached ? files.log : null,
    started_at: new Date().toISOString(),
    bootstrap_key_saved: saved,
    profile,
    metrics_url: server.metricsUrl ?? null,
  };
  writeFileSync(files.pid, `${process.pid}\n`);
  writeFileSync(files.info, `${JSON.stringify(info, null, 2)}\n`);
  ctx.io.stderr.write(
    `agentctl server listening on ${server.url} (${server.engine}${server.engine === 'pglite' ? `, data in ${files.database}` : ''}; runtime ${server.runtime})\n`,
  );
  if (server.metricsUrl) ctx.io.stderr.write(`Metrics (no key needed) at ${server.metricsUrl}/metrics\n`);
  if (saved) {
    ctx.io.stderr.write(
      `Created the org-admin key and saved it in profile "${profile}"${store.currentProfile === profile ? ' (the current profile)' : `: use it with --profile ${shellQuote(profile!)} or ${shellCommand('agentctl', 'config', 'use', profile)}`} (config: ${store.path}).\n`,
    );
    if (!detached) {
      ctx.io.stderr.write('It is shown once, below; store it if you need it elsewhere.\n');
      ctx.io.stdout.write(`${server.bootstrap.secret}\n`);
    }
  }
  ctx.io.stderr.write('Press Ctrl-C to stop.\n');
  await new Promise<void>((resolve) => {
    if (ctx.signal.aborted) resolve();
    ctx.signal.addEventListener('abort', () => resolve(), { once: true });
  });
  ctx.io.stderr.write('Stopping the server…\n');
  await server.close();
  removeServerFiles(files, process.pid);
  // A stop asked for (`server stop` or a supervisor's SIGTERM, Ctrl-C's SIGINT) that closed agents
  // and connections is a success: a second signal or a stuck close ends it with 130/143 (main.ts).
  return { exitCode: ExitCode.ok };
}

// biome-ignore lint/suspicious/noExplicitAny: commander's parsed options are untyped
async function detach(ctx: CommandContext, files: ServerFiles, options: Record<string, any>): Promise<Outcome> {
  const entry = process.argv[1];
  if (!entry) throw new CliError('Cannot find the agentctl entry script to run in the background');
  const args = [entry, 'server', 'start', '--host', String(options.host), '--port', String(options.port), '--data-dir', files.dir];
  if (options.databaseUrl) args.push('--database-url', options.databaseUrl);
  if (options.runtime) args.push('--runtime', options.runtime);
  args.push('--log-level', String(options.logLevel));
  if (options.metricsPort !== undefined) args.push('--metrics-port', String(options.metricsPort));
  if (ctx.globals.profile) args.push('--profile', ctx.globals.profile);
  const log = openSync(files.log, 'a', 0o600);
  const child = spawn(process.execPath, args, {
    detached: true,
    stdio: ['ignore', log, log],
    env: { ...ctx.env, [DETACHED_ENV]: '1' } as NodeJS.ProcessEnv,
    cwd: ctx.io.cwd,
  });
  closeSync(log);
  let exited: number | null | undefined;
  child.once('exit', (code) => (exited = code));
  const spinner = await ctx.spinner(`Starting the server in the background (log: ${files.log})`);
  const deadline = Date.now() + Number(ctx.env.AGENTCTL_SERVER_START_TIMEOUT_MS ?? 120_000);
  try {
    for (;;) {
      const info = readInfo(files);
      if (info && info.pid === child.pid) {
        child.unref();
        spinner.succeed(`Server running at ${info.url} (pid ${info.pid}, ${info.engine})`);
        const stop = serverCommand('stop', files, ctx.env);
        if (info.bootstrap_key_saved)
          ctx.info(
            `The org-admin key was saved in profile "${info.profile}" (use it with --profile ${shellQuote(String(info.profile))}). Stop the server with: ${stop}`,
          );
        else ctx.info(`Stop the server with: ${stop}`);
        return {
          json: info,
          view: record([
            ['URL', info.url],
            ['PID', info.pid],
            ['Engine', info.engine],
            ['Data', info.data_dir],
            ['Profile', info.profile],
            ['Log', info.log_file],
          ]),
        };
      }
      if (exited !== undefined || Date.now() > deadline) {
        if (exited === undefined) child.kill('SIGTERM');
        spinner.fail('The server did not start');
        const tail = existsSync(files.log) ? readFileSync(files.log, 'utf8').trim().split('\n').slice(-5).join('\n') : '';
        throw new CliError(
          `The background server ${exited === undefined ? 'did not start in time' : `exited with code ${exited}`}${tail ? `:\n${tail}` : ''}`,
          {
            hint: `Its log is ${files.log}.`,
            next: 'agentctl server start   (in the foreground, to see the error)',
          },
        );
      }
      await ctx.sleep(100);
    }
  } catch (error) {
    if (error instanceof InterruptedError && exited === undefined) child.kill('SIGTERM');
    throw error;
  }
}

/** Refuses a port another process listens on (exit 5), by binding it for a moment; port 0 is always free. */
async function ensurePortFree(host: string, port: number, next: string): Promise<void> {
  if (port === 0) return;
  const probe = createServer();
  const error = await new Promise<NodeJS.ErrnoException | undefined>((resolve) => {
    probe.once('error', resolve);
    probe.listen({ host, port, exclusive: true }, () => probe.close(() => resolve(undefined)));
  });
  const taken = error && portInUse(error, next);
  if (taken) throw taken;
}

/** The CLI's error for a port that is taken (the main port or --metrics-port); undefined for any other error. */
function portInUse(error: unknown, next: string): CliError | undefined {
  const e = error as NodeJS.ErrnoException & { address?: string; port?: number };
  if (e?.code !== 'EADDRINUSE') return undefined;
  const where = e.port !== undefined ? `${e.address ?? ''}:${e.port}` : '';
  return new CliError(`Port ${where || 'the server needs'} is in use by another process`, {
    exitCode: ExitCode.conflict,
    code: 'port_in_use',
    hint: 'The server did not start and created no key. Stop what listens there, or pick another port (--port 0 picks a free one).',
    next,
  });
}
