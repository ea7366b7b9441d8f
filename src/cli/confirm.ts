import type { CommandContext } from './context.js';
import { declined, needsFlag } from './errors.js';

/** A change that asks first: what it would do, the question, and the change itself. */
export interface ConfirmedChange<Plan, Result> {
  /** What would change (a dry run, or a lookup); fetched only when it is shown. */
  plan?: () => Promise<Plan>;
  /** The plan in words, printed on stderr before the question (and for --dry-run). */
  describe?: (plan: Plan) => string | Promise<string>;
  /** A plan that changes nothing ends the command without asking. */
  isEmpty?: (plan: Plan) => boolean;
  question: string | ((plan: Plan) => string);
  /** Why a prompt was needed, in the error when none is possible. */
  needs?: string;
  /** The same command with `--yes`, to paste when no prompt is possible. */
  retry?: string;
  /** Show the plan and stop (`--dry-run`). */
  dryRun?: boolean;
  apply: () => Promise<Result>;
}

export type ChangeOutcome<Plan, Result> = { applied: true; result: Result } | { applied: false; plan: Plan | undefined };

/**
 * The one rule for every command that asks before changing something (README "The CLI"): `--yes`
 * applies at once; on a terminal the plan is shown and the question asked; where no prompt is
 * possible (`--json`, CI, `--non-interactive`, no terminal) it fails at once with exit 2 naming
 * `--yes`, before the plan is fetched or anything changes. `--json` changes the output, never this.
 */
export async function planConfirmApply<Plan = undefined, Result = void>(
  ctx: CommandContext,
  change: ConfirmedChange<Plan, Result>,
): Promise<ChangeOutcome<Plan, Result>> {
  const showPlan = async (): Promise<Plan | undefined> => {
    const plan = change.plan ? await change.plan() : undefined;
    if (plan !== undefined && change.describe) ctx.info(await change.describe(plan));
    return plan;
  };
  if (change.dryRun) return { applied: false, plan: await showPlan() };
  if (!ctx.globals.yes) {
    if (!ctx.canPrompt()) throw needsFlag('--yes', change.needs ?? 'This needs confirmation', change.retry);
    const plan = await showPlan();
    if (plan !== undefined && change.isEmpty?.(plan)) return { applied: false, plan };
    const question = typeof change.question === 'string' ? change.question : change.question(plan as Plan);
    const prompter = await ctx.prompts();
    if (!(await prompter.confirm({ message: question, default: false }))) {
      throw declined('Answered no: nothing changed.');
    }
  }
  return { applied: true, result: await change.apply() };
}

/** planConfirmApply for a change that is never skipped (no dry run, no empty plan): its result. */
export async function confirmApply<Result, Plan = undefined>(
  ctx: CommandContext,
  change: Omit<ConfirmedChange<Plan, Result>, 'isEmpty' | 'dryRun'>,
): Promise<Result> {
  const outcome = await planConfirmApply(ctx, change);
  if (!outcome.applied) throw new Error('a change without a dry run or an empty plan is applied or declined');
  return outcome.result;
}
