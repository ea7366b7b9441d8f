import path from 'node:path';
import { buildApp, type ServiceConfig } from './app.js';
import { ensureBootstrap, type BootstrapResult } from './bootstrap.js';
import { openStore, type Engine } from './store/db.js';
import { sweepDraining } from './domain/events.js';
import { startDispatcher, type Dispatcher, type DispatcherOptions } from './delivery/dispatcher.js';
import { sweepBlobs } from './domain/filesystems.js';
import { openBlobStore } from './blobs/index.js';

/** How often unreferenced blobs are collected. */
const BLOB_SWEEP_INTERVAL_MS = 60 * 60 * 1000;

/** How often drained versions are retired as a safety net (it normally happens in the same transaction). */
const SWEEP_INTERVAL_MS = 30_000;

export interface ServerOptions {
  host?: string;
  port?: number;
  /** PGlite data directory (ignored when `databaseUrl` is set). */
  dataDir?: string;
  databaseUrl?: string;
  /** Local blob directory (default: `blobs` beside the PGlite directory); AGENTCTL_BLOB_URL overrides it. */
  blobDir?: string;
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
  let blobs;
  try {
    const bootstrap = await ensureBootstrap(store.db);
    const blobDir = options.blobDir ?? (options.dataDir && options.dataDir !== 'memory://' ? path.join(path.dirname(options.dataDir), 'blobs') : undefined);
    blobs = await openBlobStore({ url: process.env.AGENTCTL_BLOB_URL, dir: blobDir });
    app = await buildApp({ store, logger: options.logger, config: options.config, blobs });
    const address = await app.listen({ host: options.host ?? '127.0.0.1', port: options.port ?? 7420 });
    const sweep = setInterval(() => void sweepDraining(store.db).catch(() => {}), SWEEP_INTERVAL_MS);
    sweep.unref();
    const budget = process.env.AGENTCTL_DELIVERY_RETRY_BUDGET_MS;
    const blobSweep = setInterval(() => void sweepBlobs(store.db, blobs!).catch(() => {}), BLOB_SWEEP_INTERVAL_MS);
    blobSweep.unref();
    dispatcher = await startDispatcher(store, {
      ...(budget ? { retryBudgetMs: Number(budget) } : {}),
      log: (message) => app!.log.warn(message),
      ...options.delivery,
    });
    const close = async () => {
      clearInterval(sweep);
      clearInterval(blobSweep);
      await dispatcher!.close();
      await app!.close();
      await blobs!.close();
      await store.close();
    };
    return { url: address.replace('[::1]', 'localhost'), engine: store.engine, bootstrap, close };
  } catch (error) {
    await dispatcher?.close().catch(() => {});
    await app?.close().catch(() => {});
    await blobs?.close().catch(() => {});
    await store.close().catch(() => {});
    throw error;
  }
}
