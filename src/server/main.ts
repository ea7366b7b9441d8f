import { buildApp, type ServiceConfig } from './app.js';
import { ensureBootstrap, type BootstrapResult } from './bootstrap.js';
import { openStore, type Engine } from './store/db.js';
import { sweepDraining } from './domain/events.js';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import type { ServiceMetrics } from './metrics.js';

/** How often drained versions are retired as a safety net (it normally happens in the same transaction). */
const SWEEP_INTERVAL_MS = 30_000;

export interface ServerOptions {
  host?: string;
  port?: number;
  /** PGlite data directory (ignored when `databaseUrl` is set). */
  dataDir?: string;
  databaseUrl?: string;
  logger?: boolean | object;
  config?: Partial<ServiceConfig>;
  /** Also serve `GET /metrics` without a key on this port (0 picks one): for a scraper on a private network. */
  metricsPort?: number;
}

export interface RunningServer {
  url: string;
  engine: Engine;
  bootstrap: BootstrapResult;
  /** The metrics listener's URL, with `metricsPort`. */
  metricsUrl?: string;
  close(): Promise<void>;
}

/** Opens the store, applies migrations, bootstraps an empty database and listens. */
export async function startServer(options: ServerOptions): Promise<RunningServer> {
  const store = await openStore({ databaseUrl: options.databaseUrl, dataDir: options.dataDir });
  let app;
  try {
    const bootstrap = await ensureBootstrap(store.db);
    app = await buildApp({ store, logger: options.logger, config: options.config });
    const address = await app.listen({ host: options.host ?? '127.0.0.1', port: options.port ?? 7420 });
    const sweep = setInterval(() => void sweepDraining(store.db).catch(() => {}), SWEEP_INTERVAL_MS);
    sweep.unref();
    const metricsServer = options.metricsPort === undefined ? undefined : await listenMetrics(app.service.metrics, options.host ?? '127.0.0.1', options.metricsPort);
    const close = async () => {
      clearInterval(sweep);
      if (metricsServer) await new Promise((resolve) => metricsServer.server.close(resolve));
      await app!.close();
      await store.close();
    };
    return { url: address.replace('[::1]', 'localhost'), engine: store.engine, bootstrap, metricsUrl: metricsServer?.url, close };
  } catch (error) {
    await app?.close().catch(() => {});
    await store.close().catch(() => {});
    throw error;
  }
}

/** `GET /metrics` without a key on a port of its own; everything else there is 404. */
async function listenMetrics(metrics: ServiceMetrics, host: string, port: number): Promise<{ server: http.Server; url: string }> {
  const server = http.createServer((request, response) => {
    if (request.method !== 'GET' || request.url?.split('?')[0] !== '/metrics') {
      response.writeHead(404, { 'content-type': 'application/json' }).end(JSON.stringify({ detail: 'Only GET /metrics is served here', code: 'not_found' }));
      return;
    }
    metrics.expose().then(
      ({ contentType, text }) => response.writeHead(200, { 'content-type': contentType }).end(text),
      () => response.writeHead(500, { 'content-type': 'application/json' }).end(JSON.stringify({ detail: 'Collecting the metrics failed', code: 'internal_error' })),
    );
  });
  await new Promise<void>((resolve, reject) => server.once('error', reject).listen(port, host, resolve));
  const address = server.address() as AddressInfo;
  return { server, url: `http://${host.includes(':') ? `[${host}]` : host}:${address.port}` };
}
