import type { Handler } from '../../command.js';
import { CliError } from '../../errors.js';
import { ExitCode } from '../../exit-codes.js';
import { record } from '../../output/view.js';
import { agentctl, placeholder } from '../../shell.js';

const use: Handler = async (ctx, [name]) => {
  const store = ctx.config();
  if (!store.profile(name)) {
    throw new CliError(`No profile named "${name}"`, { exitCode: ExitCode.notFound, code: 'not_found', hint: 'Create it by setting a value in it.', next: agentctl('config', 'set', 'base_url', placeholder('url'), '--profile', name) });
  }
  await store.setCurrentProfile(name);
  ctx.success(`Now using profile "${name}"`);
  if (ctx.env.AGENTCTL_PROFILE && ctx.env.AGENTCTL_PROFILE !== name) ctx.warn(`AGENTCTL_PROFILE=${ctx.env.AGENTCTL_PROFILE} still takes precedence in this environment`);
  return { json: { current_profile: name }, view: record([['Current profile', name]]) };
};
export default use;
