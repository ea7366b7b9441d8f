import { existsSync, readdirSync, readFileSync, readlinkSync } from 'node:fs';
import path from 'node:path';
import { execa } from 'execa';
import { afterAll, beforeAll, expect } from 'vitest';
import { tempDir } from '../cli/support.js';
import type { Engine } from '../../src/server/store/db.js';
import { freePort } from './ports.js';
import { createTestDatabase } from './service.js';

/** The built CLI, as a user runs it. */
export const BIN = path.resolve('bin/agentctl.js');
/** A committer for the agent project's git repository (the machine may have none configured). */
export const GIT_ENV = { GIT_AUTHOR_NAME: 'Ada', GIT_AUTHOR_EMAIL: 'ada@example.com', GIT_COMMITTER_NAME: 'Ada', GIT_COMMITTER_EMAIL: 'ada@example.com' };

export interface E2eOptions {
  /** Prefix of the scratch directory under the system's temp directory. */
  scratch: string;
  /** The agent project's directory name under the scratch directory (and the name `agentctl init` gets). */
  project: string;
  /** `agentctl init <project>` before the server starts (the default); `false` leaves the directory to `prepare`. */
  init?: boolean;
  /** Runs after init and before the server starts: the agent's source, a commit, fixture directories. */
  prepare?: (e2e: E2e) => Promise<void> | void;
  /** More environment for every CLI call (read at each call, so it may name what a `beforeAll` set up). */
  env?: () => Record<string, string | undefined>;
  pollIntervalMs?: number;
  /** Prefix of the PostgreSQL database's name. */
  databasePrefix?: string;
  /** More arguments for `agentctl server start`. */
  serverArgs?: string[];
  /** `false` keeps the final newline of what each CLI call prints (for a test of how its output ends). */
  stripFinalNewline?: boolean;
}

/** The built CLI in a process of its own; never rejects (read its exit code). */
const runCli = (args: string[], env: Record<string, string | undefined>, cwd: string, input?: string, stripFinalNewline = true) =>
  execa(process.execPath, [BIN, ...args], { env, extendEnv: true, cwd, reject: false, input, stripFinalNewline });
export type CliRun = ReturnType<typeof runCli>;
export type CliResult = Awaited<CliRun>;

export interface RunOptions {
  cwd?: string;
  input?: string;
}

export interface E2e {
  engine: Engine;
  /** The scratch directory: config, data and the agent project live under it. */
  dir: string;
  projectDir: string;
  dataDir: string;
  /** What `server start --json` printed last (its url and pid). */
  server: { url: string; pid: number };
  env(): Record<string, string | undefined>;
  /** The built CLI with this setup's environment, in the project directory; never rejects (read its exit code). */
  agentctl(args: string[], options?: RunOptions): CliRun;
  /** `agentctl <args> --json`, parsed; throws with its stderr when it exits non-zero. */
  json(args: string[], options?: RunOptions): Promise<any>;
  /** git in the project directory, as GIT_ENV's committer. */
  git(args: string[]): Promise<unknown>;
  /** Starts the server detached (on the same port each time), expecting exit 0. */
  startServer(): Promise<void>;
  /**
   * Stops the server and every process under the scratch directory (its agents): `server stop`,
   * then up to 15 s for them to exit, then SIGKILL by pid. Returns the ones that had to be killed.
   */
  stop(): Promise<number[]>;
  /** What the last `stop` had to kill (read in an `afterAll` registered before `useE2e`, which runs after the teardown). */
  killed: number[];
}

/** The parsed stdout of an `agentctl … --json` call; throws with its stderr when it exited non-zero. */
export function parsedJson(args: string[], result: CliResult): any {
  if (result.exitCode !== 0) throw new Error(`agentctl ${args.join(' ')} exited ${result.exitCode}: ${result.stderr}`);
  return JSON.parse(result.stdout);
}

/** Polls `read` until `done` holds for its value (returned), or throws with the last value after `timeoutMs`. */
export async function until<T>(what: string, read: () => Promise<T>, done: (value: T) => boolean, timeoutMs = 60_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await read();
    if (done(value)) return value;
    if (Date.now() > deadline) throw new Error(`${what}: not reached in ${timeoutMs} ms; last: ${JSON.stringify(value)?.slice(0, 3000)}`);
    await new Promise((r) => setTimeout(r, 200));
  }
}

