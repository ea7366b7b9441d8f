import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, beforeEach, describe, expect, test } from 'vitest';
import { buildApp } from '../../src/server/app.js';
import { openStore, type Store } from '../../src/server/store/db.js';
import type { Scope } from '../../src/contract/resources.js';
import { engines, useService } from '../support/service.js';

/** Keys that must not work: revoked, expired, rotated away, malformed; on one server and across replicas. */

const expectRefused = (res: { status: number; headers: Headers; body: unknown }, detail: string) => {
  expect(res.status).toBe(401);
  expect(res.headers.get('www-authenticate')).toBe('Bearer');
  expect(res.body).toEqual({ detail, code: 'unauthorized' });
};

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe.each(engines)('refused keys (%s)', (engine) => {
  const svc = useService(engine);
  let orgId: string;
  beforeEach(async () => {
    orgId = (await svc.client().whoami()).org_id;
  });

  const newKey = (extra: { expires_at?: string } = {}) =>
    svc.client().createKey({ body: { name: 'k', scopes: [{ resource_type: 'org', resource_id: orgId, role: 'member' }], ...extra } });

  test('a revoked key: 401 on its very next request', async () => {
    const k = await newKey();
    expect((await svc.api('GET', '/namespaces', { key: k.secret })).status).toBe(200);
    await svc.client().revokeKey({ params: { key_id: k.api_key.id } });
    expectRefused(await svc.api('GET', '/namespaces', { key: k.secret }), 'API key has been revoked');
  });

  test('an expired key: 401', async () => {
    const k = await newKey({ expires_at: new Date(Date.now() + 1000).toISOString() });
    expect((await svc.api('GET', '/namespaces', { key: k.secret })).status).toBe(200);
    await sleep(1100);
    expectRefused(await svc.api('GET', '/namespaces', { key: k.secret }), 'API key has expired');
  });

  test('a rotated-away secret: 401, while the new one works', async () => {
    const k = await newKey();
    const rotated = await svc.client().rotateKey({ params: { key_id: k.api_key.id } });
    expectRefused(await svc.api('GET', '/namespaces', { key: k.secret }), 'Invalid API key');
    expect((await svc.api('GET', '/namespaces', { key: rotated.secret })).status).toBe(200);
  });

  test('malformed keys and headers: 401', async () => {
    const k = (await newKey()).secret;
    const badChecksum = k.slice(0, -1) + (k.endsWith('A') ? 'B' : 'A');
    for (const key of [badChecksum, k.slice(0, -2), `agx_${k.slice(4)}`, `${k}x`, 'hunter2']) {
      expectRefused(await svc.api('GET', '/namespaces', { key }), 'Invalid API key');
    }
    for (const authorization of [`Basic ${k}`, `Bearer`, `Bearer ${k} extra`, k]) {
      expectRefused(await svc.api('GET', '/namespaces', { key: null, headers: { authorization } }), 'Malformed Authorization header: expected `Bearer <key>`');
    }
    expectRefused(await svc.api('GET', '/namespaces', { key: null }), 'Missing API key: send `Authorization: Bearer <key>`');
  });
});

/**
 * Two replicas on one PostgreSQL database, each with its own caches: a change made through one
 * reaches the other within one second.
 */
describe.skipIf(!process.env.TEST_DATABASE_URL)('across replicas on one PostgreSQL', () => {
  const svc = useService('postgres');
  let replica: { url: string; store: Store; close: () => Promise<void> };
  let orgId: string;
  const BOUND_MS = 1000;
  // Request latency on a loaded test machine, on top of the bound.
  const SLACK_MS = 300;

  beforeAll(async () => {
    const store = await openStore({ databaseUrl: svc.store.databaseUrl });
    const app = await buildApp({ store, config: { rateLimitPerSecond: 0 } });
    await app.listen({ host: '127.0.0.1', port: 0 });
    replica = {
      url: `http://127.0.0.1:${(app.server.address() as AddressInfo).port}`,
      store,
      close: async () => {
        await app.close();
        await store.close();
      },
    };
  });
  // Runs before the service closes (after-hooks run in reverse).
  afterAll(async () => replica?.close());
  beforeEach(async () => {
    orgId = (await svc.client().whoami()).org_id;
  });

  const onReplica = async (path: string, key: string) => {
    const res = await fetch(replica.url + path, { headers: { authorization: `Bearer ${key}` } });
    return { status: res.status, headers: res.headers, body: await res.json() };
  };

  /** Polls the replica until `done`; returns the milliseconds from `since`. */
  async function waitOnReplica(path: string, key: string, done: (res: { status: number; body: any }) => boolean, since: number): Promise<number> {
    for (;;) {
      const res = await onReplica(path, key);
      if (done(res)) return Date.now() - since;
      if (Date.now() - since > 5000) throw new Error(`the replica still answers ${res.status} after 5 s`);
      await sleep(20);
    }
  }

  const newKey = (scopes: Scope[]) => svc.client().createKey({ body: { name: 'k', scopes } });

  test('a key revoked on one replica stops working on the other within one second', async () => {
    const k = await newKey([{ resource_type: 'org', resource_id: orgId, role: 'member' }]);
    expect((await onReplica('/namespaces', k.secret)).status).toBe(200);
    const since = Date.now();
    await svc.client().revokeKey({ params: { key_id: k.api_key.id } });
    expectRefused(await svc.api('GET', '/namespaces', { key: k.secret }), 'API key has been revoked');
    const elapsed = await waitOnReplica('/namespaces', k.secret, (res) => res.status === 401, since);
    expect(elapsed).toBeLessThan(BOUND_MS + SLACK_MS);
    expectRefused(await onReplica('/namespaces', k.secret), 'API key has been revoked');
  });

  test('a secret rotated on one replica stops working on the other within one second', async () => {
    const k = await newKey([{ resource_type: 'org', resource_id: orgId, role: 'member' }]);
    expect((await onReplica('/namespaces', k.secret)).status).toBe(200);
    const since = Date.now();
    const rotated = await svc.client().rotateKey({ params: { key_id: k.api_key.id } });
    const elapsed = await waitOnReplica('/namespaces', k.secret, (res) => res.status === 401, since);
    expect(elapsed).toBeLessThan(BOUND_MS + SLACK_MS);
    expect((await onReplica('/namespaces', rotated.secret)).status).toBe(200);
  });

  test('scopes replaced on one replica apply on the other within one second', async () => {
    await svc.client().createGroup({ body: { name: 'platform' } });
    const k = await newKey([{ resource_type: 'org', resource_id: orgId, role: 'member' }]);
    // An org member sees every group of the org.
    expect((await onReplica('/groups', k.secret)).body.total).toBe(1);
    const namespaceId = (await svc.client().listNamespaces()).namespaces[0].id;
    const since = Date.now();
    await svc
      .client()
      .updateKeyScopes({ params: { key_id: k.api_key.id }, body: { scopes: [{ resource_type: 'namespace', resource_id: namespaceId, role: 'admin' }] } });
    expect((await svc.api('GET', '/groups', { key: k.secret })).body.total).toBe(0);
    const elapsed = await waitOnReplica('/groups', k.secret, (res) => res.status === 200 && res.body.total === 0, since);
    expect(elapsed).toBeLessThan(BOUND_MS + SLACK_MS);
  });
});
