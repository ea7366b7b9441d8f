import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, test } from 'vitest';
import type { AddressInfo } from 'node:net';
import { createServer } from 'node:http';
import { SIGNATURE_HEADER, verifySignature } from '../../src/contract/acp.js';
import { engines, openTestService, type TestService } from '../support/service.js';
import { createTask, deploy } from '../support/fixtures.js';
import { startAgent, stopAgents, type TestAgent } from '../support/agents.js';
import { readSse } from '../support/sse.js';
import { startDispatcher, type Dispatcher, type DispatcherOptions } from '../../src/server/delivery/dispatcher.js';
import { markReplicaGone } from '../../src/server/domain/registration.js';
import { buildApp } from '../../src/server/app.js';
import { openStore } from '../../src/server/store/db.js';

/** Short delays so retries happen within a test; the budget is long unless a test sets it. */
const FAST: DispatcherOptions = { backoffBaseMs: 20, backoffMaxMs: 200, pollMs: 100, requestTimeoutMs: 5000 };

/** `method` of each delivery the agent received, with the event text for event/send. */
const methods = (agent: TestAgent) =>
  agent.received().map((r) => (r.method === 'event/send' ? `event/send:${r.params.event.content.text}` : r.method));

const deliveriesOf = async (svc: TestService, taskId: string) =>
  svc.store.db.selectFrom('deliveries').select(['method', 'status', 'attempts']).where('task_id', '=', taskId).orderBy('id').execute();

/** The task's deliveries once none is open any more (the agent may answer before the row is marked done). */
async function settledDeliveries(svc: TestService, taskId: string) {
  for (let i = 0; i < 250; i++) {
    const rows = await deliveriesOf(svc, taskId);
    if (rows.every((d) => d.status === 'done' || d.status === 'failed')) return rows;
    await new Promise((r) => setTimeout(r, 20));
  }
  return deliveriesOf(svc, taskId);
}

