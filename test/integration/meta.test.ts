import { describe, expect, test } from 'vitest';
import { engines, useService } from '../support/service.js';
import { buildApp, EndpointCoverageError } from '../../src/server/app.js';
import { registerRoutes } from '../../src/server/routes/index.js';
import type { RouteHost } from '../../src/server/route-host.js';

describe.each(engines)('health, schema and authentication (%s)', (engine) => {
  // Nothing here writes: one database for the whole block.
  const svc = useService(engine, {}, { resetBeforeEach: false });

  test('healthz and readyz need no key', async () => {
    expect((await svc.api('GET', '/healthz', { key: null })).body).toEqual({ status: 'ok' });
    expect((await svc.api('GET', '/readyz', { key: null })).body).toEqual({ status: 'ok', engine });
  });

  test('openapi.json is a 3.1 document with every endpoint, served without a key', async () => {
    const res = await svc.api('GET', '/openapi.json', { key: null });
    expect(res.status).toBe(200);
    expect(res.body.openapi).toBe('3.1.0');
    expect(res.body.paths['/tasks/migrate'].post.operationId).toBe('migrateTasks');
  });

  test('openapi.json documents the headers: If-Match and ETag, Idempotency-Key, Last-Event-ID and the event stream', async () => {
    const { paths } = (await svc.api('GET', '/openapi.json', { key: null })).body;
    const headerNames = (operation: { parameters: { in: string; name: string }[] }) => operation.parameters.filter((p) => p.in === 'header').map((p) => p.name);
    expect(headerNames(paths['/states/{state_id}'].patch)).toEqual(['if-match']);
    expect(Object.keys(paths['/states/{state_id}'].patch.responses['200'].headers)).toEqual(['ETag']);
    expect(headerNames(paths['/tasks'].post)).toEqual(['Idempotency-Key']);
    expect(headerNames(paths['/tasks/{task_id}/stream'].get)).toEqual(['Last-Event-ID']);
    expect(Object.keys(paths['/tasks/{task_id}/stream'].get.responses['200'].content)).toEqual(['text/event-stream']);
    expect(Object.keys(paths['/filesystems/{filesystem_id}/archive'].get.responses['200'].headers)).toEqual(['ETag']);
  });

  test('the app refuses to start when an endpoint of the contract has no handler', async () => {
    const withoutWhoami = (host: RouteHost, service: Parameters<typeof registerRoutes>[1]) =>
      registerRoutes({ handle: (name, handler) => (name === 'whoami' ? undefined : host.handle(name, handler)) }, service);
    const refused = await buildApp({ store: svc.store, registerRoutes: withoutWhoami }).catch((error: unknown) => error);
    expect(refused).toBeInstanceOf(EndpointCoverageError);
    expect((refused as Error).message).toBe('No handler for endpoint whoami: add one in src/server/routes');
  });

  test('the app refuses to start when an endpoint gets two handlers', async () => {
    const twice = (host: RouteHost, service: Parameters<typeof registerRoutes>[1]) => {
      registerRoutes(host, service);
      host.handle('whoami', async () => ({}) as never);
    };
    const refused = await buildApp({ store: svc.store, registerRoutes: twice }).catch((error: unknown) => error);
    expect((refused as Error).message).toBe('Endpoint whoami has two handlers');
  });

  test('a request without a key is 401 with WWW-Authenticate: Bearer', async () => {
    const res = await svc.api('GET', '/namespaces', { key: null });
    expect(res.status).toBe(401);
    expect(res.headers.get('www-authenticate')).toBe('Bearer');
    expect(res.body).toEqual({ detail: 'Missing API key: send `Authorization: Bearer <key>`', code: 'unauthorized' });
  });

  test('a key with a bad checksum is 401', async () => {
    const bad = svc.adminKey.slice(0, -1) + (svc.adminKey.endsWith('A') ? 'B' : 'A');
    const res = await svc.api('GET', '/namespaces', { key: bad });
    expect(res.status).toBe(401);
    expect(res.body.code).toBe('unauthorized');
  });

  test('every response carries X-Request-Id, echoing the client’s', async () => {
    const res = await svc.api('GET', '/healthz', { headers: { 'x-request-id': 'abc-123' } });
    expect(res.headers.get('x-request-id')).toBe('abc-123');
    expect((await svc.api('GET', '/healthz')).headers.get('x-request-id')).toMatch(/^req_/);
  });

  test('an unknown route is a 404 in the error shape', async () => {
    const res = await svc.api('GET', '/nope');
    expect(res.status).toBe(404);
    expect(res.body).toEqual({ detail: 'No route GET /nope', code: 'not_found' });
  });
});

describe('per-key rate limit', () => {
  const svc = useService('pglite', { rateLimitPerSecond: 1, rateLimitBurst: 2 });

  test('past the burst a key gets 429 with Retry-After; the open endpoints are not limited', async () => {
    expect((await svc.api('GET', '/namespaces')).status).toBe(200);
    expect((await svc.api('GET', '/namespaces')).status).toBe(200);
    const limited = await svc.api('GET', '/namespaces');
    expect(limited.status).toBe(429);
    expect(limited.headers.get('retry-after')).toBe('1');
    expect(limited.body).toEqual({ detail: 'Too many requests for this API key; retry in 1s', code: 'rate_limited' });
    expect((await svc.api('GET', '/healthz')).status).toBe(200);
  });
});
