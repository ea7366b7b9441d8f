/** Stable exit codes, documented in the README's CLI section. */
export const ExitCode = {
  ok: 0,
  failure: 1,
  usage: 2,
  notFound: 3,
  auth: 4,
  conflict: 5,
  unreachable: 6,
  interrupted: 130,
} as const;
export type ExitCode = (typeof ExitCode)[keyof typeof ExitCode];

/** The exit code for an HTTP error status. */
export function exitCodeForStatus(status: number): ExitCode {
  if (status === 400 || status === 413 || status === 415 || status === 422) return ExitCode.usage;
  if (status === 401 || status === 403) return ExitCode.auth;
  if (status === 404) return ExitCode.notFound;
  if (status === 409 || status === 412) return ExitCode.conflict;
  return ExitCode.failure;
}
