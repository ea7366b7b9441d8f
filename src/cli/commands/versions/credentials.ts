import { defineCommand } from '../../command.js';
import { text } from '../../output/view.js';
import { resolveVersionId } from '../../refs.js';
import { shellQuote } from '../../shell.js';
import { agent } from '../../options.js';

/**
 * What an agent process started by hand needs (the process contract, README "Writing agents: the ADK"), as
 * shell-sourceable lines on stdout: a fresh one-time registration token and the version's signing
 * secret. Like `keys create`, the one place these secrets are printed.
 */
export default defineCommand({
  path: ['versions', 'credentials'],
  summary: 'Print what an agent process started by hand needs: a one-time registration token and the signing secret',
  description:
    "Shell-sourceable AGENTCTL_* lines on stdout (version and branch ids, a fresh one-time registration token, the version's signing secret, the base URL), for an agent run without a runtime driver. Needs admin on the agent. Like `keys create`, the one place these secrets are printed.",
  args: [{ name: 'version', description: 'ver_ id, or a git-hash prefix with --agent', required: true }],
  options: [agent],
  examples: [
    'eval "$(agentctl versions credentials ver_01J...)" && node src/index.ts',
    'agentctl versions credentials 3f2a9c1 --agent default/bot > .env.agent',
  ],
  notFoundNext: 'agentctl versions list --agent <ns/name>',
  handler: async (ctx, [ref], options) => {
    const id = await resolveVersionId(await ctx.client(), ref, options.agent, 'version');
    const { data: version } = await ctx.call('getVersion', { params: { version_id: id } });
    const { data: secret } = await ctx.call('getSigningSecret', { params: { version_id: id } });
    const { data: token } = await ctx.call('createRegistrationToken', { params: { version_id: id } });
    const baseUrl = ctx.credentials().baseUrl;
    const values = {
      AGENTCTL_VERSION_ID: id,
      AGENTCTL_BRANCH_ID: version.branch_id,
      AGENTCTL_REGISTRATION_TOKEN: token.registration_token,
      AGENTCTL_SIGNING_SECRET: secret.signing_secret,
      AGENTCTL_BASE_URL: baseUrl,
    };
    ctx.warn(`The registration token works once, until ${token.expires_at}; keep these lines out of logs and shared files.`);
    return {
      json: {
        version_id: id,
        branch_id: version.branch_id,
        registration_token: token.registration_token,
        expires_at: token.expires_at,
        signing_secret: secret.signing_secret,
        base_url: baseUrl,
      },
      view: text(
        Object.entries(values)
          .map(([name, value]) => `${name}=${shellQuote(value)}`)
          .join('\n'),
      ),
    };
  },
});
