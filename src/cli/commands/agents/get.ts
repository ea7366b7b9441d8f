import type { Handler } from '../../command.js';
import { call } from '../../api.js';
import { agentRecord } from '../../output/resources.js';
import { nameBook } from '../../names.js';
import { parseAgentPath } from '../../refs.js';

const get: Handler = async (ctx, [ref]) => {
  const { data, raw } = ref.startsWith('agt_')
    ? await call(ctx, 'getAgent', { params: { agent_id: ref } })
    : await call(ctx, 'getAgentByName', { params: parseAgentPath(ref) });
  return { json: raw, view: agentRecord(data, await nameBook(ctx, ['namespaces'])) };
};
export default get;
