import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { buildApp, type ServiceConfig } from './app.js';
import { ensureBootstrap, type BootstrapResult } from './bootstrap.js';
import { openStore, type Engine } from './store/db.js';
import { sweepDraining } from './domain/events.js';
import type { RuntimeDriver, RuntimeName, VersionSpec } from './runtime/driver.js';
import { startReconciler, type Reconciler, type RuntimeSecretSource } from './runtime/reconciler.js';

/** How often drained versions are retired as a safety net (it normally happens in the same transaction). */
const SWEEP_INTERVAL_MS = 30_000;

export const RUNTIME_NAMES: readonly RuntimeName[] = ['local', 'kubernetes', 'none'];

export interface RuntimeOptions {
  /** A driver to use instead of the one `runtime` names (tests, embedding). */
  driver?: RuntimeDriver;
  /** Where the local driver keeps sources, logs and agents' data (default: beside the PGlite data). */
  dataDir?: string;
  /** How the local driver gets a version's source into a directory. */
  prepareSource?: (spec: VersionSpec, dir: string) => Promise<void>;
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
  logger?: boolean | object;
  config?: Partial<ServiceConfig>;
  /** What runs deployed versions (default AGENTCTL_RUNTIME, else `local`); `none`: a person or CI registers them. */
  runtime?: RuntimeName;
  runtimeOptions?: RuntimeOptions;
}

export interface RunningServer {
  url: string;
  engine: Engine;
  bootstrap: BootstrapResult;
  runtime: RuntimeName;
  /** The driver and reconciler (absent with runtime `none`). */
  runner?: { driver: RuntimeDriver; reconciler: Reconciler };
  close(): Promise<void>;
}

/** The runtime named by the option, else AGENTCTL_RUNTIME, else `local`; anything else is refused. */
export function runtimeName(option: string | undefined): RuntimeName {
  const name = option ?? process.env.AGENTCTL_RUNTIME ?? 'local';
  if (!RUNTIME_NAMES.includes(name as RuntimeName)) throw new Error(`Unknown runtime "${name}": use one of ${RUNTIME_NAMES.join(', ')}`);
  return name as RuntimeName;
}

/** Opens the store, applies migrations, bootstraps an empty database, listens, and starts the runtime. */
export async function startServer(options: ServerOptions): Promise<RunningServer> {
  const runtime = runtimeName(options.runtime);
  const store = await openStore({ databaseUrl: options.databaseUrl, dataDir: options.dataDir });
  let app;
  let runner: RunningServer['runner'];
  try {
    const bootstrap = await ensureBootstrap(store.db);
    app = await buildApp({ store, logger: options.logger, config: options.config });
    const address = await app.listen({ host: options.host ?? '127.0.0.1', port: options.port ?? 7420 });
    const url = address.replace('[::1]', 'localhost');
    const sweep = setInterval(() => void sweepDraining(store.db).catch(() => {}), SWEEP_INTERVAL_MS);
    sweep.unref();
    if (runtime !== 'none') {
      const ro = options.runtimeOptions ?? {};
      const driver = ro.driver ?? (await createDriver(runtime, options, ro));
      const reconciler = await startReconciler({
        store,
        driver,
        baseUrl: url,
        secrets: ro.secrets ?? (await defaultSecrets(store)),
        intervalMs: ro.reconcileIntervalMs,
        graceMs: ro.graceMs,
      });
      runner = { driver, reconciler };
      app.service.runtime = driver;
    }
    const close = async () => {
      clearInterval(sweep);
      await runner?.reconciler.close();
      await app!.close();
      await store.close();
    };
    return { url, engine: store.engine, bootstrap, runtime, runner, close };
  } catch (error) {
    await runner?.reconciler.close().catch(() => {});
    await app?.close().catch(() => {});
    await store.close().catch(() => {});
    throw error;
  }
}

async function createDriver(runtime: RuntimeName, options: ServerOptions, ro: RuntimeOptions): Promise<RuntimeDriver> {
  if (runtime === 'kubernetes') throw new Error('The kubernetes runtime is not part of this build yet; use --runtime local or none');
  const { createLocalDriver } = await import('./runtime/local/index.js');
  const dataDir =
    ro.dataDir ?? (options.dataDir && options.dataDir !== 'memory://' ? dirname(options.dataDir) : mkdtempSync(join(tmpdir(), 'agentctl-runtime-')));
  return createLocalDriver({
    dataDir,
    prepareSource: ro.prepareSource ?? (await defaultPrepareSource(options)),
    healthIntervalMs: ro.healthIntervalMs,
    startTimeoutMs: ro.startTimeoutMs,
    stopGraceMs: ro.graceMs,
  });
}

// Until the registration domain (delivery) and the filesystem store (fs) are merged, a server
// started without these options cannot hand out tokens or extract sources: said plainly.
async function defaultSecrets(_store: unknown): Promise<RuntimeSecretSource> {
  const missing = () => Promise.reject(new Error('Registration tokens and signing secrets need the registration domain, which this build lacks'));
  return { signingSecret: missing, registrationToken: missing };
}

async function defaultPrepareSource(_options: ServerOptions): Promise<(spec: VersionSpec, dir: string) => Promise<void>> {
  return async (spec) => {
    throw new Error(`Source snapshots (${spec.imageUrl}) need the filesystem store, which this build lacks`);
  };
}
