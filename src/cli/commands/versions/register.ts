import { plural } from '../../../contract/plural.js';
import { defineCommand } from '../../command.js';
import { versionRecord } from '../../output/resources.js';
import { resolveVersionId } from '../../refs.js';
import { agent } from '../../options.js';
import { REPORTED_VERSION_STATUSES } from '../../../contract/lifecycle.js';

/** What a runtime reports about a version: ready (ACTIVE), failing health checks, or failed to start. */
export default defineCommand({
  path: ['versions', 'register'],
  summary: 'Report a version ready, unhealthy or failed, as its runtime does',
  description:
    "What an agent container reports when it starts (POST /versions/register). Use it with a runtime that has no driver here, or by hand: a DEPLOYING version becomes ACTIVE and the branch's previous version hands over.",
  args: [{ name: 'version', description: 'vN or a git-hash prefix (4+ characters) of the --agent, or a ver_ id', required: true }],
  options: [
    agent,
    { flags: '--status <status>', description: 'What to report', choices: REPORTED_VERSION_STATUSES, default: 'ACTIVE' },
    { flags: '--reason <reason>', description: 'With --status FAILED: image_pull_failed, crash_loop, scheduling_failed, ...', field: 'failure_reason' },
  ],
  examples: ['agentctl versions register ver_01J...', 'agentctl versions register 3f2a9c1 --agent default/bot --status FAILED --reason crash_loop'],
  notFoundNext: 'agentctl versions list --agent <ns/name>',
  handler: async (ctx, [ref], options) => {
    const id = await resolveVersionId(await ctx.client(), ref, options.agent, 'version');
    const status = options.status as (typeof REPORTED_VERSION_STATUSES)[number];
    const { data, raw } = await ctx.call('registerVersion', {
      body: { version_id: id, status, ...(status === 'FAILED' && options.reason ? { failure_reason: options.reason } : {}) },
    });
    if (data.tasks_migrated > 0) ctx.info(`${plural(data.tasks_migrated, 'task')} moved back to the version still serving.`);
    return { json: raw, view: versionRecord(data.version) };
  },
});
