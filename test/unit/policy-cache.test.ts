import { afterAll, beforeAll, beforeEach, describe, expect, test, vi } from 'vitest';
import { openStore, truncateAll, type Db, type Store } from '../../src/server/store/db.js';
import { ensureBootstrap } from '../../src/server/bootstrap.js';
import { Authenticator } from '../../src/server/auth/authenticate.js';
import { GRANTS_CACHE_TTL_MS, loadPermissions } from '../../src/server/auth/policy.js';
import { accessChanged, markUnsettled } from '../../src/server/auth/invalidation.js';
import { generateSecret, hashSecret, secretPrefix } from '../../src/server/auth/secrets.js';
import { newId } from '../../src/server/store/ids.js';
import { ApiError } from '../../src/server/errors.js';

/**
 * The key and grant caches: bounded staleness (one second) for changes made elsewhere, immediate
 * effect for changes made through this process, and no database work for malformed keys.
 */

let store: Store;
let db: Db;
let orgId: string;
let namespaceId: string;

beforeAll(async () => {
  store = await openStore({});
  db = store.db;
});
afterAll(async () => store?.close());
beforeEach(async () => {
  await truncateAll(db);
  const boot = await ensureBootstrap(db, generateSecret());
  orgId = boot.orgId;
  namespaceId = boot.namespaceId;
});

async function insertKey(): Promise<{ keyId: string; secret: string }> {
  const secret = generateSecret();
  const keyId = newId('apiKey');
  await db
    .insertInto('api_keys')
    .values({
      id: keyId,
      org_id: orgId,
      name: 'cached',
      key_hash: hashSecret(secret),
      key_prefix: secretPrefix(secret),
      created_by_key_id: null,
      expires_at: null,
      revoked_at: null,
      last_used_at: null,
    })
    .execute();
  return { keyId, secret };
}

async function insertAgent(): Promise<string> {
  const id = newId('agent');
  await db
    .insertInto('agents')
    .values({
      id,
      namespace_id: namespaceId,
      name: id.toLowerCase(),
      agent_input_type: null,
      registered_at: null,
      registration_metadata: null,
      created_by_key_id: null,
      status_reason: null,
    })
    .execute();
  return id;
}

const grant = (keyId: string, agentId: string, role: string, id?: string) =>
  db
    .insertInto('grants')
    .values({
      ...(id ? { id } : {}),
      principal_type: 'key',
      principal_id: keyId,
      resource_type: 'agent',
      resource_id: agentId,
      role,
      legacy_role: null,
      source: 'scope',
    })
    .execute();

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Resolves once `condition` holds (checked every few milliseconds). */
async function until(condition: () => boolean): Promise<void> {
  while (!condition()) await sleep(2);
}

/** `db`, counting the statements sent through it; while `hold()`'s gate is shut their results wait. */
function heldDb() {
  const counter = { queries: 0 };
  let gate: Promise<void> = Promise.resolve();
  const held = db.withPlugin({
    transformQuery: (args) => {
      counter.queries++;
      return args.node;
    },
    transformResult: async (args) => {
      await gate;
      return args.result;
    },
  });
  const hold = () => {
    let release!: () => void;
    gate = new Promise((resolve) => (release = resolve));
    return release;
  };
  return { held, counter, hold };
}

/** Runs `body` with Date.now standing still unless `body` moves it (vi.setSystemTime). */
async function withStillClock(body: (start: number) => Promise<void>): Promise<void> {
  vi.useFakeTimers({ toFake: ['Date'] });
  try {
    await body(Date.now());
  } finally {
    vi.useRealTimers();
  }
}

describe('grant cache', () => {
  test('a grant written by another replica applies within the one-second bound', async () => {
    const { keyId } = await insertKey();
    const agentId = await insertAgent();
    const actor = { keyId, orgId, name: 'cached' };
    const ref = { type: 'agent', id: agentId, namespaceId } as const;
    expect((await loadPermissions(db, actor)).can('read', ref)).toBe(false);
    await grant(keyId, agentId, 'viewer');
    await sleep(GRANTS_CACHE_TTL_MS + 50);
    expect((await loadPermissions(db, actor)).can('read', ref)).toBe(true);
  });

  test('a change made through this process applies at once (accessChanged after commit)', async () => {
    const { keyId } = await insertKey();
    const agentId = await insertAgent();
    const actor = { keyId, orgId, name: 'cached' };
    const ref = { type: 'agent', id: agentId, namespaceId } as const;
    expect((await loadPermissions(db, actor)).can('read', ref)).toBe(false);
    await grant(keyId, agentId, 'viewer');
    accessChanged(db);
    expect((await loadPermissions(db, actor)).can('read', ref)).toBe(true);
  });

  test('a key in use has its grants loaded again before they expire, while its requests go on with the cached ones', async () => {
    const { keyId } = await insertKey();
    const agentId = await insertAgent();
    const actor = { keyId, orgId, name: 'cached' };
    const ref = { type: 'agent', id: agentId, namespaceId } as const;
    const { held, counter, hold } = heldDb();
    await withStillClock(async (start) => {
      expect((await loadPermissions(held, actor)).can('read', ref)).toBe(false);
      const perLoad = counter.queries;
      await grant(keyId, agentId, 'viewer');
      // Past half the bound: the cached grants answer at once, and a load starts shortly after them.
      const release = hold();
      vi.setSystemTime(start + GRANTS_CACHE_TTL_MS * 0.6);
      expect((await loadPermissions(held, actor)).can('read', ref)).toBe(false);
      expect((await loadPermissions(held, actor)).can('read', ref)).toBe(false);
      expect(counter.queries).toBe(perLoad);
      await until(() => counter.queries === 2 * perLoad);
      release();
      // Past the first load's bound: the second load's grants answer, with no load of their own.
      vi.setSystemTime(start + GRANTS_CACHE_TTL_MS * 1.1);
      expect((await loadPermissions(held, actor)).can('read', ref)).toBe(true);
      expect(counter.queries).toBe(2 * perLoad);
    });
  });

  test('a key with owner grants awaiting commit is read from the database until a load sees them', async () => {
    const { keyId } = await insertKey();
    const first = await insertAgent();
    const second = await insertAgent();
    const actor = { keyId, orgId, name: 'cached' };
    // As grantOwnership does inside a transaction that has not committed yet.
    markUnsettled([keyId], ['900001']);
    expect((await loadPermissions(db, actor)).can('read', { type: 'agent', id: first, namespaceId })).toBe(false);
    // Not cached: a grant that appears now is seen by the very next load.
    await grant(keyId, first, 'viewer');
    expect((await loadPermissions(db, actor)).can('read', { type: 'agent', id: first, namespaceId })).toBe(true);
    // The awaited grant commits: this load sees it and caching resumes, so a later change waits for the bound.
    await grant(keyId, second, 'owner', '900001');
    expect((await loadPermissions(db, actor)).can('admin', { type: 'agent', id: second, namespaceId })).toBe(true);
    await db.deleteFrom('grants').where('id', '=', '900001').execute();
    expect((await loadPermissions(db, actor)).can('admin', { type: 'agent', id: second, namespaceId })).toBe(true);
  });
});

