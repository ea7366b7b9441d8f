import { LOG_SSE_EVENT, type VersionLogLine } from '../../contract/runtime.js';
import { versionLogs } from '../domain/logs.js';
import { STREAM_HEARTBEAT_MS, type RouteHost, type ServiceContext } from '../route-host.js';

export function registerRuntimeRoutes(host: RouteHost, service: ServiceContext): void {
  const db = service.store.db;
  host.handle('getVersionLogs', async ({ params, query }, call) => {
    const perms = await call.access();
    if (!query.follow) {
      const lines: VersionLogLine[] = [];
      for await (const line of await versionLogs(db, perms, service.runtime, params.version_id, { ...query, follow: false })) lines.push(line);
      return { lines };
    }
    const abort = new AbortController();
    // Checked (404, 409) before the stream starts, so errors keep their JSON body.
    const lines = await versionLogs(db, perms, service.runtime, params.version_id, { ...query, signal: abort.signal });
    const { reply, request } = call;
    reply.hijack();
    const raw = reply.raw;
    raw.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache', connection: 'keep-alive', 'x-request-id': request.id });
    raw.write(': following\n\n');
    const heartbeat = setInterval(() => raw.write(': heartbeat\n\n'), service.config.streamHeartbeatMs ?? STREAM_HEARTBEAT_MS);
    const stop = () => abort.abort();
    request.raw.once('close', stop);
    raw.once('close', stop);
    try {
      for await (const line of lines) raw.write(`event: ${LOG_SSE_EVENT}\ndata: ${JSON.stringify(line)}\n\n`);
    } finally {
      clearInterval(heartbeat);
      raw.end();
    }
    return undefined as never;
  });
}
