import type { Handler } from '../../command.js';
import { call } from '../../api.js';
import { eventColumns, table, versionRecord } from '../../output/resources.js';
import { resolveVersionId } from '../../refs.js';

const get: Handler = async (ctx, [ref], options) => {
  const id = await resolveVersionId(await ctx.client(), ref, options.agent, 'version');
  if (options.events) {
    const { data, raw } = await call(ctx, 'listVersionEvents', { params: { version_id: id } });
    return { json: raw, view: table(eventColumns, data.events, 'No events.') };
  }
  const { data, raw } = await call(ctx, 'getVersion', { params: { version_id: id } });
  return { json: raw, view: versionRecord(data) };
};
export default get;