describe.each(engines)('delivery to agents (%s)', (engine) => {
  let svc: TestService;
  let dispatcher: Dispatcher | undefined;
  beforeAll(async () => {
    svc = await openTestService(engine);
  });
  afterAll(async () => svc?.close());
  beforeEach(async () => {
    await svc.reset();
  });
  afterEach(async () => {
    await dispatcher?.close();
    dispatcher = undefined;
    await stopAgents();
  });

  const sendEvent = async (taskId: string, text: string) => {
    const res = await svc.api('POST', `/tasks/${taskId}/events`, { body: { content: text } });
    expect(res.status, JSON.stringify(res.body)).toBe(201);
    return res.body;
  };

  test('task/create, event/send and task/cancel reach the agent in order, signed, with the task and its params', async () => {
    const v1 = await deploy(svc);
    const agent = await startAgent(svc, v1.version_id);
    dispatcher = await startDispatcher(svc.store, FAST);
    const task = await createTask(svc, { params: { topic: 'x' } });
    const event = await sendEvent(task.id, 'hello');
    expect((await svc.api('POST', `/tasks/${task.id}/cancel`)).status).toBe(200);
    await agent.waitFor(() => agent.received().length === 3);

    expect(methods(agent)).toEqual(['task/create', 'event/send:hello', 'task/cancel']);
    expect(agent.records.filter((r) => r.received).every((r) => r.signature_ok)).toBe(true);
    const [create, send, cancel] = agent.received();
    expect(create.params).toMatchObject({ agent: { id: v1.agent_id, name: 'default/support-bot' }, task: { id: task.id, status: 'RUNNING' }, params: { topic: 'x' } });
    expect(send.params.event).toEqual(event);
    expect(cancel.params.task).toMatchObject({ id: task.id, status: 'CANCELED' });
    // Distinct JSON-RPC ids: the agent deduplicates by them.
    expect(new Set(agent.received().map((r) => r.id)).size).toBe(3);
    expect((await settledDeliveries(svc, task.id)).map((d) => d.status)).toEqual(['done', 'done', 'done']);
  });

  test('a token registration makes the DEPLOYING version ACTIVE and the agent gets its runtime key', async () => {
    const v1 = await deploy(svc);
    const agent = await startAgent(svc, v1.version_id);
    expect(agent.records[0]).toMatchObject({ version_status: 'ACTIVE', has_key: true });
    expect((await svc.api('GET', `/versions/${v1.version_id}`)).body.status).toBe('ACTIVE');
  });

  test('an agent answering 503 is retried: nothing lost, the order kept', async () => {
    const v1 = await deploy(svc);
    const agent = await startAgent(svc, v1.version_id, { AGENT_FAIL_FIRST: '2' });
    dispatcher = await startDispatcher(svc.store, FAST);
    const task = await createTask(svc);
    await sendEvent(task.id, 'one');
    await sendEvent(task.id, 'two');
    await agent.waitFor(() => agent.received().length === 5);

    // The first delivery was refused twice, then each went once, in order.
    expect(methods(agent)).toEqual(['task/create', 'task/create', 'task/create', 'event/send:one', 'event/send:two']);
    expect((await settledDeliveries(svc, task.id)).map((d) => [d.method, d.status, d.attempts])).toEqual([
      ['task/create', 'done', 3],
      ['event/send', 'done', 1],
      ['event/send', 'done', 1],
    ]);
  });

  test('the agent killed mid-delivery and started again: the delivery is repeated and nothing is lost', async () => {
    const v1 = await deploy(svc);
    const first = await startAgent(svc, v1.version_id, { AGENT_HANG_ON: 'event/send' });
    dispatcher = await startDispatcher(svc.store, FAST);
    const task = await createTask(svc);
    await sendEvent(task.id, 'one');
    await sendEvent(task.id, 'two');
    await first.waitFor(() => methods(first).includes('event/send:one'));
    await first.kill('SIGKILL');
    // What the runtime does when a process exits; then it starts a new one.
    await markReplicaGone(svc.store.db, v1.version_id, first.acpUrl);
    const second = await startAgent(svc, v1.version_id);
    await second.waitFor(() => second.received().length === 2);

    expect(methods(first)).toEqual(['task/create', 'event/send:one']);
    expect(methods(second)).toEqual(['event/send:one', 'event/send:two']);
    // The repeated delivery carries the same id, so an agent can tell it already saw it.
    expect(second.received()[0].id).toBe(first.received()[1].id);
  });

  test('deliveries wait while the version has no live replica and go once one registers', async () => {
    const v1 = await deploy(svc);
    dispatcher = await startDispatcher(svc.store, FAST);
    const task = await createTask(svc);
    await sendEvent(task.id, 'early');
    await new Promise((r) => setTimeout(r, 300));
    expect((await deliveriesOf(svc, task.id)).map((d) => [d.status, d.attempts])).toEqual([
      ['pending', 0],
      ['pending', 0],
    ]);
    const agent = await startAgent(svc, v1.version_id);
    await agent.waitFor(() => agent.received().length === 2);
    expect(methods(agent)).toEqual(['task/create', 'event/send:early']);
  });

  test('after a migration the next delivery reaches the new version’s agent', async () => {
    const v1 = await deploy(svc, { are_tasks_sticky: true });
    const old = await startAgent(svc, v1.version_id);
    dispatcher = await startDispatcher(svc.store, FAST);
    const task = await createTask(svc);
    await sendEvent(task.id, 'before');
    await old.waitFor(() => old.received().length === 2);

    const v2 = await deploy(svc, { are_tasks_sticky: true });
    const next = await startAgent(svc, v2.version_id);
    const migrated = await svc.api('POST', '/tasks/migrate', { body: { task_ids: [task.id], to_version_id: v2.version_id } });
    expect(migrated.status, JSON.stringify(migrated.body)).toBe(200);
    await sendEvent(task.id, 'after');
    await next.waitFor(() => next.received().length === 1);

    expect(methods(old)).toEqual(['task/create', 'event/send:before']);
    expect(methods(next)).toEqual(['event/send:after']);
    expect(next.received()[0].params.task.current_version_id).toBe(v2.version_id);
  });

  test('a sync agent gets message/send for a user’s event and its inline reply is recorded as an agent message', async () => {
    const v1 = await deploy(svc, { acp_type: 'sync' });
    const agent = await startAgent(svc, v1.version_id, { AGENT_SYNC_REPLY: 'pong' });
    dispatcher = await startDispatcher(svc.store, FAST);
    const task = await createTask(svc);
    await sendEvent(task.id, 'ping');
    await agent.waitFor(() => agent.received().length === 2);
    expect(agent.received()[1]).toMatchObject({ method: 'message/send', params: { content: { type: 'text', text: 'ping' }, task: { id: task.id } } });

    let messages: any[] = [];
    for (let i = 0; i < 100 && messages.length === 0; i++) {
      messages = (await svc.api('GET', `/messages?task_id=${task.id}`)).body.messages;
      if (messages.length === 0) await new Promise((r) => setTimeout(r, 20));
    }
    expect(messages.map((m) => [m.author, m.content])).toEqual([['agent', { type: 'text', text: 'pong' }]]);
  });

  test('a runtime with no driver registers the version with a key and acp_url: deliveries go there, signed', async () => {
    const v1 = await deploy(svc);
    const received: { method: string; signed: boolean }[] = [];
    const secret = (await svc.api('GET', `/versions/${v1.version_id}/signing-secret`)).body.signing_secret;
    const agent = createServer((req, res) => {
      let body = '';
      req.on('data', (c) => (body += c));
      req.on('end', () => {
        const rpc = JSON.parse(body);
        received.push({ method: rpc.method, signed: verifySignature(secret, body, req.headers[SIGNATURE_HEADER] as string).ok });
        res.setHeader('content-type', 'application/json');
        res.end(JSON.stringify({ jsonrpc: '2.0', id: rpc.id, result: { accepted: true } }));
      });
    });
    await new Promise<void>((resolve) => agent.listen(0, '127.0.0.1', resolve));
    try {
      const acpUrl = `http://127.0.0.1:${(agent.address() as AddressInfo).port}`;
      const registered = await svc.api('POST', '/versions/register', { body: { version_id: v1.version_id, acp_url: acpUrl } });
      expect(registered.status).toBe(200);
      expect(registered.body.version_status).toBe('ACTIVE');
      expect(registered.body.agent_api_key).toBeUndefined();
      dispatcher = await startDispatcher(svc.store, FAST);
      await createTask(svc);
      for (let i = 0; i < 250 && received.length === 0; i++) await new Promise((r) => setTimeout(r, 20));
      expect(received).toEqual([{ method: 'task/create', signed: true }]);
    } finally {
      await new Promise((r) => agent.close(r));
    }
  });

  test('past the retry budget the task becomes FAILED, naming the cause', async () => {
    const v1 = await deploy(svc);
    const agent = await startAgent(svc, v1.version_id);
    // Gone without the runtime noticing: its replica still looks live, every call is refused.
    await agent.kill('SIGKILL');
    dispatcher = await startDispatcher(svc.store, { ...FAST, retryBudgetMs: 300 });
    const task = await createTask(svc);
    await sendEvent(task.id, 'lost');

    let current: any;
    for (let i = 0; i < 200; i++) {
      current = (await svc.api('GET', `/tasks/${task.id}`)).body;
      if (current.status === 'FAILED') break;
      await new Promise((r) => setTimeout(r, 25));
    }
    expect(current.status).toBe('FAILED');
    expect(current.status_reason).toBe('Delivery failed: task/create could not be delivered to the agent within 300 ms (connection refused)');
    expect((await settledDeliveries(svc, task.id)).map((d) => d.status)).toEqual(['failed', 'failed']);
    // Watchers see it: the stream ends with the FAILED task record.
    const stream = await readSse(svc, `/tasks/${task.id}/stream`, { key: svc.adminKey });
    expect(stream.ended).toBe(true);
    expect(stream.frames.at(-1)).toMatchObject({ event: 'task', data: { status: 'FAILED', status_reason: current.status_reason } });
  });

  test.runIf(engine === 'postgres')('two server instances on one database: each delivery is made by exactly one of them', async () => {
    const v1 = await deploy(svc);
    const agent = await startAgent(svc, v1.version_id);
    const otherStore = await openStore({ databaseUrl: svc.store.databaseUrl });
    const otherApp = await buildApp({ store: otherStore, config: { rateLimitPerSecond: 0 } });
    await otherApp.listen({ host: '127.0.0.1', port: 0 });
    const otherUrl = `http://127.0.0.1:${(otherApp.server.address() as AddressInfo).port}`;
    const otherDispatcher = await startDispatcher(otherStore, FAST);
    dispatcher = await startDispatcher(svc.store, FAST);
    try {
      const tasks = await Promise.all(Array.from({ length: 10 }, () => createTask(svc)));
      const posts = [];
      for (const [i, task] of tasks.entries()) {
        for (let n = 0; n < 4; n++) {
          const base = (i + n) % 2 === 0 ? svc.url : otherUrl;
          posts.push(
            fetch(`${base}/tasks/${task.id}/events`, {
              method: 'POST',
              headers: { authorization: `Bearer ${svc.adminKey}`, 'content-type': 'application/json' },
              body: JSON.stringify({ content: `e${n}` }),
            }),
          );
          // Per task, one after another: the order the agent must see.
          await posts.at(-1);
        }
      }
      expect((await Promise.all(posts)).map((r) => r.status)).toEqual(Array(40).fill(201));
      await agent.waitFor(() => agent.received().length >= 50, 20_000);
      await new Promise((r) => setTimeout(r, 200));

      const ids = agent.received().map((r) => r.id);
      expect(ids.length).toBe(50);
      expect(new Set(ids).size).toBe(50);
      for (const task of tasks) {
        const seen = agent.received().filter((r) => r.params.task.id === task.id).map((r) => (r.method === 'event/send' ? r.params.event.content.text : r.method));
        expect(seen).toEqual(['task/create', 'e0', 'e1', 'e2', 'e3']);
      }
      for (const task of tasks) expect((await settledDeliveries(svc, task.id)).every((d) => d.status === 'done')).toBe(true);
    } finally {
      await otherDispatcher.close();
      await otherApp.close();
      await otherStore.close();
    }
  });
});
