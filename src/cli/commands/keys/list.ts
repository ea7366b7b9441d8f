import type { Handler } from '../../command.js';
import { call } from '../../api.js';
import { keyColumns, table } from '../../output/resources.js';
import { kindsOfScopes, nameBook } from '../../names.js';

const list: Handler = async (ctx, _args, options) => {
  const { data, raw } = await call(ctx, 'listKeys', { query: { include_revoked: options.includeRevoked ? 'true' : 'false' } });
  return { json: raw, view: table(keyColumns(await nameBook(ctx, kindsOfScopes(data.api_keys))), data.api_keys, 'No API keys.') };
};
export default list;
