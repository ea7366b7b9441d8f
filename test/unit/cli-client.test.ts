import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { afterEach, describe, expect, test } from 'vitest';
import { ApiRequestError, createClient, ResponseShapeError, UnreachableError, parseRetryAfter } from '../../src/client/index.js';
import { endpoints } from '../../src/contract/endpoints.js';

let server: Server | undefined;
afterEach(async () => {
  await new Promise((resolve) => (server ? server.close(resolve) : resolve(undefined)));
  server = undefined;
});

/** A local HTTP server answering each request with the next scripted handler. */
async function serve(
  ...handlers: ((req: IncomingMessage, res: ServerResponse) => void)[]
): Promise<{ url: string; requests: { method: string; url: string; auth?: string; body: string }[] }> {
  const requests: { method: string; url: string; auth?: string; body: string }[] = [];
  server = createServer((req, res) => {
    let body = '';
    req.on('data', (c) => (body += c));
    req.on('end', () => {
      requests.push({ method: req.method!, url: req.url!, auth: req.headers.authorization, body });
      const handler = handlers[Math.min(requests.length - 1, handlers.length - 1)];
      handler(req, res);
    });
  });
  await new Promise<void>((resolve) => server!.listen(0, '127.0.0.1', resolve));
  return { url: `http://127.0.0.1:${(server!.address() as { port: number }).port}`, requests };
}

const json =
  (status: number, body: unknown, headers: Record<string, string> = {}) =>
  (_req: IncomingMessage, res: ServerResponse) => {
    res.writeHead(status, { 'content-type': 'application/json', ...headers });
    res.end(JSON.stringify(body));
  };
const groups = { groups: [], total: 0 };

