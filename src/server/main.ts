import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { buildApp, type ServiceConfig } from './app.js';
import { ensureBootstrap, removeBootstrap, type BootstrapResult } from './bootstrap.js';
import { openStore, type Engine, type Store } from './store/db.js';
import { sweepDraining } from './domain/events.js';
import { advanceRollouts } from './domain/rollouts.js';
import { startLeasedLoop } from './runtime/leased-loop.js';
import { startDispatcher, type Dispatcher, type DispatcherOptions } from './delivery/dispatcher.js';
import { startRehearsalDriver, type RehearsalDriver } from './delivery/rehearsal-driver.js';
import { sweepBlobs } from './domain/filesystems.js';
import { historyRetentionMs, pruneHistory } from './domain/history.js';
import { sweepIdempotencyRecords } from './idempotency.js';
import { markReplicaGone } from './domain/registration.js';
import { openBlobStore, type BlobStore } from './blobs/index.js';
import type { RuntimeDriver, RuntimeName, VersionSpec } from './runtime/driver.js';
import { startReconciler, type Reconciler, type RuntimeSecretSource } from './runtime/reconciler.js';
import { registrationSecrets, sourceFromFilesystem } from './runtime/wiring.js';
import { ScheduleTicker } from './domain/schedules.js';
import { chooseMasterKey, SECRETS_KEY_ENV, SECRETS_KEY_FILE, type MasterKey } from './secrets/keyring.js';
import { storedMasterKeyIds } from './domain/secrets.js';

/** How often unreferenced blobs are collected. */
const BLOB_SWEEP_INTERVAL_MS = 60 * 60 * 1000;
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { DEFAULT_HOST, DEFAULT_PORT, DEFAULT_RUNTIME, RUNTIME_NAMES } from '../contract/enums.js';
import { isIn } from '../contract/lifecycle.js';
import type { ServiceMetrics } from './metrics.js';

/** How often drained versions are retired as a safety net (it normally happens in the same transaction). */
const SWEEP_INTERVAL_MS = 30_000;

export { RUNTIME_NAMES };

export interface RuntimeOptions {
  /** A driver to use instead of the one `runtime` names (tests, embedding). */
  driver?: RuntimeDriver;
  /** Where the local driver keeps sources, logs and agents' data (default: beside the PGlite data). */
  dataDir?: string;
  /** How the local driver gets a version's source into a directory (default: extract its source filesystem). */
  prepareSource?: (spec: VersionSpec, dir: string) => Promise<void>;
  /** Registration tokens and signing secrets (default: the registration domain). */
  secrets?: RuntimeSecretSource;
  healthIntervalMs?: number;
  startTimeoutMs?: number;
  reconcileIntervalMs?: number;
  /** SIGTERM-to-SIGKILL grace of stopping versions. */
  graceMs?: number;
}

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
  /**
   * The delivery dispatcher; the retry budget defaults to AGENTCTL_DELIVERY_RETRY_BUDGET_MS, else 10
   * minutes, the completion lease to AGENTCTL_DELIVERY_LEASE_MS, else 5 minutes, and an interrupted
   * handler's grace to AGENTCTL_INTERRUPT_GRACE_MS, else 10 s.
   */
  delivery?: DispatcherOptions;
  /** What runs deployed versions (default AGENTCTL_RUNTIME, else `local`); `none`: a person or CI registers them. */
  runtime?: RuntimeName;
  runtimeOptions?: RuntimeOptions;
  /** Also serve `GET /metrics` without a key on this port (0 picks one): for a scraper on a private network. */
  metricsPort?: number;
  /**
   * The master key file of agent secrets (made at first start, mode 0600) when AGENTCTL_SECRETS_KEY
   * is not set; default `secrets.key` beside the PGlite directory. None (memory): a key for this process only.
   */
  secretsKeyFile?: string;
}

export interface RunningServer {
  url: string;
  engine: Engine;
  bootstrap: BootstrapResult;
  runtime: RuntimeName;
  /** The driver and reconciler (absent with runtime `none`). */
  runner?: { driver: RuntimeDriver; reconciler: Reconciler };
  /** The metrics listener's URL, with `metricsPort`. */
  metricsUrl?: string;
  close(): Promise<void>;
}

