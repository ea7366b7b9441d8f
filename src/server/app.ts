// The server: its service context (store, authentication, streams, blobs, metrics) and the Fastify
// app that serves the endpoint table over it. What each request goes through is a plugin in
// src/server/http/, registered here.
import Fastify, { type FastifyInstance } from 'fastify';
import { Authenticator } from './auth/authenticate.js';
import { registerRoutes } from './routes/index.js';
import { StreamHub } from './delivery/stream-hub.js';
import type { RouteHost, ServiceConfig, ServiceContext } from './route-host.js';
import type { Store } from './store/db.js';
import { openBlobStore, type BlobStore } from './blobs/index.js';
import { DEFAULT_ARCHIVE_LIMITS } from '../sync/archive.js';
import { ServiceMetrics } from './metrics.js';
import { watchServiceGauges } from './service-gauges.js';
import { serverOptions } from './http/server-options.js';
import { bodyParsers } from './http/body-parsers.js';
import { requestLog } from './http/request-log.js';
import { errorHandler } from './http/error-handler.js';
import { authentication } from './http/authentication.js';
import { rateLimit } from './http/rate-limit.js';
import { registerEndpoints } from './http/endpoint-routes.js';
import { metricsAndOpenApi } from './http/metrics-and-openapi.js';
import { consolePages } from './http/console.js';
import { MasterKey } from './secrets/keyring.js';
import { requestSpans } from './tracing/request-spans.js';
import { Tracing, tracingEnabled } from './tracing/tracing.js';
import { SERVICE_VERSION } from './version.js';

export type { ServiceConfig, ServiceContext } from './route-host.js';
export { EndpointCoverageError } from './http/endpoint-routes.js';

export interface AppOptions {
  store: Store;
  config?: Partial<ServiceConfig>;
  /** Fastify's logger (pino options): one line per request (src/server/http/request-log.ts); false for none. */
  logger?: boolean | object;
  /** Archive storage; default: AGENTCTL_BLOB_URL, else a temporary directory removed on close. */
  blobs?: BlobStore;
  /** The master key of agent secrets (startServer chooses it); default: a key for this process only. */
  secretsKey?: MasterKey;
  /** Registers the handlers (default: every route module); each endpoint must get exactly one. */
  registerRoutes?: (host: RouteHost, service: ServiceContext) => void;
  /** The web console's built files (default: dist/console of this package). */
  consoleDir?: string;
}

export const defaultConfig = (): ServiceConfig => ({
  imageRetentionDays: Number(process.env.AGENTCTL_IMAGE_RETENTION_DAYS ?? 30),
  rateLimitPerSecond: Number(process.env.AGENTCTL_RATE_LIMIT ?? 100),
  rateLimitBurst: Number(process.env.AGENTCTL_RATE_LIMIT_BURST ?? 500),
  authFailuresPerSecond: Number(process.env.AGENTCTL_AUTH_FAILURE_RATE ?? 5),
  authFailureBurst: Number(process.env.AGENTCTL_AUTH_FAILURE_BURST ?? 50),
  requestTimeoutMs: Number(process.env.AGENTCTL_REQUEST_TIMEOUT_MS ?? 30_000),
  archiveMaxBytes: Number(process.env.AGENTCTL_ARCHIVE_MAX_BYTES ?? DEFAULT_ARCHIVE_LIMITS.maxBytes),
  archiveMaxFiles: Number(process.env.AGENTCTL_ARCHIVE_MAX_FILES ?? DEFAULT_ARCHIVE_LIMITS.maxFiles),
  tracing: tracingEnabled(),
});

export async function buildApp(options: AppOptions): Promise<FastifyInstance & { service: ServiceContext }> {
  const config = { ...defaultConfig(), ...options.config };
  const app = Fastify(serverOptions(config.requestTimeoutMs, options.logger ?? false));
  const service = await openService(app, options, config);
  try {
    // Hooks run in the order their plugins are registered: authentication before the rate limit.
    await app.register(bodyParsers);
    await app.register(requestLog, { metrics: service.metrics });
    if (service.tracing) await app.register(requestSpans, { tracing: service.tracing });
    await app.register(errorHandler, { stackToStderr: !options.logger });
    await app.register(authentication, { service });
    await app.register(rateLimit, { config });
    registerEndpoints(app, service, options.registerRoutes ?? registerRoutes);
    await app.register(metricsAndOpenApi, { service, serviceVersion: SERVICE_VERSION });
    await app.register(consolePages, { dir: options.consoleDir });
  } catch (error) {
    await app.close();
    throw error;
  }
  await app.ready();
  return app as unknown as FastifyInstance & { service: ServiceContext };
}

/** The service context, decorated on the app as `app.service`, and closed with it. */
async function openService(app: FastifyInstance, options: AppOptions, config: ServiceConfig): Promise<ServiceContext> {
  const blobs = options.blobs ?? (await openBlobStore({ url: process.env.AGENTCTL_BLOB_URL }));
  const service: ServiceContext = {
    store: options.store,
    config,
    auth: new Authenticator(options.store.db),
    streamHub: new StreamHub(options.store, {
      pollMs: config.streamPollMs,
      maxBufferedRecords: config.streamMaxBuffered?.records,
      maxBufferedBytes: config.streamMaxBuffered?.bytes,
    }),
    blobs,
    metrics: new ServiceMetrics(),
    secretsKey: options.secretsKey ?? MasterKey.generate('memory'),
    tracing: config.tracing === false ? undefined : await Tracing.start(options.store.db),
  };
  if (options.store.pool) service.metrics.watchPool(options.store.pool);
  watchServiceGauges(service);
  app.decorate('service', service);
  app.addHook('onClose', async () => service.auth.close());
  // After the last request: its spans are written before the store closes.
  if (service.tracing) app.addHook('onClose', async () => service.tracing?.close());
  // Before the server waits for open connections: ends every live stream.
  app.addHook('preClose', async () => service.streamHub.close());
  // A store the app opened itself is the app's to close.
  if (!options.blobs) app.addHook('onClose', async () => blobs.close());
  return service;
}
