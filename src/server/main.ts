import { buildApp, type ServiceConfig } from './app.js';
import { ensureBootstrap, type BootstrapResult } from './bootstrap.js';
import { openStore, type Engine } from './store/db.js';
import { sweepDraining } from './domain/events.js';
import { startDispatcher, type Dispatcher, type DispatcherOptions } from './delivery/dispatcher.js';

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
  /** The delivery dispatcher; the retry budget defaults to AGENTCTL_DELIVERY_RETRY_BUDGET_MS, else 10 minutes. */
  delivery?: DispatcherOptions;
}

export interface RunningServer {
  url: string;
  engine: Engine;
  bootstrap: BootstrapResult;
  close(): Promise<void>;
}

/** Opens the store, applies migrations, bootstraps an empty database and listens. */
export async function startServer(options: ServerOptions): Promise<RunningServer> {
  const store = await openStore({ databaseUrl: options.databaseUrl, dataDir: options.dataDir });
  let app;
  let dispatcher: Dispatcher | undefined;
  try {
    const bootstrap = await ensureBootstrap(store.db);
    app = await buildApp({ store, logger: options.logger, config: options.config });
    const address = await app.listen({ host: options.host ?? '127.0.0.1', port: options.port ?? 7420 });
    const sweep = setInterval(() => void sweepDraining(store.db).catch(() => {}), SWEEP_INTERVAL_MS);
    sweep.unref();
    const budget = process.env.AGENTCTL_DELIVERY_RETRY_BUDGET_MS;
    dispatcher = await startDispatcher(store, {
      ...(budget ? { retryBudgetMs: Number(budget) } : {}),
      log: (message) => app!.log.warn(message),
      ...options.delivery,
    });
    const close = async () => {
      clearInterval(sweep);
      await dispatcher!.close();
      await app!.close();
      await store.close();
    };
    return { url: address.replace('[::1]', 'localhost'), engine: store.engine, bootstrap, close };
  } catch (error) {
    await dispatcher?.close().catch(() => {});
    await app?.close().catch(() => {});
    await store.close().catch(() => {});
    throw error;
  }
}
