import type { Handler } from '../../command.js';
import { call } from '../../api.js';
import { keyRecord } from '../../output/resources.js';
import { kindsOfScopes, nameBook } from '../../names.js';
import { resolveKeyId } from '../../refs.js';

const get: Handler = async (ctx, [ref]) => {
  const id = await resolveKeyId(await ctx.client(), ref!, true);
  const { data, raw } = await call(ctx, 'getKey', { params: { key_id: id } });
  return { json: raw, view: keyRecord(data, await nameBook(ctx, [...kindsOfScopes([data]), 'groups'])) };
};
export default get;
