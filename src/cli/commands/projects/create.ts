import type { Handler } from '../../command.js';
import { call } from '../../api.js';
import { projectColumns, table } from '../../output/resources.js';
import { nameBook } from '../../names.js';

const create: Handler = async (ctx, [name], options) => {
  const { data, raw } = await call(ctx, 'createProject', { body: { name, namespace: options.namespace, description: options.description ?? '' } });
  ctx.success(`Created project ${data.name} (${data.id})`);
  return { json: raw, view: table(projectColumns(await nameBook(ctx, ['namespaces'])), [data], '') };
};
export default create;
