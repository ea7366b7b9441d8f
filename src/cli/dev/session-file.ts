// The live `agentctl dev` session of an agent directory, in the CLI's config directory (never in the
// work tree): `tasks create` run in the same directory reads it and creates tasks on the dev branch.
import { createHash } from 'node:crypto';
import { mkdirSync, readFileSync, realpathSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { configDir, type Env } from '../config.js';

export interface DevSession {
  pid: number;
  agent: string;
  branch: string;
  version_id: string;
  base_url: string;
  started_at: string;
}

/** Where the session of the agent directory `dir` is recorded. */
export function devSessionPath(env: Env, dir: string): string {
  let real = dir;
  try {
    real = realpathSync(dir);
  } catch {
    // A directory that is gone has no session; its path still names the file.
  }
  return path.join(configDir(env), 'dev-sessions', `${createHash('sha256').update(real).digest('hex').slice(0, 24)}.json`);
}

export function writeDevSession(env: Env, dir: string, session: DevSession): void {
  const file = devSessionPath(env, dir);
  mkdirSync(path.dirname(file), { recursive: true, mode: 0o700 });
  writeFileSync(`${file}.tmp`, `${JSON.stringify(session, null, 2)}\n`, { mode: 0o600 });
  // Renamed into place: a reader never sees half of it.
  renameSync(`${file}.tmp`, file);
}

export function removeDevSession(env: Env, dir: string, pid: number): void {
  const file = devSessionPath(env, dir);
  const session = readSession(file);
  if (session?.pid === pid) rmSync(file, { force: true });
}

const alive = (pid: number) => {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
};

function readSession(file: string): DevSession | undefined {
  try {
    return JSON.parse(readFileSync(file, 'utf8')) as DevSession;
  } catch {
    return undefined;
  }
}

/** The session of `dir` while its `agentctl dev` runs (against `baseUrl`); undefined otherwise. */
export function liveDevSession(env: Env, dir: string, baseUrl: string): DevSession | undefined {
  const session = readSession(devSessionPath(env, dir));
  if (!session || session.base_url !== baseUrl || !alive(session.pid)) return undefined;
  return session;
}