/** The runtime named by the option, else AGENTCTL_RUNTIME, else `local`; anything else is refused. */
export function runtimeName(option: string | undefined): RuntimeName {
  const name = option ?? process.env.AGENTCTL_RUNTIME ?? DEFAULT_RUNTIME;
  if (!isIn(RUNTIME_NAMES, name)) throw new Error(`Unknown runtime "${name}": use one of ${RUNTIME_NAMES.join(', ')}`);
  return name;
}

/** Opens the store (its schema brought up to date), bootstraps an empty database, listens, and starts delivery and the runtime. */
export async function startServer(options: ServerOptions): Promise<RunningServer> {
  const runtime = runtimeName(options.runtime);
  // The request log once the app exists; stderr before.
  let warn: (line: string) => void = (line) => process.stderr.write(`${line}\n`);
  const store = await openStore({ databaseUrl: options.databaseUrl, dataDir: options.dataDir, log: (line) => warn(line) });
  let secretsKey: MasterKey;
  try {
    // Before anything listens or runs: a server whose secrets it cannot open does not start agents without them.
    secretsKey = chooseMasterKey({ envKey: process.env[SECRETS_KEY_ENV], file: secretsKeyFileOf(options) }, await storedMasterKeyIds(store.db));
  } catch (error) {
    await store.close().catch(() => {});
    throw error;
  }
  let app;
  let dispatcher: Dispatcher | undefined;
  let ticker: ScheduleTicker | undefined;
  let rehearsals: RehearsalDriver | undefined;
  let blobs: BlobStore | undefined;
  let runner: RunningServer['runner'];
  let rolloutLoop: { close(): Promise<void> } | undefined;
  let bootstrap: BootstrapResult | undefined;
  try {
    const historyRetention = historyRetentionMs();
    const blobDir = options.blobDir ?? (options.dataDir && options.dataDir !== 'memory://' ? path.join(path.dirname(options.dataDir), 'blobs') : undefined);
    blobs = await openBlobStore({ url: process.env.AGENTCTL_BLOB_URL, dir: blobDir });
    app = await buildApp({ store, logger: options.logger, config: options.config, blobs, secretsKey });
    warn = (line) => app!.log.warn(line);
    const budget = process.env.AGENTCTL_DELIVERY_RETRY_BUDGET_MS;
    const lease = process.env.AGENTCTL_DELIVERY_LEASE_MS;
    const grace = process.env.AGENTCTL_INTERRUPT_GRACE_MS;
    // Delivery runs before the port opens: a request that reaches this server (a dev agent's pull
    // after a restart) always finds the dispatcher, never a start-up window that answers no_runtime.
    dispatcher = await startDispatcher(store, {
      ...(budget ? { retryBudgetMs: Number(budget) } : {}),
      ...(lease ? { leaseMs: Number(lease) } : {}),
      ...(grace ? { interruptGraceMs: Number(grace) } : {}),
      log: (message) => app!.log.warn(message),
      tracing: app.service.tracing,
      ...options.delivery,
    });
    app.service.delivery = dispatcher;
    const address = await app.listen({ host: options.host ?? DEFAULT_HOST, port: options.port ?? DEFAULT_PORT });
    const url = address.replace('[::1]', 'localhost');
    // Only once the port is ours: a start that cannot listen must not create a key nobody will see.
    bootstrap = await ensureBootstrap(store.db);
    const sweep = setInterval(() => void sweepDraining(store.db).catch(() => {}), SWEEP_INTERVAL_MS);
    sweep.unref();
    // Hourly housekeeping: history past its retention (so its archives become unreferenced first),
    // unreferenced blobs, and idempotency records past their TTL.
    const blobSweep = setInterval(() => {
      void pruneHistory(store.db, historyRetention)
        .catch(() => {})
        .then(() => sweepBlobs(store.db, blobs!))
        .catch(() => {});
      void sweepIdempotencyRecords(store.db).catch(() => {});
    }, BLOB_SWEEP_INTERVAL_MS);
    blobSweep.unref();
    // Schedules' ticks: every replica runs a ticker; the tick rows make each tick run once.
    ticker = new ScheduleTicker(store.db, { log: (message) => app!.log.warn(message) });
    ticker.start();
    // Rollouts advance once across replicas, under the runtime lease (domain/rollouts.ts).
    const rolloutWork = () => advanceRollouts(store.db, new Date(), (error) => app!.log.warn(`rollout: ${(error as Error).message ?? error}`));
    if (runtime === 'none') rolloutLoop = await startLeasedLoop(store, rolloutWork);
    rehearsals = await startRehearsalDriver(store, { log: (message) => app!.log.warn(message) });
    if (runtime !== 'none') {
      const ro = options.runtimeOptions ?? {};
      const driver = ro.driver ?? (await createDriver(runtime, options, ro, store, blobs));
      const reconciler = await startReconciler({
        store,
        driver,
        baseUrl: url,
        secrets: ro.secrets ?? registrationSecrets(store, secretsKey),
        replicaGone: (versionId, acpUrl) => markReplicaGone(store.db, versionId, acpUrl),
        intervalMs: ro.reconcileIntervalMs,
        graceMs: ro.graceMs,
        leasedWork: rolloutWork,
      });
      runner = { driver, reconciler };
      app.service.runtime = driver;
    }
    const metricsServer =
      options.metricsPort === undefined ? undefined : await listenMetrics(app.service.metrics, options.host ?? '127.0.0.1', options.metricsPort);
    const close = async () => {
      clearInterval(sweep);
      if (metricsServer) await new Promise((resolve) => metricsServer.server.close(resolve));
      clearInterval(blobSweep);
      // Agents first: they may still call the API while they finish.
      await ticker!.close();
      await runner?.reconciler.close();
      await rolloutLoop?.close();
      await rehearsals?.close();
      await dispatcher!.close();
      await app!.close();
      await blobs!.close();
      await store.close();
    };
    return { url, engine: store.engine, bootstrap, runtime, runner, metricsUrl: metricsServer?.url, close };
  } catch (error) {
    await ticker?.close().catch(() => {});
    await runner?.reconciler.close().catch(() => {});
    await rolloutLoop?.close().catch(() => {});
    await rehearsals?.close().catch(() => {});
    await dispatcher?.close().catch(() => {});
    await app?.close().catch(() => {});
    // A key created by this start is shown by no one: take it back, so the next start creates (and prints) one.
    if (bootstrap?.secret) await removeBootstrap(store.db, bootstrap).catch(() => {});
    await blobs?.close().catch(() => {});
    await store.close().catch(() => {});
    throw error;
  }
}

