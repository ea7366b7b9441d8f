import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { PassThrough, Readable } from 'node:stream';
import { execa } from 'execa';
import { run } from '../../src/cli/program.js';
import { afterAll, beforeEach } from 'vitest';
import { useService, type TestService } from '../support/service.js';
import type { Engine } from '../../src/server/store/db.js';

export interface CliResult {
  code: number;
  stdout: string;
  stderr: string;
  /** stdout parsed as JSON. */
  json<T = any>(): T;
}

export interface CliOptions {
  env?: Record<string, string | undefined>;
  /** Text for standard input, or a stream (a never-ending one proves nothing waits on it). */
  stdin?: string | NodeJS.ReadableStream;
  /** Pretend stdin, stdout and stderr are terminals. */
  tty?: boolean;
  cwd?: string;
  signal?: AbortSignal;
}

/** A throwaway config directory: tests never touch the real home. */
export function tempDir(prefix = 'agentctl-cli-'): { dir: string; remove: () => void } {
  const dir = mkdtempSync(path.join(os.tmpdir(), prefix));
  return { dir, remove: () => rmSync(dir, { recursive: true, force: true }) };
}

class Capture {
  text = '';
  constructor(readonly isTTY: boolean) {}
  write(chunk: string) {
    this.text += chunk;
    return true;
  }
  get columns() {
    return 120;
  }
  // A terminal's cursor calls (a spinner redraws its line): nothing to move in a capture.
  cursorTo() {
    return true;
  }
  moveCursor() {
    return true;
  }
  clearLine() {
    return true;
  }
}

/** Runs the CLI in-process with captured stdout and stderr, returning the exit code. */
export async function runCli(args: string[], options: CliOptions = {}): Promise<CliResult> {
  const tty = options.tty ?? false;
  const stdout = new Capture(tty);
  const stderr = new Capture(tty);
  const stdin = (typeof options.stdin === 'string' ? Readable.from([options.stdin]) : (options.stdin ?? Readable.from([]))) as NodeJS.ReadableStream & {
    isTTY?: boolean;
  };
  stdin.isTTY = tty;
  const code = await run(args, { stdout, stderr, stdin, env: options.env ?? {}, cwd: options.cwd ?? process.cwd() }, { signal: options.signal });
  return {
    code,
    stdout: stdout.text,
    stderr: stderr.text,
    json: () => JSON.parse(stdout.text),
  };
}

/** An environment pointing the CLI at a test service with its admin key, config in `configDir`. */
export const serviceEnv = (svc: TestService, configDir: string, key = svc.adminKey): Record<string, string> => ({
  AGENTCTL_CONFIG_DIR: configDir,
  AGENTCTL_BASE_URL: svc.url,
  AGENTCTL_API_KEY: key,
  AGENTCTL_RETRIES: '0',
  AGENTCTL_POLL_INTERVAL_MS: '50',
});

/** A standard input that never ends: a command that reads it would hang. */
export const neverEndingStdin = () => new PassThrough();

/** A git work tree with one commit, for deploy. */
export async function gitRepo(dir: string, message = 'first version'): Promise<{ commit: (message: string) => Promise<string>; head: () => Promise<string> }> {
  const git = (...args: string[]) =>
    execa('git', args, {
      cwd: dir,
      env: { GIT_AUTHOR_NAME: 'Ada Lovelace', GIT_AUTHOR_EMAIL: 'ada@example.com', GIT_COMMITTER_NAME: 'Ada Lovelace', GIT_COMMITTER_EMAIL: 'ada@example.com' },
    });
  await git('init', '-q', '-b', 'main');
  const commit = async (msg: string) => {
    await git('commit', '-q', '--allow-empty', '-m', msg);
    return (await git('rev-parse', 'HEAD')).stdout.trim();
  };
  await commit(message);
  return { commit, head: async () => (await git('rev-parse', 'HEAD')).stdout.trim() };
}

export interface CliService {
  svc: TestService;
  /** A scratch directory, new for each test. */
  scratch: { dir: string; remove: () => void };
  /** Environment pointing the CLI at `svc` with its admin key and a config directory in `scratch`. */
  env: Record<string, string>;
}

/**
 * The file's service (`useService`: one per file, reset before each test) and a fresh scratch
 * directory and environment per test: the setup every in-process CLI test file shares. The three
 * are the same objects throughout, refilled before each test, so a file can destructure them once.
 */
export function useCliService(engine: Engine, configDir: (scratchDir: string) => string = (dir) => dir): CliService {
  const svc = useService(engine);
  const scratch: CliService['scratch'] = { dir: '', remove: () => {} };
  const env: CliService['env'] = {};
  afterAll(() => scratch.remove());
  beforeEach(() => {
    scratch.remove();
    Object.assign(scratch, tempDir());
    for (const name of Object.keys(env)) delete env[name];
    Object.assign(env, serviceEnv(svc, configDir(scratch.dir)));
  });
  return { svc, scratch, env };
}
