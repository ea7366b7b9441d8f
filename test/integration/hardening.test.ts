import { describe, expect, test, vi } from 'vitest';
import net from 'node:net';
import type { AddressInfo } from 'node:net';
import { buildApp } from '../../src/server/app.js';
import { Authenticator } from '../../src/server/auth/authenticate.js';
import { generateSecret, hashSecret, secretPrefix } from '../../src/server/auth/secrets.js';
import { newId } from '../../src/server/store/ids.js';
import { defaultNamespaceId, scopedKey } from '../support/scoped-key.js';
import { sql } from 'kysely';
import { engines, useService, type TestService } from '../support/service.js';
import { createTask, deployActive } from '../support/fixtures.js';
import { expectError, expectInvalid } from '../support/bad-input.js';

/** A second org with its own `default` namespace and org-admin key, written straight into the store. */
async function secondOrg(svc: TestService): Promise<string> {
  const db = svc.store.db;
  const org = newId('org');
  const secret = generateSecret();
  const keyId = newId('apiKey');
  await db
    .insertInto('orgs')
    .values({ id: org, name: `other-${org}` })
    .execute();
  await db
    .insertInto('namespaces')
    .values({ id: newId('namespace'), org_id: org, name: 'Default', slug: 'default' })
    .execute();
  await db
    .insertInto('api_keys')
    .values({
      id: keyId,
      org_id: org,
      name: 'other admin',
      key_hash: hashSecret(secret),
      key_prefix: secretPrefix(secret),
      created_by_key_id: null,
      expires_at: null,
      revoked_at: null,
      last_used_at: null,
    })
    .execute();
  await db
    .insertInto('grants')
    .values({ principal_type: 'key', principal_id: keyId, resource_type: 'org', resource_id: org, role: 'admin', legacy_role: null, source: 'scope' })
    .execute();
  return secret;
}