/** The key file the options name, else `secrets.key` beside the PGlite directory; none in memory. */
export function secretsKeyFileOf(options: Pick<ServerOptions, 'secretsKeyFile' | 'dataDir'>): string | undefined {
  if (options.secretsKeyFile) return options.secretsKeyFile;
  return options.dataDir && options.dataDir !== 'memory://' ? path.join(path.dirname(options.dataDir), SECRETS_KEY_FILE) : undefined;
}

async function createDriver(runtime: RuntimeName, options: ServerOptions, ro: RuntimeOptions, store: Store, blobs: BlobStore): Promise<RuntimeDriver> {
  if (runtime === 'kubernetes') {
    // Loaded only when chosen: it brings @kubernetes/client-node.
    const { createKubernetesDriver } = await import('./runtime/kubernetes/index.js');
    return createKubernetesDriver({
      startTimeoutMs: ro.startTimeoutMs,
      graceMs: ro.graceMs,
      warn: (message) => process.stderr.write(`[agentctl runtime] ${message}\n`),
    });
  }
  const { createLocalDriver } = await import('./runtime/local/index.js');
  const dataDir =
    ro.dataDir ?? (options.dataDir && options.dataDir !== 'memory://' ? path.dirname(options.dataDir) : mkdtempSync(path.join(tmpdir(), 'agentctl-runtime-')));
  return createLocalDriver({
    dataDir,
    prepareSource: ro.prepareSource ?? sourceFromFilesystem(store, blobs),
    healthIntervalMs: ro.healthIntervalMs,
    startTimeoutMs: ro.startTimeoutMs,
    stopGraceMs: ro.graceMs,
  });
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
      () =>
        response
          .writeHead(500, { 'content-type': 'application/json' })
          .end(JSON.stringify({ detail: 'Collecting the metrics failed', code: 'internal_error' })),
    );
  });
  await new Promise<void>((resolve, reject) => server.once('error', reject).listen(port, host, resolve));
  const address = server.address() as AddressInfo;
  return { server, url: `http://${host.includes(':') ? `[${host}]` : host}:${address.port}` };
}
