import pg from 'pg';
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
  api<T = any>(method: string, path: string, options?: { body?: unknown; rawBody?: string; key?: string | null; headers?: Record<string, string> }): Promise<ApiResponse<T>>;
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

export async function openTestService(engine: Engine, config: Partial<ServiceConfig> = {}, extra: { blobs?: BlobStore; logger?: object } = {}): Promise<TestService> {
  const database = engine === 'postgres' ? await createTestDatabase() : undefined;
  const store = await openStore({ databaseUrl: database?.url });
  const app = await buildApp({ store, config: { rateLimitPerSecond: 0, authFailuresPerSecond: 0, ...config }, blobs: extra.blobs, logger: extra.logger });
  await app.listen({ host: '127.0.0.1', port: 0 });
  const url = `http://127.0.0.1:${(app.server.address() as AddressInfo).port}`;
  const service: TestService = {
    engine,
    url,
    store,
    service: app.service,
    metrics: app.service.metrics,
    adminKey: '',
    async api(method, path, options = {}) {
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
    client(key) {
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
  };
  await service.reset();
  return service;
}
