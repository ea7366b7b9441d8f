import type { Version } from '../contract/resources.js';
import { isIn, SETTLED_VERSION_STATUSES } from '../contract/lifecycle.js';
import type { CommandContext } from './context.js';
import { CliError, InterruptedError } from './errors.js';
import { agentctl } from './shell.js';

export interface WaitResult {
  version: Version;
  raw: unknown;
}

/**
 * Polls `GET /versions/{id}` until the version leaves DEPLOYING, with a spinner on a terminal.
 * Fails with exit 1 on FAILED or after `timeoutSeconds`; Ctrl-C ends with 130 and a note that the server carries on.
 */
export async function waitForVersion(ctx: CommandContext, versionId: string, timeoutSeconds: number, what: string): Promise<WaitResult> {
  const interval = Number(ctx.env.AGENTCTL_POLL_INTERVAL_MS ?? 1000);
  const deadline = Date.now() + timeoutSeconds * 1000;
  const spinner = await ctx.spinner(`Waiting for ${versionId} to become ACTIVE`);
  try {
    for (;;) {
      const { data, raw } = await ctx.call('getVersion', { params: { version_id: versionId } });
      if (isIn(SETTLED_VERSION_STATUSES, data.status)) {
        if (data.status === 'FAILED') {
          spinner.fail(`${what} failed: ${versionId} is FAILED${data.failure_reason ? ` (${data.failure_reason})` : ''}`);
          const d = data.failure_diagnostics;
          throw new CliError(
            `${versionId} FAILED${data.failure_reason ? `: ${data.failure_reason}` : ''}${d?.title ? ` — ${d.title}${d.description ? `: ${d.description}` : ''}` : ''}`,
            {
              code: 'version_failed',
              hint: d?.action ?? 'The branch keeps serving its previous version.',
              next: agentctl('versions', 'get', versionId, '--events'),
            },
          );
        }
        if (data.status === 'ACTIVE') spinner.succeed(`${what}: ${versionId} is ACTIVE`);
        else spinner.stop();
        return { version: data, raw };
      }
      if (Date.now() > deadline) {
        spinner.fail(`${versionId} is still ${data.status} after ${timeoutSeconds} s`);
        throw new CliError(`${versionId} is still ${data.status} after ${timeoutSeconds} s`, {
          code: 'timeout',
          hint: `The deploy goes on on the server; wait longer with --timeout. A version becomes ACTIVE when its runtime reports it ready (by hand: ${agentctl('versions', 'register', versionId)}).`,
          next: agentctl('versions', 'get', versionId),
          json: raw,
        });
      }
      spinner.update(`Waiting for ${versionId} to become ACTIVE (now ${data.status})`);
      await ctx.sleep(interval);
    }
  } catch (error) {
    if (error instanceof InterruptedError) {
      spinner.stop();
      ctx.info(`Stopped waiting; ${versionId} goes on on the server: ${agentctl('versions', 'get', versionId)}`);
    }
    throw error;
  }
}