export const isAlive = (pid: number): boolean => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

/** The processes whose working directory is under `root` (the server and the agents it started there). */
export function processesUnder(root: string): number[] {
  const pids: number[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      if (readlinkSync(`/proc/${entry}/cwd`).startsWith(root) && Number(entry) !== process.pid) pids.push(Number(entry));
    } catch {
      /* gone, or not ours */
    }
  }
  return pids;
}

/**
 * A real `agentctl server start --detach` on a fresh data directory (and a fresh PostgreSQL database
 * on that engine) with an agent project in a git repository, for one `describe` block: set up in
 * `beforeAll`, stopped in `afterAll`. Hooks registered before this call run their `afterAll` after
 * its teardown (vitest runs after-hooks in reverse), so a receiver the env names outlives the server.
 */
export function useE2e(engine: Engine, options: E2eOptions): E2e {
  const scratch = tempDir(`${options.scratch}-`);
  const projectDir = path.join(scratch.dir, options.project);
  const dataDir = path.join(scratch.dir, 'data');
  let databaseUrl: string | undefined;
  let dropDatabase: (() => Promise<void>) | undefined;
  let port = 0;
  const env = () => ({
    AGENTCTL_CONFIG_DIR: path.join(scratch.dir, 'config'),
    AGENTCTL_DATA_DIR: dataDir,
    AGENTCTL_POLL_INTERVAL_MS: String(options.pollIntervalMs ?? 100),
    CI: 'true',
    ...GIT_ENV,
    // Nothing from the developer's own setup may leak in.
    AGENTCTL_API_KEY: undefined,
    AGENTCTL_BASE_URL: undefined,
    AGENTCTL_PROFILE: undefined,
    AGENTCTL_SECRETS_KEY: undefined,
    DATABASE_URL: databaseUrl,
    ...options.env?.(),
  });
  const agentctl = (args: string[], run: RunOptions = {}) => runCli(args, env(), run.cwd ?? projectDir, run.input, options.stripFinalNewline);
  const e2e: E2e = {
    engine,
    dir: scratch.dir,
    projectDir,
    dataDir,
    server: { url: '', pid: 0 },
    killed: [],
    env,
    agentctl,
    json: async (args, run) => parsedJson(args, await agentctl([...args, '--json'], run)),
    git: (args) => execa('git', args, { cwd: projectDir, env: GIT_ENV }),
    async startServer() {
      port ||= await freePort();
      const started = await agentctl(['server', 'start', '--detach', '--port', String(port), ...(options.serverArgs ?? []), '--json']);
      expect(started.exitCode, started.stderr).toBe(0);
      e2e.server = JSON.parse(started.stdout);
    },
    async stop() {
      const pidFile = path.join(dataDir, 'server.pid');
      const pids = new Set(processesUnder(scratch.dir));
      if (existsSync(pidFile)) pids.add(Number(readFileSync(pidFile, 'utf8').trim()));
      await agentctl(['server', 'stop']);
      const deadline = Date.now() + 15_000;
      while ([...pids].some(isAlive) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 100));
      const left = [...pids].filter((pid) => pid > 0 && isAlive(pid));
      for (const pid of left) process.kill(pid, 'SIGKILL');
      e2e.killed = left;
      return left;
    },
  };

  beforeAll(async () => {
    if (engine === 'postgres') {
      const db = await createTestDatabase(process.env.TEST_DATABASE_URL, options.databasePrefix ?? 'agentctl_e2e');
      databaseUrl = db.url;
      dropDatabase = db.drop;
    }
    if (options.init !== false) {
      const init = await agentctl(['init', options.project], { cwd: scratch.dir });
      expect(init.exitCode, init.stderr).toBe(0);
    }
    await options.prepare?.(e2e);
    await e2e.startServer();
  });

  afterAll(async () => {
    await e2e.stop();
    await dropDatabase?.();
    scratch.remove();
  });
  return e2e;
}
