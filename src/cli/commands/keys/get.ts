import type { Handler } from '../../command.js';
import { call } from '../../api.js';
import { keyRecord } from '../../output/resources.js';

const get: Handler = async (ctx, [id]) => {
  const { data, raw } = await call(ctx, 'getKey', { params: { key_id: id } });
  return { json: raw, view: keyRecord(data) };
};
export default get;
