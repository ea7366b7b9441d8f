import type { Handler } from '../../command.js';
import { call } from '../../api.js';
import { versionRecord } from '../../output/resources.js';
import { resolveVersionId } from '../../refs.js';
import type { REPORTED_VERSION_STATUSES } from '../../../contract/lifecycle.js';

/** What a runtime reports about a version: ready (ACTIVE), failing health checks, or failed to start. */
const register: Handler = async (ctx, [ref], options) => {
  const id = await resolveVersionId(await ctx.client(), ref, options.agent, 'version');
  const status = options.status as (typeof REPORTED_VERSION_STATUSES)[number];
  const { data, raw } = await call(ctx, 'registerVersion', {
    body: { version_id: id, status, ...(status === 'FAILED' && options.reason ? { failure_reason: options.reason } : {}) },
  });
  if (data.tasks_migrated > 0) ctx.info(`${data.tasks_migrated} task(s) moved back to the version still serving.`);
  return { json: raw, view: versionRecord(data.version) };
};
export default register;
