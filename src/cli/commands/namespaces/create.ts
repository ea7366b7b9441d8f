import type { Handler } from '../../command.js';
import { call } from '../../api.js';
import { namespaceColumns, table } from '../../output/resources.js';

const create: Handler = async (ctx, [slug], options) => {
  const { data, raw } = await call(ctx, 'createNamespace', { body: { slug, name: options.name ?? slug } });
  ctx.success(`Created namespace ${data.slug} (${data.id})`);
  return { json: raw, view: table(namespaceColumns, [data], '') };
};
export default create;
