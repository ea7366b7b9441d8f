import { readFileSync } from 'node:fs';
import { describe, expect, test } from 'vitest';
import { engines, useService } from '../support/service.js';
import { createTask, deployActive } from '../support/fixtures.js';
import { repoRoot } from '../support/agent-process.js';
import { z } from 'zod';
import { ErrorBody, UNPROCESSABLE_CODES, VALIDATION_LOC_ROOTS, ValidationErrorItem } from '../../src/contract/common.js';
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

describe.each(engines)('what a 422 is: the validation list, or {detail, code} with a named code (%s)', (engine) => {
  const svc = useService(engine);
  const validationList = z.strictObject({ detail: z.array(ValidationErrorItem.strict()) });

  test('a bad header is the validation list at ["header", its lowercase name], as the contract and openapi.json say', async () => {
    await deployActive(svc);
    const task = await createTask(svc);
    const lastEventId = await svc.api('GET', `/tasks/${task.id}/stream`, { headers: { 'last-event-id': 'abc' } });
    expect(lastEventId.status).toBe(422);
    expect(validationList.parse(lastEventId.body).detail.map((d) => d.loc)).toEqual([['header', 'last-event-id']]);
    const idempotencyKey = await svc.api('POST', '/tasks', { body: { agent_name: 'default/support-bot' }, headers: { 'idempotency-key': 'k'.repeat(256) } });
    expect(idempotencyKey.status).toBe(422);
    expect(validationList.parse(idempotencyKey.body).detail.map((d) => d.loc)).toEqual([['header', 'idempotency-key']]);

    const { paths } = (await svc.api('GET', '/openapi.json', { key: null })).body;
    const loc = paths['/tasks/{task_id}/stream'].get.responses['422'].content['application/json'].schema.properties.detail.items.properties.loc;
    expect(loc.prefixItems[0].enum).toEqual([...VALIDATION_LOC_ROOTS]);
  });

  test('an archive that cannot be used is {detail, code: invalid_archive}, which openapi.json gives as the other form of the upload’s 422', async () => {
    const fs = await svc.client().createFilesystem({ body: { namespace: 'default' } });
    const res = await svc.api('PUT', `/filesystems/${fs.id}/archive`, { rawBody: 'not zstd', headers: { 'content-type': 'application/zstd' } });
    expect(res.status).toBe(422);
    expect(ErrorBody.strict().parse(res.body).code).toBe('invalid_archive');
    expect(UNPROCESSABLE_CODES).toContain(res.body.code);

    const { paths } = (await svc.api('GET', '/openapi.json', { key: null })).body;
    const [list, named] = paths['/filesystems/{filesystem_id}/archive'].put.responses['422'].content['application/json'].schema.oneOf;
    expect(list).toEqual(paths['/tasks'].post.responses['422'].content['application/json'].schema);
    expect(named.properties.code.enum).toEqual([...UNPROCESSABLE_CODES]);
    expect(named.required).toEqual(['detail', 'code']);
  });
});

describe('the README’s HTTP conventions say what the contract says about 422s', () => {
  const readme = readFileSync(`${repoRoot}/README.md`, 'utf8');
  const conventions = readme.slice(readme.indexOf('### HTTP conventions'), readme.indexOf('### Endpoints'));

  test('every root a validation loc starts with, and no other', () => {
    const sentence = /`loc` starts with ([^.;]*)/.exec(conventions)?.[1] ?? '';
    expect([...sentence.matchAll(/`([a-z]+)`/g)].map((m) => m[1])).toEqual([...VALIDATION_LOC_ROOTS]);
  });

  test('the 422 row names both shapes and every code of the second', () => {
    const row = conventions.split('\n').find((line) => line.includes('| 422 |')) ?? '';
    expect(row).toContain('validation list');
    expect(row).toContain('`{detail, code}`');
    for (const code of UNPROCESSABLE_CODES) expect(row).toContain(`\`${code}\``);
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
