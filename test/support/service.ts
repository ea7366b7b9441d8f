import pg from 'pg';
import { afterAll, beforeAll, beforeEach } from 'vitest';
import type { AddressInfo } from 'node:net';
import { buildApp, type ServiceConfig, type ServiceContext } from '../../src/server/app.js';
import { ensureBootstrap } from '../../src/server/bootstrap.js';
import { openStore, truncateAll, type Engine, type Store } from '../../src/server/store/db.js';
import { generateSecret } from '../../src/server/auth/secrets.js';
import type { BlobStore } from '../../src/server/blobs/index.js';
import { createClient, type Client } from '../../src/client/index.js';

/** PGlite always; PostgreSQL too when TEST_DATABASE_URL names a server. */
export const engines: Engine[] = ['pglite', ...(process.env.TEST_DATABASE_URL ? (['postgres'] as const) : [])];

export interface ApiResponse<T = any> {
  status: number;
  body: T;
  headers: Headers;
}

export interface TestService {
  engine: Engine;
  /** The app's metrics registry (ServiceMetrics). */
  metrics: import('../../src/server/metrics.js').ServiceMetrics;
  url: string;
  store: Store;
  /** The org-admin key of the current (reset) database. */
  adminKey: string;
  api<T = any>(
    method: string,
    path: string,
    options?: { body?: unknown; rawBody?: string; key?: string | null; headers?: Record<string, string> },
  ): Promise<ApiResponse<T>>;
  /** The typed client (src/client) on this server, with `key` (default: the admin key); no retries. */
  client(key?: string): Client;
  /** The running server's service context (its stream hub; a runtime driver tests attach). */
  service: ServiceContext;
  /** Empties every table and bootstraps again (new admin key). */
  reset(): Promise<void>;
  close(): Promise<void>;
}

/** Creates a throwaway PostgreSQL database; the returned function drops it. */
export async function createTestDatabase(base = process.env.TEST_DATABASE_URL!, prefix = 'agentctl_test'): Promise<{ url: string; drop: () => Promise<void> }> {
  const name = `${prefix}_${process.pid}_${Math.random().toString(36).slice(2, 8)}`;
  const admin = new pg.Client({ connectionString: base });
  await admin.connect();
  await admin.query(`CREATE DATABASE ${name}`);
  await admin.end();
  const url = new URL(base);
  url.pathname = `/${name}`;
  return {
    url: url.toString(),
    drop: async () => {
      const c = new pg.Client({ connectionString: base });
      await c.connect();
      await c.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      await c.end();
    },
  };
}

/** A service opened by hand, for code outside a test file (bench/); tests use `useService`. */
export async function openTestService(
  engine: Engine,
  config: Partial<ServiceConfig> = {},
  extra: { blobs?: BlobStore; logger?: object } = {},
): Promise<TestService> {
  return openInto({}, engine, config, extra);
}

export interface UseServiceOptions {
  /**
   * The blob store, or what returns it when the file opens it in a `beforeAll` of its own
   * (registered before `useService`, so it has run by the time the service opens).
   */
  blobs?: BlobStore | (() => BlobStore | undefined);
  /** Fastify's logger (pino options), e.g. a stream the test reads. */
  logger?: object;
  /**
   * Empty the database before each test (the default). `false` for a file whose tests share what
   * a `beforeAll` set up, or count on what an earlier test left.
   */
  resetBeforeEach?: boolean;
}

/**
 * The service of a test file (or of one `describe` block): opened in `beforeAll`, emptied before
 * each test unless `resetBeforeEach: false`, closed in `afterAll`. The returned object is filled in
 * when the service opens. Hooks registered after this call run after its own (vitest runs
 * before-hooks in order and after-hooks in reverse), so they see the open, reset service.
 */
export function useService(engine: Engine, config: Partial<ServiceConfig> = {}, options: UseServiceOptions = {}): TestService {
  const service = {} as TestService;
  beforeAll(async () => {
    const blobs = typeof options.blobs === 'function' ? options.blobs() : options.blobs;
    await openInto(service, engine, config, { blobs, logger: options.logger });
  });
  afterAll(async () => {
    await service.close?.();
  });
  if (options.resetBeforeEach !== false) beforeEach(() => service.reset());
  return service;
}

/** Opens a service and fills `target` with it (so a hook can hand out the object before it opens). */
async function openInto(
  target: Partial<TestService>,
  engine: Engine,
  config: Partial<ServiceConfig>,
  extra: { blobs?: BlobStore; logger?: object },
): Promise<TestService> {
  const database = engine === 'postgres' ? await createTestDatabase() : undefined;
  const store = await openStore({ databaseUrl: database?.url });
  const app = await buildApp({ store, config: { rateLimitPerSecond: 0, authFailuresPerSecond: 0, ...config }, blobs: extra.blobs, logger: extra.logger });
  await app.listen({ host: '127.0.0.1', port: 0 });
  const url = `http://127.0.0.1:${(app.server.address() as AddressInfo).port}`;
  const service: TestService = Object.assign(target, {
    engine,
    url,
    store,
    service: app.service,
    metrics: app.service.metrics,
    adminKey: '',
    async api(method: string, path: string, options: Parameters<TestService['api']>[2] = {}) {
      const headers: Record<string, string> = { ...options.headers };
      const key = options.key === undefined ? service.adminKey : options.key;
      if (key) headers.authorization = `Bearer ${key}`;
      let body: string | undefined;
      if (options.rawBody !== undefined) body = options.rawBody;
      else if (options.body !== undefined) body = JSON.stringify(options.body);
      if (body !== undefined) headers['content-type'] ??= 'application/json';
      const response = await fetch(url + path, { method, headers, body });
      const text = await response.text();
      let parsed: unknown = text;
      try {
        parsed = text ? JSON.parse(text) : undefined;
      } catch {
        /* keep text */
      }
      return { status: response.status, body: parsed as any, headers: response.headers };
    },
    client(key?: string) {
      return createClient({ baseUrl: url, apiKey: key ?? service.adminKey, retries: 0 });
    },
    async reset() {
      await truncateAll(store.db);
      app.service.auth.invalidate();
      const secret = generateSecret();
      await ensureBootstrap(store.db, secret);
      service.adminKey = secret;
    },
    async close() {
      await app.close();
      await store.close();
      await database?.drop();
    },
  });
  await service.reset();
  return service;
}
