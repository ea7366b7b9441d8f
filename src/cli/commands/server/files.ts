import { existsSync, readFileSync, rmSync } from 'node:fs';
import path from 'node:path';
import { dataDir, LOCAL_PROFILE, type Env } from '../../config.js';
import type { CommandContext } from '../../context.js';
import { shellCommand } from '../../shell.js';

/** What a running server writes next to its data: where it listens and how to stop it. */
export interface ServerInfo {
  pid: number;
  url: string;
  engine: 'pglite' | 'postgres';
  data_dir: string;
  log_file: string | null;
  started_at: string;
  /** True when this start created the org-admin key and saved it into `profile`. */
  bootstrap_key_saved: boolean;
  /** The profile that points at this server (its own: see serverProfileName), when one does. */
  profile?: string | null;
  /** Where `GET /metrics` answers without a key (`--metrics-port`). */
  metrics_url?: string | null;
}

export interface ServerFiles {
  dir: string;
  /** PGlite's own directory. */
  database: string;
  pid: string;
  info: string;
  log: string;
}

export function serverFiles(option: string | undefined, env: Env, cwd: string): ServerFiles {
  const dir = option ? path.resolve(cwd, option) : dataDir(env);
  return { dir, database: path.join(dir, 'pglite'), pid: path.join(dir, 'server.pid'), info: path.join(dir, 'server.json'), log: path.join(dir, 'server.log') };
}

/**
 * The server `server stop|status` act on: --data-dir, else AGENTCTL_DATA_DIR, else the data directory
 * of the server the profile in use points at (saved by `server start`) while one runs there, else the default.
 */
export function serverFilesInUse(ctx: CommandContext, option: string | undefined): ServerFiles {
  if (option || ctx.env.AGENTCTL_DATA_DIR) return serverFiles(option, ctx.env, ctx.io.cwd);
  const saved = ctx.config().profile(ctx.credentials().profile)?.data_dir;
  if (saved) {
    const files = serverFiles(saved, ctx.env, ctx.io.cwd);
    const pid = readPid(files);
    if (pid !== undefined && isServerProcess(pid)) return files;
  }
  return serverFiles(undefined, ctx.env, ctx.io.cwd);
}

/** `agentctl server VERB`, with the `--data-dir` it needs when the directory is not the default one. */
export function serverCommand(verb: 'start' | 'stop' | 'status', files: ServerFiles, env: Env, ...extra: string[]): string {
  return shellCommand('agentctl', 'server', verb, ...extra, ...(files.dir === dataDir(env) ? [] : ['--data-dir', files.dir]));
}

export function readInfo(files: ServerFiles): ServerInfo | undefined {
  if (!existsSync(files.info)) return undefined;
  try {
    return JSON.parse(readFileSync(files.info, 'utf8')) as ServerInfo;
  } catch {
    return undefined;
  }
}

export function readPid(files: ServerFiles): number | undefined {
  if (!existsSync(files.pid)) return undefined;
  const pid = Number(readFileSync(files.pid, 'utf8').trim());
  return Number.isInteger(pid) && pid > 0 ? pid : undefined;
}

/** Alive, and (where /proc tells) an agentctl server rather than a process that reused the pid. */
export function isServerProcess(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EPERM') return false;
  }
  const cmdline = `/proc/${pid}/cmdline`;
  if (!existsSync(cmdline)) return true;
  const args = readFileSync(cmdline, 'utf8').split('\0');
  return args.includes('server') && args.includes('start');
}

export function removeServerFiles(files: ServerFiles, pid?: number): void {
  // Only our own files: a newer server may already have replaced them.
  if (pid !== undefined && readPid(files) !== pid) return;
  rmSync(files.pid, { force: true });
  rmSync(files.info, { force: true });
}

/**
 * The profile of the server with this data directory: `local` for the default directory, else
 * `local-<directory name>`, so a second server never takes the first one's key.
 */
export function serverProfileName(files: ServerFiles, env: Env): string {
  if (files.dir === dataDir(env)) return LOCAL_PROFILE;
  const name = path
    .basename(files.dir)
    .toLowerCase()
    .replace(/[^a-z0-9_-]+/g, '-')
    .replace(/^-+|-+$/g, '');
  return `${LOCAL_PROFILE}-${name || 'server'}`;
}
