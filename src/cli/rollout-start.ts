/** `agentctl tasks migrate ... --steps/--watch/--max-error-rate`: a rollout instead of a move at once. */
import {
  formatDuration,
  parseDuration,
  parsePercent,
  parseSteps,
  ROLLOUT_DEFAULT_MAX_ERROR_RATE,
  ROLLOUT_DEFAULT_STEPS,
  ROLLOUT_DEFAULT_WATCH,
  stepsProblem,
} from '../contract/rollout-rules.js';
import { followRollout } from './commands/rollouts/get.js';
import type { Outcome } from './command.js';
import { confirmApply } from './confirm.js';
import type { CommandContext } from './context.js';
import { usageError } from './errors.js';
import { resolveVersionId } from './refs.js';
import { labelsOf, rolloutRecord } from './rollouts.js';
import { agentctl } from './shell.js';

/** The rollout flags of `tasks migrate`: any of them makes the migration a rollout. */
export const ROLLOUT_OPTIONS = [
  { flags: '--steps <percents>', description: `Roll out in steps: the share of the tasks moved after each (default ${ROLLOUT_DEFAULT_STEPS.join(',')})` },
  {
    flags: '--watch <duration>',
    description: `How long each step is watched before the next, e.g. 2s, 5m, 1h (default ${ROLLOUT_DEFAULT_WATCH})`,
    field: 'watch',
  },
  {
    flags: '--max-error-rate <percent>',
    description: `Revert when the moved tasks' error rate exceeds the source's by more than this (default ${ROLLOUT_DEFAULT_MAX_ERROR_RATE})`,
    field: 'max_error_rate_percent',
  },
  { flags: '--follow', description: 'With a rollout: print its progress until it ends' },
] as const;

// biome-ignore lint/suspicious/noExplicitAny: commander's parsed options are untyped
export const wantsRollout = (options: Record<string, any>) => Boolean(options.steps || options.watch || options.maxErrorRate);

// biome-ignore lint/suspicious/noExplicitAny: commander's parsed options are untyped
export async function startRollout(ctx: CommandContext, options: Record<string, any>): Promise<Outcome> {
  const example = 'agentctl tasks migrate --from v1 --to-latest --steps 10,50,100 --watch 5m --max-error-rate 2%';
  if (!options.from) throw usageError('A rollout moves the tasks of one version: give --from REF (not --task)', undefined, example);
  if (options.dryRun) throw usageError('--dry-run shows a migration at once; a rollout has no dry run (leave out --steps, --watch and --max-error-rate)');
  const steps = options.steps ? parseSteps(options.steps) : [...ROLLOUT_DEFAULT_STEPS];
  if (!steps) throw usageError(`--steps ${options.steps} is not a list of percentages such as 10,50,100`, undefined, example);
  const problem = stepsProblem(steps);
  if (problem) throw usageError(`--steps ${options.steps}: ${problem}`, undefined, example);
  const watch = options.watch ?? ROLLOUT_DEFAULT_WATCH;
  if (parseDuration(watch) === undefined) throw usageError(`--watch ${watch} is not a duration such as 2s, 5m or 1h`, undefined, example);
  const rate = parsePercent(options.maxErrorRate ?? ROLLOUT_DEFAULT_MAX_ERROR_RATE);
  if (rate === undefined) throw usageError(`--max-error-rate ${options.maxErrorRate} is not a percentage from 0 to 100 such as 2%`, undefined, example);
  const client = await ctx.client();
  const body = {
    from_version_id: await resolveVersionId(client, options.from, options.agent, '--from'),
    to_version_id: options.to ? await resolveVersionId(client, options.to, options.agent, '--to') : null,
    to_latest: Boolean(options.toLatest),
    steps,
    watch,
    max_error_rate_percent: rate,
  };
  const labels = await labelsOf(ctx, [body.from_version_id, ...(body.to_version_id ? [body.to_version_id] : [])]);
  const from = labels.get(body.from_version_id) ?? body.from_version_id;
  const to = body.to_version_id ? (labels.get(body.to_version_id) ?? body.to_version_id) : 'the branch’s latest version';
  const { data, raw } = await confirmApply(ctx, {
    plan: async () => true,
    describe: () =>
      `Plan: roll the tasks of ${from} out to ${to} in steps of ${steps.map((s) => `${s}%`).join(', ')}, watching each for ${formatDuration(parseDuration(watch)!)}; revert if the moved tasks' error rate exceeds ${from}'s by more than ${rate}%.`,
    question: 'Start the rollout?',
    needs: 'Starting a rollout needs confirmation',
    retry: agentctl(
      'tasks',
      'migrate',
      ...(options.agent ? ['--agent', options.agent] : []),
      '--from',
      options.from,
      ...(options.to ? ['--to', options.to] : ['--to-latest']),
      '--steps',
      steps.join(','),
      '--watch',
      watch,
      '--max-error-rate',
      `${rate}%`,
      '--yes',
    ),
    apply: () => ctx.call('createRollout', { body }),
  });
  const all = await labelsOf(ctx, [data.from_version_id, data.to_version_id]);
  ctx.success(`Rollout ${data.id} started: ${all.get(data.from_version_id)} -> ${all.get(data.to_version_id)} in steps of ${data.steps.join(', ')}%`);
  if (options.follow) return { exitCode: await followRollout(ctx, data.id) };
  ctx.info(`Follow it with: ${agentctl('rollouts', 'get', data.id, '--follow')}`);
  return { json: raw, view: rolloutRecord(data, all) };
}
