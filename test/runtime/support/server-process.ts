// The built CLI's `agentctl server start` as a child process of the test (foreground, local
// runtime), for the tests that stop or kill the real server: by SIGTERM, SIGINT or SIGKILL.
import { spawn, type ChildProcess } from 'node:child_process';
import { cpSync, existsSync, readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { execa } from 'execa';
import { FIXTURE_AGENTS, waitFor } from './agents.js';

const BIN = resolve('bin/agentctl.js');
const GIT_ENV = { GIT_AUTHOR_NAME: 'Ada', GIT_AUTHOR_EMAIL: 'ada@example.com', GIT_COMMITTER_NAME: 'Ada', GIT_COMMITTER_EMAIL: 'ada@example.com' };

export interface ServerProcess {
  child: ChildProcess;
  pid: number;
  url: string;
  /** Resolves with how it ended: its exit code, or the signal that killed it. */
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  /** What it wrote on stderr so far. */
  stderr(): string;
}

/** Where the CLI keeps its profiles, and the server its data; `databaseUrl` for PostgreSQL. */
export interface ServerPlace {
  configDir: string;
  dataDir: string;
  databaseUrl?: string;
}

export function cliEnv(place: ServerPlace): NodeJS.ProcessEnv {
  return {
    ...process.env,
    ...GIT_ENV,
    AGENTCTL_CONFIG_DIR: place.configDir,
    AGENTCTL_DATA_DIR: place.dataDir,
    AGENTCTL_POLL_INTERVAL_MS: '100',
    CI: 'true',
    AGENTCTL_API_KEY: '',
    AGENTCTL_BASE_URL: '',
    AGENTCTL_PROFILE: '',
    DATABASE_URL: place.databaseUrl ?? '',
  };
}

/** `agentctl server start --port 0` in the foreground; resolves once it wrote its info file. */
export async function startServerProcess(place: ServerPlace, extraEnv: Record<string, string> = {}): Promise<ServerProcess> {
  const child = spawn(process.execPath, [BIN, 'server', 'start', '--port', '0', '--log-level', 'warn'], {
    env: { ...cliEnv(place), ...extraEnv },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let stderr = '';
  child.stderr!.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((done) => child.once('exit', (code, signal) => done({ code, signal })));
  let ended = false;
  void exited.then(() => (ended = true));
  const info = join(place.dataDir, 'server.json');
  const url = await waitFor(
    'the server to listen',
    () => {
      if (ended) throw new Error(`agentctl server start exited before listening:\n${stderr}`);
      if (!existsSync(info)) return null;
      try {
        const parsed = JSON.parse(readFileSync(info, 'utf8')) as { pid: number; url: string };
        return parsed.pid === child.pid ? parsed.url : null;
      } catch {
        return null; // being written
      }
    },
    120_000,
  );
  return { child, pid: child.pid!, url, exited, stderr: () => stderr };
}

/** Runs the built CLI against the server of `place` (its current profile). */
export function agentctl(place: ServerPlace, args: string[], cwd?: string) {
  return execa(process.execPath, [BIN, ...args], { env: cliEnv(place), extendEnv: false, cwd, reject: false });
}

/** The org-admin key `server start` saved in the current profile on a fresh database. */
export function savedKey(place: ServerPlace): string {
  const config = JSON.parse(readFileSync(join(place.configDir, 'config.json'), 'utf8')) as {
    current_profile: string;
    profiles: Record<string, { api_key: string }>;
  };
  return config.profiles[config.current_profile]!.api_key;
}

/**
 * `agentctl deploy` of a fixture agent (test/fixtures/agents) from a git repository made of a copy
 * of it: its tree is uploaded and the local runtime runs it. Resolves with the ACTIVE version.
 */
export async function deployFixture(place: ServerPlace, fixture: string, repoDir: string): Promise<{ id: string }> {
  cpSync(join(FIXTURE_AGENTS, fixture), repoDir, { recursive: true });
  for (const args of [
    ['init', '-q', '-b', 'main'],
    ['add', '.'],
    ['commit', '-q', '-m', fixture],
  ])
    await execa('git', args, { cwd: repoDir, env: GIT_ENV });
  const deployed = await agentctl(place, ['deploy', '--json'], repoDir);
  if (deployed.exitCode !== 0) throw new Error(`agentctl deploy exited ${deployed.exitCode}: ${deployed.stderr}`);
  const version = JSON.parse(deployed.stdout) as { id: string; status: string };
  if (version.status !== 'ACTIVE') throw new Error(`the version is ${version.status}: ${deployed.stdout}`);
  return version;
}

/** A JSON request with the key. */
export async function api(url: string, key: string, method: string, path: string, body?: unknown): Promise<{ status: number; body: any }> {
  const response = await fetch(url + path, {
    method,
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  return { status: response.status, body: await response.json() };
}

/** The pid the fixture agent wrote under its replica's data root once registered (0 when none yet). */
export function agentPid(place: ServerPlace, versionId: string, replica = 0): number {
  const file = join(place.dataDir, 'runtime', 'data', versionId, String(replica), 'pid');
  return existsSync(file) ? Number(readFileSync(file, 'utf8')) : 0;
}
