import type { Rollout } from '../../../contract/rollouts.js';
import { ACTIVE_ROLLOUT_STATUSES } from '../../../contract/rollout-rules.js';
import { isIn } from '../../../contract/lifecycle.js';
import { defineCommand } from '../../command.js';
import type { CommandContext } from '../../context.js';
import { ExitCode } from '../../exit-codes.js';
import { labelsOf, rolloutRecord, stepLine, figuresText } from '../../rollouts.js';

export default defineCommand({
  path: ['rollouts', 'get'],
  summary: 'Show a rollout and the figures of each step (--follow: live, until it ends)',
  description:
    'With --follow the rollout is read again every second (AGENTCTL_POLL_INTERVAL_MS) and each change is printed as a line: the step, what it moved, the error rates of the moved tasks and of the ones still on the source; it ends when the rollout does, with exit 0 when it SUCCEEDED and 1 when it was REVERTED or ABORTED. --json prints one JSON object per change.',
  args: [{ name: 'rollout', description: 'A ro_ id', required: true }],
  options: [{ flags: '-f, --follow', description: 'Keep printing its progress until it ends' }],
  examples: ['agentctl rollouts get ro_01J...', 'agentctl rollouts get ro_01J... --follow'],
  notFoundNext: 'agentctl rollouts list',
  handler: async (ctx, [id], options) => {
    if (!options.follow) {
      const { data, raw } = await ctx.call('getRollout', { params: { rollout_id: id! } });
      return { json: raw, view: rolloutRecord(data, await labelsOf(ctx, [data.from_version_id, data.to_version_id])) };
    }
    return { exitCode: await followRollout(ctx, id!) };
  },
});

/** Prints a rollout's progress as it happens until it ends; the exit code says how it ended. */
export async function followRollout(ctx: CommandContext, id: string): Promise<number> {
  const interval = Number(ctx.env.AGENTCTL_POLL_INTERVAL_MS ?? 1000);
  let labels: Map<string, string> | undefined;
  let last = '';
  for (;;) {
    const { data } = await ctx.call('getRollout', { params: { rollout_id: id } });
    labels ??= await labelsOf(ctx, [data.from_version_id, data.to_version_id]);
    const line = ctx.globals.json ? JSON.stringify(data) : progressLine(data, labels);
    if (line !== last) {
      ctx.io.stdout.write(`${line}\n`);
      last = line;
    }
    if (!isIn(ACTIVE_ROLLOUT_STATUSES, data.status)) return data.status === 'SUCCEEDED' ? ExitCode.ok : ExitCode.failure;
    await ctx.sleep(interval);
  }
}

function progressLine(r: Rollout, labels: Map<string, string>): string {
  const current = r.report.at(-1);
  if (!isIn(ACTIVE_ROLLOUT_STATUSES, r.status)) return `${r.status}: ${r.reason ?? ''}`;
  if (!current) return `${r.status}: waiting for ${labels.get(r.to_version_id) ?? r.to_version_id} to be ACTIVE`;
  const live = current.target ? `; moved ${figuresText(current.target)}; source ${figuresText(current.source)}` : '';
  return `${r.status}: ${stepLine(r, { ...current, target: null, source: null, reason: null }, labels)}${live}`;
}