describe.each(engines)('hardening (%s)', (engine) => {
  const svc = useService(engine, { requestTimeoutMs: 1500 });

  describe('NUL bytes and lone surrogates are 422 naming the field (defects 2, 3)', () => {
    test('a NUL in a path parameter: 422 at path.agent_name', async () => {
      expectInvalid(await svc.api('GET', '/agents/name/default/a%00b'), ['path', 'agent_name'], 'string_nul');
    });

    test('a NUL in a query value: 422 at query.namespace', async () => {
      expectInvalid(await svc.api('GET', '/agents?namespace=a%00b'), ['query', 'namespace'], 'string_nul');
    });

    test('a NUL in a string field: 422 at body.name', async () => {
      expectInvalid(await svc.api('POST', '/groups', { body: { name: 'x\u0000y' } }), ['body', 'name'], 'string_nul');
    });

    test('a NUL inside a JSON value of params: 422 at body.params.a, and no task is written', async () => {
      await deployActive(svc);
      expectInvalid(await svc.api('POST', '/tasks', { body: { agent_name: 'support-bot', params: { a: '\u0000' } } }), ['body', 'params', 'a'], 'string_nul');
      expect((await svc.api('GET', '/tasks')).body.total).toBe(0);
    });

    test('a NUL in a key of task_metadata: 422 at that key', async () => {
      await deployActive(svc);
      const task = await createTask(svc);
      const res = await svc.api('PATCH', `/tasks/${task.id}`, { body: { task_metadata: { 'k\u0000': 1 } } });
      expectInvalid(res, ['body', 'task_metadata', 'k\\u0000'], 'string_nul');
    });

    test('a lone surrogate in state: 422 at body.state.s', async () => {
      const res = await svc.api('POST', '/states', { rawBody: '{"task_id":"task_x","agent_id":"agt_x","state":{"s":"\\ud800"}}' });
      expectInvalid(res, ['body', 'state', 's'], 'string_unicode');
    });

    test('a lone surrogate in image_url: 422 and no version is created', async () => {
      const res = await svc.api('POST', '/agents/deploy', {
        rawBody: JSON.stringify({
          agent_name: 'bot',
          branch: 'main',
          git_hash: 'abcdef0',
          author_name: 'A',
          author_email: 'a@x',
          sdk_type: 'alpha_agent_sdk',
          acp_type: 'async',
          image_url: 'img',
        }).replace('"img"', '"img\\udc00"'),
      });
      expectInvalid(res, ['body', 'image_url'], 'string_unicode');
      expect((await svc.api('GET', '/agents')).body.total).toBe(0);
    });

    test('a surrogate pair (an emoji) is fine', async () => {
      const res = await svc.api('POST', '/groups', { body: { name: 'team 🚀' } });
      expect(res.status).toBe(201);
      expect(res.body.name).toBe('team 🚀');
    });
  });

  describe('nesting deeper than 64 levels is 422 (defect 3)', () => {
    const nested = (depth: number) => `${'{"a":'.repeat(depth)}1${'}'.repeat(depth)}`;

    test('5,000 levels in state: 422 at the 64th level, nothing written', async () => {
      const res = await svc.api('POST', '/states', { rawBody: `{"task_id":"t","agent_id":"a","state":${nested(5000)}}` });
      expect(res.status).toBe(422);
      expect(res.body.detail).toHaveLength(1);
      expect(res.body.detail[0].type).toBe('too_deep');
      expect(res.body.detail[0].loc).toEqual(['body', 'state', ...Array(63).fill('a')]);
    });

    test('63 levels inside params are accepted', async () => {
      await deployActive(svc);
      const res = await svc.api('POST', '/tasks', { rawBody: `{"agent_name":"support-bot","params":${nested(62)}}` });
      expect(res.status, JSON.stringify(res.body).slice(0, 300)).toBe(201);
    });

    test('100,000 levels (past what JSON.parse can take) are a 422 too', async () => {
      const res = await svc.api('POST', '/states', { rawBody: `{"state":${nested(100_000)}}` });
      expect(res.status).toBe(422);
    });
  });

  describe('router errors in the documented shape (defect 5)', () => {
    test('bad percent-encoding: 400 bad_url', async () => {
      expectError(await svc.api('GET', '/agents/%ff'), 400, 'bad_url', 'The path is not validly percent-encoded UTF-8');
    });

    test('a 150-character task name can be fetched by name', async () => {
      await deployActive(svc);
      const name = 'n'.repeat(150);
      const task = await createTask(svc, { name });
      const res = await svc.api('GET', `/tasks/name/${name}`);
      expect(res.status).toBe(200);
      expect(res.body.id).toBe(task.id);
    });

    test('a path parameter over the 255-character name limit: 422 at path.task_name', async () => {
      expectInvalid(await svc.api('GET', `/tasks/name/${'n'.repeat(256)}`), ['path', 'task_name'], 'too_big');
    });

    test('a path parameter past what the router takes: 414 uri_too_long', async () => {
      expectError(await svc.api('GET', `/tasks/name/${'n'.repeat(4000)}`), 414, 'uri_too_long');
    });
  });

  describe('the key is checked before the body is read (defect 6)', () => {
    test('malformed JSON without a key: 401, not 422', async () => {
      const res = await svc.api('POST', '/groups', { rawBody: '{"name":', key: null });
      expectError(res, 401, 'unauthorized');
      expect(res.headers.get('www-authenticate')).toBe('Bearer');
    });

    test('a 2 MiB body with an unknown key: 401, not 413', async () => {
      const res = await svc.api('POST', '/groups', { rawBody: JSON.stringify({ name: 'x'.repeat(2 * 1024 * 1024) }), key: generateSecret() });
      expectError(res, 401, 'unauthorized', 'Invalid API key');
    });

    test('registration (auth optional) needs no key: its body is validated', async () => {
      expectInvalid(await svc.api('POST', '/versions/register', { body: {}, key: null }), ['body', 'version_id'], 'missing');
    });

    test('a slow body: the server answers 408 and closes the connection within the request timeout', async () => {
      const { port } = new URL(svc.url);
      const started = Date.now();
      const socket = net.connect(Number(port), '127.0.0.1');
      let data = '';
      socket.setEncoding('utf8');
      socket.on('data', (chunk) => (data += chunk));
      const closed = new Promise<void>((resolve) => socket.on('close', () => resolve()));
      socket.write(
        `POST /groups HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${svc.adminKey}\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{"name":`,
      );
      // Trickle a byte now and then, as a slow-loris client does: the idle timeout alone would never fire.
      const trickle = setInterval(() => socket.writable && socket.write(' '), 200);
      await closed;
      clearInterval(trickle);
      const elapsed = Date.now() - started;
      expect(elapsed).toBeLessThan(5000);
      expect(data).toMatch(/^HTTP\/1\.1 408 Request Timeout\r\n/);
      expect(JSON.parse(data.split('\r\n\r\n')[1])).toEqual({ detail: 'The request was not received in time', code: 'request_timeout' });
    });

    test('failed authentications are rate limited per client address: 429 with Retry-After, even for a good key', async () => {
      const app = await buildApp({ store: svc.store, config: { rateLimitPerSecond: 0, authFailuresPerSecond: 0.5, authFailureBurst: 3 } });
      await app.listen({ host: '127.0.0.1', port: 0 });
      try {
        const url = `http://127.0.0.1:${(app.server.address() as AddressInfo).port}`;
        const get = (key: string) => fetch(`${url}/whoami`, { headers: { authorization: `Bearer ${key}` } });
        for (let i = 0; i < 3; i++) expect((await get(generateSecret())).status).toBe(401);
        const limited = await get(generateSecret());
        expect(limited.status).toBe(429);
        expect(await limited.json()).toEqual({
          detail: expect.stringMatching(/^Too many requests for this client address: too many failed authentications; retry in \ds$/),
          code: 'rate_limited',
        });
        expect(Number(limited.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
        expect((await get(svc.adminKey)).status).toBe(429);
      } finally {
        await app.close();
      }
    });
  });

  describe('key lookups (defect 6)', () => {
    /** An Authenticator on the test store that counts the queries it sends. */
    function countingAuthenticator(maxEntries?: number) {
      const counter = { queries: 0 };
      const db = svc.store.db.withPlugin({
        transformQuery: (args) => {
          counter.queries++;
          return args.node;
        },
        transformResult: async (args) => args.result,
      });
      return { auth: new Authenticator(db, maxEntries), counter };
    }

    test('an unknown key is looked up once, then answered from the negative cache', async () => {
      const { auth, counter } = countingAuthenticator();
      const unknown = `Bearer ${generateSecret()}`;
      for (let i = 0; i < 5; i++) await expect(auth.authenticate(unknown)).rejects.toThrow('Invalid API key');
      expect(counter.queries).toBe(1);
      await auth.close();
    });

    test('a flood of made-up keys does not evict a good key from the cache', async () => {
      // The clock stands still, so only eviction (not the one-second expiry) could cause a lookup.
      vi.useFakeTimers({ toFake: ['Date'] });
      try {
        const { auth, counter } = countingAuthenticator(10);
        const good = `Bearer ${svc.adminKey}`;
        await auth.authenticate(good);
        for (let i = 0; i < 25; i++) await auth.authenticate(`Bearer ${generateSecret()}`).catch(() => undefined);
        const before = counter.queries;
        await auth.authenticate(good);
        expect(counter.queries).toBe(before);
        await auth.close();
      } finally {
        vi.useRealTimers();
      }
    });
  });

  describe('too lenient no more (defect 7)', () => {
    test('whitespace-only names, branch and email: 422 each', async () => {
      expectInvalid(await svc.api('POST', '/groups', { body: { name: '   ' } }), ['body', 'name']);
      expectInvalid(await svc.api('POST', '/namespaces', { body: { name: ' \t', slug: 'abc' } }), ['body', 'name']);
      for (const field of ['branch', 'author_email', 'author_name']) {
        const res = await svc.api('POST', '/agents/deploy', {
          body: {
            agent_name: 'bot',
            branch: 'main',
            git_hash: 'abcdef0',
            author_name: 'A',
            author_email: 'a@x',
            sdk_type: 'alpha_agent_sdk',
            acp_type: 'async',
            image_url: 'img',
            [field]: '  ',
          },
        });
        expectInvalid(res, ['body', field]);
      }
    });

    test('an empty filter (?agent=) is 422, not "everything"', async () => {
      expectInvalid(await svc.api('GET', '/tasks?agent='), ['query', 'agent'], 'string_too_short');
    });

    test('limit=0x10, +5 and " 5 " are not numbers: 422 at query.limit', async () => {
      for (const limit of ['0x10', '%2B5', '%205%20', '1e1', '5.0', '']) {
        expectInvalid(await svc.api('GET', `/tasks?limit=${limit}`), ['query', 'limit']);
      }
      expect((await svc.api('GET', '/tasks?limit=5&page_number=2')).status).toBe(200);
    });

    test('text/plain: 415', async () => {
      expectError(await svc.api('POST', '/groups', { rawBody: 'name', headers: { 'content-type': 'text/plain' } }), 415, 'unsupported_media_type');
    });

    test('charset=utf-16le: 415; charset=utf-8 is fine', async () => {
      const body = JSON.stringify({ name: 'g' });
      expectError(
        await svc.api('POST', '/groups', { rawBody: body, headers: { 'content-type': 'application/json; charset=utf-16le' } }),
        415,
        'unsupported_media_type',
        'Charset utf-16le is not supported: send JSON as UTF-8',
      );
      expect((await svc.api('POST', '/groups', { rawBody: body, headers: { 'content-type': 'application/json; charset=UTF-8' } })).status).toBe(201);
    });

    test('Content-Encoding gzip: 415', async () => {
      const res = await svc.api('POST', '/groups', { body: { name: 'g' }, headers: { 'content-encoding': 'gzip' } });
      expectError(res, 415, 'unsupported_media_type', 'Content-Encoding gzip is not supported: send the body uncompressed');
    });

    test('source_filesystem_id of a filesystem that does not exist: 404, nothing deployed', async () => {
      const res = await svc.api('POST', '/agents/deploy', {
        body: {
          agent_name: 'bot',
          branch: 'main',
          git_hash: 'abcdef0',
          author_name: 'A',
          author_email: 'a@x',
          sdk_type: 'alpha_agent_sdk',
          acp_type: 'async',
          image_url: 'img',
          source_filesystem_id: 'fs_nope',
        },
      });
      expectError(res, 404, 'not_found', 'Filesystem fs_nope was not found');
      expect((await svc.api('GET', '/agents')).body.total).toBe(0);
    });

    test('source_filesystem_id longer than an id: 422', async () => {
      const res = await svc.api('POST', '/agents/deploy', {
        body: {
          agent_name: 'bot',
          branch: 'main',
          git_hash: 'abcdef0',
          author_name: 'A',
          author_email: 'a@x',
          sdk_type: 'alpha_agent_sdk',
          acp_type: 'async',
          image_url: 'img',
          source_filesystem_id: 'f'.repeat(300),
        },
      });
      expectInvalid(res, ['body', 'source_filesystem_id'], 'too_big');
    });
  });

  describe('what one migration may move is capped (defect 8)', () => {
    test('a bulk migration of 10,001 tasks is 409 naming the cap and how to page; limit pages it', async () => {
      const v1 = await deployActive(svc, { are_tasks_sticky: true });
      const v2 = await deployActive(svc, { are_tasks_sticky: true });
      // 10,001 RUNNING tasks on v1, inserted directly for speed.
      await sql`INSERT INTO filesystems (id, namespace_id) SELECT 'fs_cap' || g, ${await defaultNamespaceId(svc)} FROM generate_series(1, 10001) g`.execute(
        svc.store.db,
      );
      await sql`
        INSERT INTO tasks (id, agent_id, branch_id, namespace_id, filesystem_id, status, created_version_id, current_version_id)
        SELECT 'task_cap' || lpad(g::text, 5, '0'), v.agent_id, v.branch_id, a.namespace_id, 'fs_cap' || g, 'RUNNING', v.id, v.id
        FROM generate_series(1, 10001) g, versions v JOIN agents a ON a.id = v.agent_id WHERE v.id = ${v1.version_id}`.execute(svc.store.db);
      const body = { from_version_id: v1.version_id, to_version_id: v2.version_id };
      const detail = `Version v1 (${v1.version_id}) has 10001 RUNNING tasks; one request moves at most 10000. Page it: send "limit": 10000 and repeat the request until it moves no tasks.`;
      expectError(await svc.api('POST', '/tasks/migrate', { body }), 409, 'migration_too_large', detail);
      expectError(await svc.api('POST', '/tasks/migrate', { body: { ...body, dry_run: true } }), 409, 'migration_too_large', detail);
      const onV1 = async () =>
        (await sql<{ n: number }>`SELECT count(*)::int AS n FROM tasks WHERE current_version_id = ${v1.version_id}`.execute(svc.store.db)).rows[0].n;
      expect(await onV1()).toBe(10001);

      const pages = [];
      for (let i = 0; i < 3; i++) pages.push((await svc.client().migrateTasks({ body: { ...body, limit: 10000 } })).tasks.length);
      expect(pages).toEqual([10000, 1, 0]);
      expect(await onV1()).toBe(0);
    });

    test('limit with task_ids is 422 at body.limit', async () => {
      expectInvalid(await svc.api('POST', '/tasks/migrate', { body: { task_ids: ['task_x'], to_latest: true, limit: 5 } }), ['body', 'limit'], 'value_error');
    });
  });

  describe('existence leaks (defect 4)', () => {
    test('a second org has its own `default` namespace and may reuse another org’s slug', async () => {
      const other = await secondOrg(svc);
      await svc.client().createNamespace({ body: { name: 'Payments', slug: 'payments' } });
      const res = await svc.api('POST', '/namespaces', { body: { name: 'Payments', slug: 'payments' }, key: other });
      expect(res.status).toBe(201);
      expect((await svc.api('GET', '/agents?namespace=payments', { key: other })).body).toEqual({ agents: [], total: 0 });
    });

    test('a slug taken in one’s own org is still 409 namespace_exists', async () => {
      await svc.client().createNamespace({ body: { name: 'Payments', slug: 'payments' } });
      expectError(await svc.api('POST', '/namespaces', { body: { name: 'Again', slug: 'payments' } }), 409, 'namespace_exists');
    });

    test('task names are unique per org: another org may use the same name, and fetches its own task by it', async () => {
      const other = await secondOrg(svc);
      await deployActive(svc);
      await deployActive(svc, { key: other });
      const mine = await createTask(svc, { name: 'nightly' });
      const theirs = await createTask(svc, { name: 'nightly' }, other);
      expect(theirs.id).not.toBe(mine.id);
      const byName = (key?: string) => svc.client(key).getTaskByName({ params: { task_name: 'nightly' } });
      expect((await byName()).id).toBe(mine.id);
      expect((await byName(other)).id).toBe(theirs.id);
    });

    test('a task name taken in one’s own org is 409 task_name_taken', async () => {
      await deployActive(svc);
      await createTask(svc, { name: 'nightly' });
      const res = await svc.api('POST', '/tasks', { body: { agent_name: 'support-bot', name: 'nightly' } });
      expectError(res, 409, 'task_name_taken', 'A task named nightly already exists');
    });

    test('deploy to a hidden agent’s name answers exactly as deploy to an unused name', async () => {
      const visible = await deployActive(svc, { agent: 'visible-bot' });
      await deployActive(svc, { agent: 'hidden-bot' });
      const viewer = await scopedKey(svc, [{ resource_type: 'agent', resource_id: visible.agent_id, role: 'editor' }]);
      const attempt = (agent_name: string) =>
        svc.api('POST', '/agents/deploy', {
          key: viewer,
          body: {
            agent_name,
            branch: 'main',
            git_hash: 'abcdef0',
            author_name: 'A',
            author_email: 'a@x',
            sdk_type: 'alpha_agent_sdk',
            acp_type: 'async',
            image_url: 'img',
          },
        });
      const hidden = await attempt('hidden-bot');
      const unused = await attempt('never-used');
      expect([hidden.status, hidden.body]).toEqual([unused.status, unused.body]);
      expect(hidden.status).toBe(403);
      expect((await attempt('visible-bot')).status).toBe(201);
    });
  });
});
