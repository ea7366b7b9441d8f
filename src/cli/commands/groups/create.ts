import type { Handler } from '../../command.js';
import { call } from '../../api.js';
import { groupColumns, table } from '../../output/resources.js';

const create: Handler = async (ctx, [name], options) => {
  const { data, raw } = await call(ctx, 'createGroup', { body: { name, description: options.description ?? '' } });
  ctx.success(`Created sharing group ${data.name} (${data.id})`);
  return { json: raw, view: table(groupColumns, [data], '') };
};
export default create;
