import { beforeEach, describe, expect, test } from 'vitest';
import { sql } from 'kysely';
import { engines, useService } from '../support/service.js';
import { createTask, deployActive, nextHash, type Deployed } from '../support/fixtures.js';
import { expectInvalid } from '../support/bad-input.js';
import { scopedKey } from '../support/scoped-key.js';
import { sweepIdempotencyRecords } from '../../src/server/idempotency.js';

describe.each(engines)('Idempotency-Key (%s)', (engine) => {
  const svc = useService(engine);
  let agent: Deployed;
  let task: { id: string };
  beforeEach(async () => {
    agent = await deployActive(svc);
    task = await createTask(svc);
  });

  const post = (path: string, body: unknown, key: string, apiKey?: string) => svc.api('POST', path, { body, key: apiKey, headers: { 'idempotency-key': key } });
  const count = async (table: 'events' | 'messages' | 'tasks' | 'states' | 'versions') =>
    Number((await sql<{ n: number }>`SELECT count(*)::int AS n FROM ${sql.table(table)}`.execute(svc.store.db)).rows[0]!.n);

  test('a retry with the same key and body gets the first response and creates nothing', async () => {
    const first = await post(`/tasks/${task.id}/events`, { content: 'hello' }, 'retry-1');
    const second = await post(`/tasks/${task.id}/events`, { content: 'hello' }, 'retry-1');
    expect(first.status).toBe(201);
    expect(second.status).toBe(201);
    expect(second.body).toEqual(first.body);
    expect(first.headers.get('idempotent-replayed')).toBeNull();
    expect(second.headers.get('idempotent-replayed')).toBe('true');
    expect(await count('events')).toBe(1);
  });

  test('the same key with a different body is a 422 naming the header', async () => {
    await post(`/tasks/${task.id}/events`, { content: 'hello' }, 'reused');
    const res = await post(`/tasks/${task.id}/events`, { content: 'goodbye' }, 'reused');
    expectInvalid(res, ['header', 'idempotency-key'], 'idempotency_key_reused');
    expect(await count('events')).toBe(1);
  });

  test('the same key on another task (path) is a different request: 422', async () => {
    const other = await createTask(svc);
    await post(`/tasks/${task.id}/events`, { content: 'x' }, 'path-bound');
    expectInvalid(await post(`/tasks/${other.id}/events`, { content: 'x' }, 'path-bound'), ['header', 'idempotency-key']);
  });

  test('key order in the JSON body does not make it a different body', async () => {
    const a = await post('/messages', { task_id: task.id, content: 'x', author: 'user' }, 'order');
    const b = await post('/messages', { author: 'user', content: 'x', task_id: task.id }, 'order');
    expect(b.status).toBe(201);
    expect(b.body).toEqual(a.body);
  });

  test('concurrent duplicates create one record and all get its response', async () => {
    const results = await Promise.all(Array.from({ length: 12 }, () => post(`/tasks/${task.id}/events`, { content: 'once' }, 'concurrent')));
    expect(results.map((r) => r.status)).toEqual(Array(12).fill(201));
    expect(new Set(results.map((r) => r.body.id)).size).toBe(1);
    expect(await count('events')).toBe(1);
  });

  test('concurrent task creates with one key make one task', async () => {
    const results = await Promise.all(Array.from({ length: 8 }, () => post('/tasks', { agent_name: 'default/support-bot', params: { n: 1 } }, 'task-once')));
    expect(results.map((r) => r.status)).toEqual(Array(8).fill(201));
    expect(new Set(results.map((r) => r.body.id)).size).toBe(1);
    expect(await count('tasks')).toBe(2);
  });

  test('every creating POST honours the key: deploy, tasks, states, events, messages, handler errors', async () => {
    const deployBody = {
      agent_name: 'support-bot',
      branch: 'main',
      git_hash: nextHash(),
      git_message: 'm',
      author_name: 'A',
      author_email: 'a@example.com',
      image_url: 'registry.local/x:1',
      sdk_type: 'alpha_agent_sdk',
      acp_type: 'async',
    };
    const cases: [string, unknown, () => Promise<number>][] = [
      ['/agents/deploy', deployBody, () => count('versions')],
      ['/tasks', { agent_name: 'default/support-bot' }, () => count('tasks')],
      ['/states', { task_id: task.id, agent_id: agent.agent_id, state: { a: 1 } }, () => count('states')],
      [`/tasks/${task.id}/events`, { content: 'e' }, () => count('events')],
      ['/messages', { task_id: task.id, content: 'm' }, () => count('messages')],
      [`/tasks/${task.id}/handler-errors`, { handler: 'onCreate', message: 'boom' }, () => count('messages')],
    ];
    for (const [path, body, counter] of cases) {
      const first = await post(path, body, `every-${path}`);
      expect(first.status, `${path}: ${JSON.stringify(first.body)}`).toBeLessThan(300);
      const before = await counter();
      const again = await post(path, body, `every-${path}`);
      expect(again.status, path).toBe(first.status);
      expect(again.body, path).toEqual(first.body);
      expect(await counter(), path).toBe(before);
    }
  });

  test('keys are per API key: another key with the same Idempotency-Key makes its own record', async () => {
    const other = await scopedKey(svc, [{ resource_type: 'agent', resource_id: agent.agent_id, role: 'viewer' }]);
    const mine = await post(`/tasks/${task.id}/events`, { content: 'x' }, 'shared-name');
    const theirs = await post(`/tasks/${task.id}/events`, { content: 'x' }, 'shared-name', other);
    expect(theirs.status).toBe(201);
    expect(theirs.body.id).not.toBe(mine.body.id);
  });

  test('a failed request stores nothing: the retry runs again', async () => {
    const body = { agent_name: 'default/later-bot' };
    expect((await post('/tasks', body, 'after-deploy')).status).toBe(404);
    await deployActive(svc, { agent: 'later-bot' });
    const retry = await post('/tasks', body, 'after-deploy');
    expect(retry.status).toBe(201);
    expect(retry.headers.get('idempotent-replayed')).toBeNull();
  });

  test('a record older than 24 hours no longer answers: the request runs again', async () => {
    const first = await post(`/tasks/${task.id}/events`, { content: 'x' }, 'old');
    await sql`UPDATE idempotency_records SET created_at = now() - interval '25 hours'`.execute(svc.store.db);
    const again = await post(`/tasks/${task.id}/events`, { content: 'x' }, 'old');
    expect(again.status).toBe(201);
    expect(again.body.id).not.toBe(first.body.id);
  });

  test('the hourly sweep deletes records past 24 hours and keeps younger ones', async () => {
    await post(`/tasks/${task.id}/events`, { content: 'x' }, 'stale');
    await post(`/tasks/${task.id}/events`, { content: 'x' }, 'fresh');
    await sql`UPDATE idempotency_records SET created_at = now() - interval '25 hours' WHERE idempotency_key = 'stale'`.execute(svc.store.db);
    expect(await sweepIdempotencyRecords(svc.store.db)).toBe(1);
    const left = await sql<{ idempotency_key: string }>`SELECT idempotency_key FROM idempotency_records WHERE idempotency_key IN ('stale', 'fresh')`.execute(
      svc.store.db,
    );
    expect(left.rows.map((r) => r.idempotency_key)).toEqual(['fresh']);
  });

  test('an Idempotency-Key that is empty or too long is a 422 naming the header', async () => {
    expectInvalid(await post(`/tasks/${task.id}/events`, { content: 'x' }, 'k'.repeat(256)), ['header', 'idempotency-key']);
    expect(await count('events')).toBe(0);
  });

  test('routes without idempotency support ignore the header', async () => {
    const res = await svc.api('POST', `/tasks/${task.id}/cancel`, { headers: { 'idempotency-key': 'ignored' } });
    expect(res.status).toBe(200);
    expect(await count('events')).toBe(0);
    // The setup's creates (through the typed client, which sends a key) have records; the cancel has none.
    expect(
      (await sql<{ n: number }>`SELECT count(*)::int AS n FROM idempotency_records WHERE idempotency_key = 'ignored'`.execute(svc.store.db)).rows[0]!.n,
    ).toBe(0);
  });
});