describe('Authenticator', () => {
  test('a malformed key (bad checksum) is refused without touching the database', async () => {
    const touched: string[] = [];
    const untouchable = new Proxy({} as Db, {
      get(_target, property) {
        touched.push(String(property));
        throw new Error('the database was used');
      },
    });
    const auth = new Authenticator(untouchable);
    const good = generateSecret();
    const bad = good.slice(0, -1) + (good.endsWith('A') ? 'B' : 'A');
    const error = await auth.authenticate(`Bearer ${bad}`).catch((e) => e);
    expect(error).toBeInstanceOf(ApiError);
    expect([error.status, error.detail, error.headers]).toEqual([401, 'Invalid API key', { 'WWW-Authenticate': 'Bearer' }]);
    expect(touched).toEqual([]);
    await auth.close();
  });

  test('a key in use is looked up again before its entry expires, while its requests go on with the entry', async () => {
    const { keyId, secret } = await insertKey();
    const { held, counter, hold } = heldDb();
    const auth = new Authenticator(held);
    const header = `Bearer ${secret}`;
    await withStillClock(async (start) => {
      expect((await auth.authenticate(header)).keyId).toBe(keyId);
      expect(counter.queries).toBe(1);
      // Past half the bound: the entry answers at once, and one lookup starts shortly after it.
      const release = hold();
      vi.setSystemTime(start + 600);
      expect((await auth.authenticate(header)).keyId).toBe(keyId);
      expect((await auth.authenticate(header)).keyId).toBe(keyId);
      expect(counter.queries).toBe(1);
      await until(() => counter.queries === 2);
      release();
      // Past the first lookup's bound: the second lookup's entry answers, with no lookup of its own.
      vi.setSystemTime(start + 1100);
      expect((await auth.authenticate(header)).keyId).toBe(keyId);
      expect(counter.queries).toBe(2);
    });
    await auth.close();
  });

  test('last_used_at is written in a batch, not on every request', async () => {
    const { keyId, secret } = await insertKey();
    const auth = new Authenticator(db);
    const before = Date.now();
    for (let i = 0; i < 20; i++) await auth.authenticate(`Bearer ${secret}`);
    const after = Date.now();
    const stored = async () => (await db.selectFrom('api_keys').select('last_used_at').where('id', '=', keyId).executeTakeFirstOrThrow()).last_used_at;
    expect(await stored()).toBeNull();
    await auth.flushLastUsed();
    const usedAt = new Date((await stored())!).getTime();
    expect(usedAt).toBeGreaterThanOrEqual(before);
    expect(usedAt).toBeLessThanOrEqual(after);
    await auth.close();
  });

  test('a revocation through this process applies at once; one made elsewhere within the bound', async () => {
    const local = await insertKey();
    const remote = await insertKey();
    const auth = new Authenticator(db);
    await auth.authenticate(`Bearer ${local.secret}`);
    await auth.authenticate(`Bearer ${remote.secret}`);
    await db.updateTable('api_keys').set({ revoked_at: new Date() }).where('id', 'in', [local.keyId, remote.keyId]).execute();
    // Written straight to the database, as another replica would: refused once the bound has passed.
    await sleep(1050);
    await expect(auth.authenticate(`Bearer ${remote.secret}`)).rejects.toMatchObject({ status: 401, detail: 'API key has been revoked' });
    // A local change bumps the generation: no waiting.
    await db.updateTable('api_keys').set({ revoked_at: null }).where('id', '=', local.keyId).execute();
    accessChanged(db);
    expect((await auth.authenticate(`Bearer ${local.secret}`)).keyId).toBe(local.keyId);
    await db.updateTable('api_keys').set({ revoked_at: new Date() }).where('id', '=', local.keyId).execute();
    accessChanged(db);
    await expect(auth.authenticate(`Bearer ${local.secret}`)).rejects.toMatchObject({ status: 401, detail: 'API key has been revoked' });
    await auth.close();
  });
});
