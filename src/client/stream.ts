// The long-lived path: `GET /tasks/{id}/stream` over undici (keep-alive pool, streaming body,
// HTTP(S)_PROXY / NO_PROXY through EnvHttpProxyAgent). Loaded only by callers that stream, so the
// CLI's one-shot commands never pay for undici. The reading and reconnecting is stream-core.ts's.
import { EnvHttpProxyAgent, request, type Dispatcher } from 'undici';
import { streamTask as streamTaskOver, type StreamContext, type StreamOpener, type StreamTaskOptions } from './stream-core.js';
import type { StreamRecord } from '../contract/conversation.js';

export { parseSse, type StreamTaskOptions, type StreamOpener, type OpenedStream } from './stream-core.js';

let sharedDispatcher: Dispatcher | undefined;
/** One pool per process: environment proxies honoured, connections kept alive between reconnects. */
const dispatcher = () => (sharedDispatcher ??= new EnvHttpProxyAgent());

/** Opens a stream with undici; a server that accepts but never answers counts as dropped too. */
export const undiciStreamOpener: StreamOpener = async (url, { headers, signal, idleTimeoutMs }) => {
  const response = await request(url, { method: 'GET', headers, dispatcher: dispatcher(), signal, headersTimeout: idleTimeoutMs, bodyTimeout: idleTimeoutMs });
  return {
    status: response.statusCode,
    headers: {
      get(name) {
        const value = response.headers[name.toLowerCase()];
        return value === undefined ? null : Array.isArray(value) ? value.join(', ') : value;
      },
    },
    body: response.body,
    text: () => response.body.text(),
    close: () => response.body.destroy(),
  };
};

/** streamTask over undici. */
export function streamTask(ctx: Omit<StreamContext, 'open'>, taskId: string, options: StreamTaskOptions = {}): AsyncGenerator<StreamRecord> {
  return streamTaskOver({ ...ctx, open: undiciStreamOpener }, taskId, options);
}
