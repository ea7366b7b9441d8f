import { ExitCode } from './exit-codes.js';
import { shellCommand } from './shell.js';

export interface CliErrorOptions {
  exitCode?: ExitCode;
  /** snake_case, like the server's codes. */
  code?: string;
  hint?: string;
  /** The next command to try. */
  next?: string;
  /** What `--json` still prints on stdout although the command failed (the record it got as far as). */
  json?: unknown;
}

/** A failure the CLI itself detects (bad flags, a needed --yes, missing credentials). */
export class CliError extends Error {
  readonly name = 'CliError';
  readonly exitCode: ExitCode;
  readonly code: string;
  readonly hint?: string;
  readonly next?: string;
  readonly json?: unknown;
  constructor(message: string, options: CliErrorOptions = {}) {
    super(message);
    this.exitCode = options.exitCode ?? ExitCode.failure;
    this.code = options.code ?? 'cli_error';
    this.hint = options.hint;
    this.next = options.next;
    this.json = options.json;
  }
}

/** A missing or wrong flag: exit 2. */
export const usageError = (message: string, hint?: string, next?: string) => new CliError(message, { exitCode: ExitCode.usage, code: 'usage', hint, next });

/** A confirmation or value that would need a prompt, when prompting is not allowed: exit 2 naming the flag. */
export const needsFlag = (flag: string, what: string, next?: string) =>
  new CliError(`${what}: pass ${flag} (no prompt without a terminal, or under CI, --non-interactive or --json)`, {
    exitCode: ExitCode.usage,
    code: 'needs_flag',
    hint: `Pass ${flag} to ${flag === '--yes' ? 'confirm' : 'give the value'} without a prompt.`,
    next,
  });

/**
 * The user answered no (or cancelled a wizard): not an error, so it is reported as a plain line,
 * but the run still exits 1 (README "Exit codes": a declined confirmation) so a script knows.
 */
export const declined = (message: string) => new CliError(message, { exitCode: ExitCode.failure, code: 'declined' });

/** A profile name that the config file does not hold: exit 3, listing the ones it does. */
export const unknownProfile = (name: string, from: string | undefined, existing: string[]) =>
  new CliError(
    `No profile named "${name}"${from ? ` (${from})` : ''}; ${existing.length ? `the profiles are: ${[...existing].sort().join(', ')}` : 'there are no profiles yet'}`,
    {
      exitCode: ExitCode.notFound,
      code: 'unknown_profile',
      hint: existing.length
        ? 'Check the spelling, or create it by logging in with it.'
        : 'Create one by logging in, or start a local server (agentctl server start).',
      next: shellCommand('agentctl', 'auth', 'login', '--profile', name),
    },
  );

/** Ctrl-C, or a prompt closed by the user. */
export class InterruptedError extends Error {
  readonly name = 'InterruptedError';
  constructor(
    /** The signal that ended the run, when one did. */
    readonly signal: 'SIGINT' | 'SIGTERM' = 'SIGINT',
  ) {
    super(signal === 'SIGTERM' ? 'Terminated' : 'Interrupted');
  }
}
