// The built CLI (`npm run build`, then bin/agentctl.js) in a process of its own, as a user runs it.
import path from 'node:path';
import { execa, type ResultPromise } from 'execa';

export const BIN = path.resolve('bin/agentctl.js');

export interface BuiltResult {
  code: number;
  stdout: string;
  stderr: string;
}

export interface BuiltOptions {
  env: Record<string, string | undefined>;
  cwd?: string;
  input?: string;
}

/** Runs `agentctl ARGS` to the end; only the given environment (plus PATH and HOME) reaches it. */
export async function agentctl(args: string[], options: BuiltOptions): Promise<BuiltResult> {
  const result = await spawnAgentctl(args, options);
  return { code: result.exitCode ?? -1, stdout: String(result.stdout), stderr: String(result.stderr) };
}

/** Starts `agentctl ARGS` and hands back the running process (for commands that follow or wait). */
export function spawnAgentctl(args: string[], options: BuiltOptions): ResultPromise<{ reject: false; extendEnv: false; stripFinalNewline: false }> {
  return execa(process.execPath, [BIN, ...args], {
    env: { PATH: process.env.PATH, HOME: process.env.HOME, NO_COLOR: '1', ...options.env },
    extendEnv: false,
    cwd: options.cwd,
    input: options.input ?? '',
    // Output exactly as printed, final newline included.
    stripFinalNewline: false,
    reject: false,
  });
}