describe('typed client', () => {
  test('has one method per endpoint of the table', () => {
    const client = createClient({ baseUrl: 'http://127.0.0.1:1' });
    for (const name of Object.keys(endpoints)) expect(typeof (client as unknown as Record<string, unknown>)[name]).toBe('function');
  });

  test('builds the path and query, sends the bearer key and parses the response', async () => {
    const remote = await serve(json(200, { branches: [], total: 0 }));
    const client = createClient({ baseUrl: `${remote.url}/`, apiKey: 'agk_test' });
    expect(await client.listAgentBranches({ params: { namespace_slug: 'default', agent_name: 'my bot' }, query: { include_retired: 'true' } })).toEqual({
      branches: [],
      total: 0,
    });
    expect(remote.requests).toEqual([{ method: 'GET', url: '/agents/default/my%20bot/branches?include_retired=true', auth: 'Bearer agk_test', body: '' }]);
  });

  test('an idempotent request is retried after 503, honouring Retry-After', async () => {
    const remote = await serve(json(503, { detail: 'busy', code: 'retry' }, { 'retry-after': '0' }), json(200, groups));
    const client = createClient({ baseUrl: remote.url, backoffMs: 1 });
    expect(await client.listGroups()).toEqual(groups);
    expect(remote.requests).toHaveLength(2);
  });

  test('429 on a request that is not idempotent is not retried', async () => {
    const remote = await serve(json(429, { detail: 'Slow down', code: 'rate_limited' }, { 'retry-after': '7' }));
    const client = createClient({ baseUrl: remote.url, backoffMs: 1 });
    const error = await client.createGroup({ body: { name: 'g' } }).catch((e) => e);
    expect(error).toBeInstanceOf(ApiRequestError);
    expect(error).toMatchObject({ status: 429, code: 'rate_limited', retryAfter: 7 });
    expect(remote.requests).toHaveLength(1);
  });

  test('a dropped connection is retried for idempotent requests, then reported as unreachable', async () => {
    const remote = await serve((req) => req.socket.destroy());
    const client = createClient({ baseUrl: remote.url, retries: 2, backoffMs: 1 });
    await expect(client.listGroups()).rejects.toBeInstanceOf(UnreachableError);
    expect(remote.requests).toHaveLength(3);
  });

  const event = {
    id: 'evt_1',
    task_id: 'task_1',
    agent_id: 'agt_1',
    sequence_id: 1,
    content: { type: 'text', text: 'hi' },
    created_at: '2026-01-02T03:04:05.000Z',
  };
  const idempotencyKeys: (string | undefined)[] = [];
  const keyed = (handler: (req: IncomingMessage, res: ServerResponse) => void) => (req: IncomingMessage, res: ServerResponse) => {
    idempotencyKeys.push(req.headers['idempotency-key'] as string | undefined);
    handler(req, res);
  };
  afterEach(() => void idempotencyKeys.splice(0));

  test('an endpoint that takes an Idempotency-Key gets a fresh one per call, the same on each retry, so the create is retried', async () => {
    const remote = await serve(keyed(json(503, { detail: 'busy', code: 'retry' }, { 'retry-after': '0' })), keyed(json(201, event)), keyed(json(201, event)));
    const client = createClient({ baseUrl: remote.url, backoffMs: 1 });
    await client.createEvent({ params: { task_id: 'task_1' }, body: { content: 'hi' } });
    await client.createEvent({ params: { task_id: 'task_1' }, body: { content: 'hi' } });
    expect(idempotencyKeys).toHaveLength(3);
    expect(idempotencyKeys[0]).toMatch(/^[0-9a-f-]{36}$/);
    expect(idempotencyKeys[1]).toBe(idempotencyKeys[0]);
    expect(idempotencyKeys[2]).not.toBe(idempotencyKeys[0]);
  });

  test("the caller's own Idempotency-Key is sent as it is; an endpoint without the flag gets none", async () => {
    const remote = await serve(keyed(json(201, event)), keyed(json(200, groups)));
    const client = createClient({ baseUrl: remote.url });
    await client.createEvent({ params: { task_id: 'task_1' }, body: { content: 'hi' } }, { headers: { 'Idempotency-Key': 'mine' } });
    await client.listGroups();
    expect(idempotencyKeys).toEqual(['mine', undefined]);
  });

  test('a request slower than the timeout fails as unreachable (timed out)', async () => {
    await serve(() => {});
    const client = createClient({ baseUrl: `http://127.0.0.1:${(server!.address() as { port: number }).port}`, timeoutMs: 50, retries: 0 });
    await expect(client.listGroups()).rejects.toMatchObject({ name: 'UnreachableError', reason: 'timed out' });
  });

  test('422 keeps the validation items', async () => {
    const remote = await serve(json(422, { detail: [{ loc: ['body', 'name'], msg: 'Field required', type: 'missing' }] }));
    const error = await createClient({ baseUrl: remote.url })
      .createGroup({ body: { name: '' } })
      .catch((e) => e);
    expect(error).toMatchObject({ status: 422, code: 'validation_error', message: 'body.name: Field required' });
  });

  test('an answer that breaks the contract is a ResponseShapeError', async () => {
    const remote = await serve(json(200, { groups: 'nope' }));
    await expect(createClient({ baseUrl: remote.url }).listGroups()).rejects.toBeInstanceOf(ResponseShapeError);
  });

  test('a short-lived client (the CLI) parses with the generated shapes: unknown keys dropped, a broken answer refused naming the field', async () => {
    const remote = await serve(json(200, { id: 'grp_1', message: 'Deleted', from_a_newer_server: true }), json(200, { id: 7, message: 'Deleted' }));
    const client = createClient({ baseUrl: remote.url, shortLived: true });
    expect(await client.deleteGroup({ params: { group_id: 'grp_1' } })).toStrictEqual({ id: 'grp_1', message: 'Deleted' });
    const error = await client.deleteGroup({ params: { group_id: 'grp_1' } }).catch((e) => e);
    expect(error).toBeInstanceOf(ResponseShapeError);
    expect(error.message).toBe(
      "The service's answer to DELETE /groups/:group_id does not match this agentctl's contract: id: expected string, received number",
    );
  });

  test('--debug lines redact the Authorization header and secrets in bodies', async () => {
    const secret = `agk_${'b'.repeat(49)}`;
    const remote = await serve(
      json(201, {
        api_key: {
          id: 'key_1',
          org_id: 'o',
          name: 'n',
          description: '',
          key_prefix: secret.slice(0, 12),
          scopes: [],
          sharing_group_ids: [],
          expires_at: null,
          revoked_at: null,
          last_used_at: null,
          created_at: 't',
          updated_at: 't',
        },
        secret,
      }),
    );
    const lines: string[] = [];
    await createClient({ baseUrl: remote.url, apiKey: `agk_${'a'.repeat(49)}`, debug: (l) => lines.push(l) }).createKey({
      body: { name: 'n', scopes: [{ resource_type: 'org', resource_id: 'o', role: 'admin' }] },
    });
    const trace = lines.join('\n');
    expect(trace).toContain('"authorization":"Bearer [redacted]"');
    expect(trace).toContain('"secret":"[redacted]"');
    expect(trace).not.toMatch(/agk_[ab]{4}/);
  });

  test('Retry-After as seconds or an HTTP date', () => {
    expect(parseRetryAfter('3')).toBe(3);
    expect(parseRetryAfter(new Date(Date.now() + 10_000).toUTCString())).toBeGreaterThan(8);
    expect(parseRetryAfter(null)).toBeUndefined();
  });
});
