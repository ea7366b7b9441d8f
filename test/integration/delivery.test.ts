import { afterEach, describe, expect, test } from 'vitest';
import type { AddressInfo } from 'node:net';
import { createServer } from 'node:http';
import { SIGNATURE_HEADER, verifySignature } from '../../src/contract/acp.js';
import type { Message } from '../../src/contract/conversation.js';
import { engines, useService, type TestService } from '../support/service.js';
import { createTask, deploy } from '../support/fixtures.js';
import { startAgent, stopAgents, type TestAgent } from '../support/agents.js';
import { readSse } from '../support/sse.js';
import { Dispatcher, startDispatcher, type DispatcherOptions } from '../../src/server/delivery/dispatcher.js';
import { markReplicaGone } from '../../src/server/domain/registration.js';
import { REPLICA_GONE_REASON } from '../../src/server/domain/deliveries.js';
import { buildApp } from '../../src/server/app.js';
import { openStore } from '../../src/server/store/db.js';
import { sql } from 'kysely';

/** Short delays so retries happen within a test; the budget is long unless a test sets it. */
const FAST: DispatcherOptions = { backoffBaseMs: 20, backoffMaxMs: 200, pollMs: 100, requestTimeoutMs: 5000 };

/** `method` of each delivery the agent received, with the event text for event/send. */
const methods = (agent: TestAgent) => agent.received().map((r) => (r.method === 'event/send' ? `event/send:${r.params.event.content.text}` : r.method));

const deliveriesOf = async (svc: TestService, taskId: string) =>
  svc.store.db.selectFrom('deliveries').select(['method', 'status', 'attempts']).where('task_id', '=', taskId).orderBy('id').execute();

/** The agent calls the service with its own runtime key (test/fixtures/delivery/agent.mjs `/test/call`). */
async function asAgent(agent: TestAgent, method: string, path: string, body?: unknown): Promise<{ status: number; body: any }> {
  const res = await fetch(`${agent.acpUrl}/test/call`, { method: 'POST', body: JSON.stringify({ method, path, body }) });
  return (await res.json()) as { status: number; body: any };
}

/** Polls until `probe` holds (delivery states change in the background). */
async function until(what: string, probe: () => Promise<boolean>, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await probe())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

/** The agent's next answer to a delivery that takes them carries these completions (test/fixtures/delivery/agent.mjs `/test/carry`). */
async function carry(agent: TestAgent, ids: string[]): Promise<void> {
  await fetch(`${agent.acpUrl}/test/carry`, { method: 'POST', body: JSON.stringify({ ids }) });
}

const statusesOf = async (svc: TestService, taskId: string) => (await deliveriesOf(svc, taskId)).map((d) => d.status);

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
  const svc = useService(engine);
  let dispatcher: Dispatcher | undefined;
  afterEach(async () => {
    await dispatcher?.close();
    dispatcher = undefined;
    await stopAgents();
  });

  const sendEvent = (taskId: string, text: string) => svc.client().createEvent({ params: { task_id: taskId }, body: { content: text } });
  const migrate = (taskId: string, versionId: string) => svc.client().migrateTasks({ body: { task_ids: [taskId], to_version_id: versionId } });
  const getTask = (taskId: string) => svc.client().getTask({ params: { task_id: taskId } });

  test('task/create, event/send and task/cancel reach the agent in order, signed, with the task and its params', async () => {
    const v1 = await deploy(svc);
    const agent = await startAgent(svc, v1.version_id);
    dispatcher = await startDispatcher(svc.store, FAST);
    const task = await createTask(svc, { params: { topic: 'x' } });
    const event = await sendEvent(task.id, 'hello');
    await svc.client().cancelTask({ params: { task_id: task.id } });
    await agent.waitFor(() => agent.received().length === 3);

    expect(methods(agent)).toEqual(['task/create', 'event/send:hello', 'task/cancel']);
    expect(agent.records.filter((r) => r.received).every((r) => r.signature_ok)).toBe(true);
    const [create, send, cancel] = agent.received();
    expect(create.params).toMatchObject({
      agent: { id: v1.agent_id, name: 'default/support-bot' },
      task: { id: task.id, status: 'RUNNING' },
      params: { topic: 'x' },
    });
    expect(send.params.event).toEqual(event);
    expect(cancel.params.task).toMatchObject({ id: task.id, status: 'CANCELED' });
    // Distinct JSON-RPC ids: the agent deduplicates by them.
    expect(new Set(agent.received().map((r) => r.id)).size).toBe(3);
    expect((await settledDeliveries(svc, task.id)).map((d) => d.status)).toEqual(['done', 'done', 'done']);
  });

  // The dispatcher's claim statements run meanwhile (the one after the task/create turn, the poll):
  // the claim at insert waits for one that holds every free slot rather than give the event up to it.
  test('an event to a task with nothing open is written claimed by the dispatcher here and sent; one behind an open turn waits pending', async () => {
    const v1 = await deploy(svc);
    const agent = await startAgent(svc, v1.version_id, { AGENT_HANG_ON: 'event/send' });
    dispatcher = await startDispatcher(svc.store, FAST);
    const task = await createTask(svc);
    await settledDeliveries(svc, task.id);
    await sendEvent(task.id, 'one');
    await sendEvent(task.id, 'two');
    await agent.waitFor(() => methods(agent).includes('event/send:one'));

    const rows = await svc.store.db
      .selectFrom('deliveries')
      .select(['method', 'status', 'attempts', 'claimed_by', sql<boolean>`updated_at = created_at`.as('same_statement')])
      .where('task_id', '=', task.id)
      .orderBy('id')
      .execute();
    // The first event's delivery went in claimed (claimed in the statement that wrote it: no later
    // claim touched it); the second waits behind it, one in flight per task.
    expect(rows.slice(1)).toEqual([
      { method: 'event/send', status: 'in_flight', attempts: 1, claimed_by: dispatcher.id, same_statement: true },
      { method: 'event/send', status: 'pending', attempts: 0, claimed_by: null, same_statement: true },
    ]);
    expect(methods(agent)).toEqual(['task/create', 'event/send:one']);
    await agent.kill('SIGKILL');
  });

  // The event's statement need not wait for the write of the task's last turn (two commits one after
  // the other): it counts that turn as done, and the event is sent once the write ran. Held here by a
  // lock on the turn's row, which only PostgreSQL can hold while other statements run.
  test.runIf(engine === 'postgres')(
    'an event posted while the task’s last turn is being written done is claimed as it goes in, and sent once that write ran',
    async () => {
      const v1 = await deploy(svc);
      const received: string[] = [];
      let answerOne: (() => void) | undefined;
      const agent = createServer((req, res) => {
        let body = '';
        req.on('data', (c) => (body += c));
        req.on('end', () => {
          const rpc = JSON.parse(body);
          const text = rpc.method === 'event/send' ? rpc.params.event.content.text : rpc.method;
          received.push(text);
          const answer = () => {
            res.setHeader('content-type', 'application/json');
            res.end(JSON.stringify({ jsonrpc: '2.0', id: rpc.id, result: { accepted: true } }));
          };
          if (text === 'one') answerOne = answer;
          else answer();
        });
      });
      await new Promise<void>((resolve) => agent.listen(0, '127.0.0.1', resolve));
      let release = () => {};
      let holder: Promise<unknown> = Promise.resolve();
      try {
        const acpUrl = `http://127.0.0.1:${(agent.address() as AddressInfo).port}`;
        expect((await svc.api('POST', '/versions/register', { body: { version_id: v1.version_id, acp_url: acpUrl } })).status).toBe(200);
        dispatcher = await startDispatcher(svc.store, FAST);
        const task = await createTask(svc);
        await settledDeliveries(svc, task.id);
        await sendEvent(task.id, 'one');
        await until('the agent has "one"', async () => answerOne !== undefined);
        const one = await svc.store.db
          .selectFrom('deliveries')
          .select('id')
          .where('task_id', '=', task.id)
          .where('status', '=', 'in_flight')
          .executeTakeFirstOrThrow();
        // Another session holds the row of "one": the dispatcher's write of it done waits for it.
        const held = new Promise<void>((resolve) => (release = resolve));
        let locked = () => {};
        const isLocked = new Promise<void>((resolve) => (locked = resolve));
        holder = svc.store.db.transaction().execute(async (trx) => {
          await sql`SELECT id FROM deliveries WHERE id = ${one.id} FOR UPDATE`.execute(trx);
          locked();
          await held;
        });
        await isLocked;
        answerOne!();
        await until('the write of "one" done waits for its row', async () => {
          const waiting = await sql<{ n: number }>`
          SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'`.execute(svc.store.db);
          return waiting.rows[0].n > 0;
        });

        const posted = sendEvent(task.id, 'two');
        await until('"two" is written while that write waits', async () => (await deliveriesOf(svc, task.id)).length === 3);
        await posted;
        // Claimed by the dispatcher as it went in; not sent while "one" is not written done.
        expect(await deliveriesOf(svc, task.id)).toEqual([
          { method: 'task/create', status: 'done', attempts: 1 },
          { method: 'event/send', status: 'in_flight', attempts: 1 },
          { method: 'event/send', status: 'in_flight', attempts: 1 },
        ]);
        expect(received).toEqual(['task/create', 'one']);

        release();
        await holder;
        await until('"two" reaches the agent', async () => received.length === 3);
        expect(received).toEqual(['task/create', 'one', 'two']);
        expect((await settledDeliveries(svc, task.id)).map((d) => d.status)).toEqual(['done', 'done', 'done']);
      } finally {
        release();
        await holder.catch(() => {});
        await new Promise((r) => agent.close(r));
      }
    },
  );

  test('a token registration makes the DEPLOYING version ACTIVE and the agent gets its runtime key', async () => {
    const v1 = await deploy(svc);
    const agent = await startAgent(svc, v1.version_id);
    expect(agent.records[0]).toMatchObject({ version_status: 'ACTIVE', has_key: true });
    expect((await svc.client().getVersion({ params: { version_id: v1.version_id } })).status).toBe('ACTIVE');
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
    await migrate(task.id, v2.version_id);
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

    let messages: Message[] = [];
    for (let i = 0; i < 100 && messages.length === 0; i++) {
      messages = (await svc.client().listMessages({ query: { task_id: task.id } })).messages;
      if (messages.length === 0) await new Promise((r) => setTimeout(r, 20));
    }
    expect(messages.map((m) => [m.author, m.content])).toEqual([['agent', { type: 'text', text: 'pong' }]]);
  });

  test('a runtime with no driver registers the version with a key and acp_url: deliveries go there, signed', async () => {
    const v1 = await deploy(svc);
    const received: { method: string; signed: boolean }[] = [];
    const { signing_secret: secret } = await svc.client().getSigningSecret({ params: { version_id: v1.version_id } });
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

    let current = await getTask(task.id);
    for (let i = 0; i < 200; i++) {
      current = await getTask(task.id);
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

  test('an agent that takes the completion lease holds the task’s next delivery until it reports completion with its runtime key', async () => {
    const v1 = await deploy(svc);
    const agent = await startAgent(svc, v1.version_id, { AGENT_DEFER: '1' });
    dispatcher = await startDispatcher(svc.store, { ...FAST, leaseMs: 60_000 });
    const task = await createTask(svc);
    await sendEvent(task.id, 'one');
    await agent.waitFor(() => agent.received().length === 1);
    const [create] = agent.received();
    expect(create.params.lease_ms).toBe(60_000);
    await until('task/create leased', async () => (await statusesOf(svc, task.id))[0] === 'leased');
    // The event waits behind the leased task/create: one in flight per task.
    await new Promise((r) => setTimeout(r, 300));
    expect(methods(agent)).toEqual(['task/create']);
    expect(await statusesOf(svc, task.id)).toEqual(['leased', 'pending']);

    // Renewing starts the lease over; the answer says until when.
    const renewed = await asAgent(agent, 'POST', `/deliveries/${create.id}/renew`);
    expect(renewed.status).toBe(200);
    expect(renewed.body).toMatchObject({ id: create.id, task_id: task.id, method: 'task/create', status: 'leased', attempts: 1 });
    expect(Date.parse(renewed.body.lease_expires_at) - Date.now()).toBeGreaterThan(50_000);

    // Another agent's runtime key cannot see the delivery, let alone complete it.
    const other = await deploy(svc, { agent: 'other-bot' });
    const stranger = await startAgent(svc, other.version_id);
    expect(await asAgent(stranger, 'POST', `/deliveries/${create.id}/complete`)).toEqual({
      status: 404,
      body: { detail: `Delivery ${create.id} was not found`, code: 'not_found' },
    });
    expect(await statusesOf(svc, task.id)).toEqual(['leased', 'pending']);

    const completed = await asAgent(agent, 'POST', `/deliveries/${create.id}/complete`);
    expect(completed).toEqual({
      status: 200,
      body: { id: create.id, task_id: task.id, method: 'task/create', status: 'done', attempts: 1, lease_expires_at: null },
    });
    await agent.waitFor(() => agent.received().length === 2);
    expect(methods(agent)).toEqual(['task/create', 'event/send:one']);
    // Completing again answers the same; a delivery not sent yet cannot be completed.
    expect((await asAgent(agent, 'POST', `/deliveries/${create.id}/complete`)).body.status).toBe('done');
    const event = await sendEvent(task.id, 'two');
    const unsent = await svc.store.db
      .selectFrom('deliveries')
      .select(sql<string>`id::text`.as('id'))
      .where('event_id', '=', event.id)
      .executeTakeFirstOrThrow();
    expect(await asAgent(agent, 'POST', `/deliveries/${unsent.id}/complete`)).toEqual({
      status: 409,
      body: { detail: `Delivery ${unsent.id} has not been sent to the agent yet`, code: 'delivery_not_sent' },
    });
    expect((await asAgent(agent, 'POST', '/deliveries/not-a-number/complete')).status).toBe(422);
  });

  test('the claim over every task reaches past a head of the order it can claim nothing more of: a task behind another’s queue is not held up', async () => {
    const v1 = await deploy(svc);
    const agent = await startAgent(svc, v1.version_id, { AGENT_DEFER: '1' });
    // Written before any dispatcher runs: all pending, in this order.
    const busy = await createTask(svc);
    for (const text of ['one', 'two', 'three']) await sendEvent(busy.id, text);
    const other = await createTask(svc);
    // A window of two: busy's task/create and first event; past them only when they yield too few.
    dispatcher = await startDispatcher(svc.store, { ...FAST, leaseMs: 60_000, claimWindow: 2 });
    await agent.waitFor(() => agent.received().length === 2);
    // Launched together (two connections): in either order.
    expect(agent.received().map((r) => [r.params.task.id, r.method])).toEqual(
      expect.arrayContaining([
        [busy.id, 'task/create'],
        [other.id, 'task/create'],
      ]),
    );
    await until('both task/creates leased', async () => (await statusesOf(svc, busy.id))[0] === 'leased' && (await statusesOf(svc, other.id))[0] === 'leased');
    // busy's events wait behind its leased task/create: one in flight per task.
    expect(await statusesOf(svc, busy.id)).toEqual(['leased', 'pending', 'pending', 'pending']);
    // An event for `other` now is claimed behind its own task/create, whatever the window holds.
    await sendEvent(other.id, 'hello');
    const otherCreate = agent.received().find((r) => r.params.task.id === other.id)!;
    const completed = await asAgent(agent, 'POST', `/deliveries/${otherCreate.id}/complete`);
    expect(completed.status).toBe(200);
    await agent.waitFor(() => agent.received().length === 3);
    expect(methods(agent)).toEqual(['task/create', 'task/create', 'event/send:hello']);
    expect(agent.received()[2].params.task.id).toBe(other.id);
  });

  test('several deliveries reported complete in one request are each answered on their own, checked as a single completion is', async () => {
    const v1 = await deploy(svc);
    const agent = await startAgent(svc, v1.version_id, { AGENT_DEFER: '1' });
    dispatcher = await startDispatcher(svc.store, { ...FAST, leaseMs: 60_000 });
    const [a, b] = [await createTask(svc), await createTask(svc)];
    await sendEvent(a.id, 'one');
    await agent.waitFor(() => agent.received().length === 2);
    await until('both task/creates leased', async () => (await statusesOf(svc, a.id))[0] === 'leased' && (await statusesOf(svc, b.id))[0] === 'leased');
    const createOf = (taskId: string) => agent.received().find((r) => r.params.task.id === taskId)!.id as string;
    const unsent = await svc.store.db
      .selectFrom('deliveries')
      .select(sql<string>`id::text`.as('id'))
      .where('task_id', '=', a.id)
      .where('method', '=', 'event/send')
      .executeTakeFirstOrThrow();

    // Another agent's runtime key may not see them: each is a 404, as alone; nothing changes.
    const other = await deploy(svc, { agent: 'other-bot' });
    const stranger = await startAgent(svc, other.version_id);
    expect(await asAgent(stranger, 'POST', '/deliveries/complete', { deliveries: [{ id: createOf(a.id) }] })).toEqual({
      status: 200,
      body: {
        results: [{ id: createOf(a.id), status: 404, delivery: null, error: { detail: `Delivery ${createOf(a.id)} was not found`, code: 'not_found' } }],
      },
    });
    expect(await statusesOf(svc, a.id)).toEqual(['leased', 'pending']);

    // One refused (not sent yet) leaves the others completed; each task's next delivery goes.
    const done = (id: string, taskId: string) => ({
      id,
      status: 200,
      delivery: { id, task_id: taskId, method: 'task/create', status: 'done', attempts: 1, lease_expires_at: null },
      error: null,
    });
    expect(await asAgent(agent, 'POST', '/deliveries/complete', { deliveries: [{ id: createOf(a.id) }, { id: unsent.id }, { id: createOf(b.id) }] })).toEqual({
      status: 200,
      body: {
        results: [
          done(createOf(a.id), a.id),
          {
            id: unsent.id,
            status: 409,
            delivery: null,
            error: { detail: `Delivery ${unsent.id} has not been sent to the agent yet`, code: 'delivery_not_sent' },
          },
          done(createOf(b.id), b.id),
        ],
      },
    });
    await agent.waitFor(() => methods(agent).includes('event/send:one'));
    // Reported again, a done delivery is answered as it is; a malformed request is refused whole.
    expect((await asAgent(agent, 'POST', '/deliveries/complete', { deliveries: [{ id: createOf(b.id) }] })).body.results[0]).toEqual(
      done(createOf(b.id), b.id),
    );
    expect((await asAgent(agent, 'POST', '/deliveries/complete', { deliveries: [{ id: 'not-a-number' }] })).status).toBe(422);
    expect((await asAgent(agent, 'POST', '/deliveries/complete', { deliveries: [] })).status).toBe(422);
  });

  test('a completion the agent carries in its answer to a later delivery completes the leased one with no request of its own; another agent cannot carry it', async () => {
    const v1 = await deploy(svc);
    const agent = await startAgent(svc, v1.version_id, { AGENT_DEFER: '1' });
    dispatcher = await startDispatcher(svc.store, { ...FAST, leaseMs: 60_000 });
    const a = await createTask(svc);
    await sendEvent(a.id, 'one');
    await agent.waitFor(() => agent.received().length === 1);
    const [createA] = agent.received();
    expect(createA.params.completions_in_answer).toBe(true);
    await until('task/create leased', async () => (await statusesOf(svc, a.id))[0] === 'leased');

    // Another agent's answer carrying it changes nothing.
    const other = await deploy(svc, { agent: 'other-bot' });
    const stranger = await startAgent(svc, other.version_id, { AGENT_DEFER: '1' });
    await carry(stranger, [createA.id]);
    const c = await createTask(svc, { agent_name: 'default/other-bot' });
    await stranger.waitFor(() => stranger.received().length === 1);
    await until('the stranger’s task/create leased', async () => (await statusesOf(svc, c.id))[0] === 'leased');
    expect(await statusesOf(svc, a.id)).toEqual(['leased', 'pending']);

    // Its own agent's answer to another task's delivery completes it; the task's next delivery goes.
    await carry(agent, [createA.id]);
    const b = await createTask(svc);
    await agent.waitFor(() => methods(agent).includes('event/send:one'));
    expect(methods(agent)).toEqual(['task/create', 'task/create', 'event/send:one']);
    expect((await deliveriesOf(svc, a.id))[0]).toEqual({ method: 'task/create', status: 'done', attempts: 1 });
    await until('task b leased', async () => (await statusesOf(svc, b.id))[0] === 'leased');
  });

  test('a carried completion of a delivery whose lease is not written yet is that delivery’s acknowledgement: done, and its task’s next delivery follows', async () => {
    const v1 = await deploy(svc);
    const agent = await startAgent(svc, v1.version_id, { AGENT_DEFER: '1' });
    // The lease waits for its completion (a quick handler's), here for as long as the test takes.
    dispatcher = await startDispatcher(svc.store, { ...FAST, leaseMs: 60_000, leaseWriteWaitMs: 60_000 });
    const a = await createTask(svc);
    await sendEvent(a.id, 'one');
    await agent.waitFor(() => agent.received().length === 1);
    const [createA] = agent.received();
    await new Promise((r) => setTimeout(r, 200));
    expect(await statusesOf(svc, a.id)).toEqual(['in_flight', 'pending']);

    await carry(agent, [createA.id]);
    const b = await createTask(svc);
    await agent.waitFor(() => methods(agent).includes('event/send:one'));
    expect(methods(agent)).toEqual(['task/create', 'task/create', 'event/send:one']);
    expect((await deliveriesOf(svc, a.id))[0]).toEqual({ method: 'task/create', status: 'done', attempts: 1 });
    // b's task/create waits for its own completion, unwritten: still in flight.
    expect((await statusesOf(svc, b.id))[0]).toBe('in_flight');
  });

  test('a delivery left in flight by a dispatcher that is gone (its server was killed) goes out at once, not when its claim runs out; a live one keeps its claim', async () => {
    const v1 = await deploy(svc);
    const agent = await startAgent(svc, v1.version_id);
    const [orphaned, held] = [await createTask(svc), await createTask(svc)];
    // Made (not started) after the tasks: on PGlite a dispatcher wakes to new deliveries from its construction.
    const live = new Dispatcher(svc.store, FAST);
    try {
      const claim = (taskId: string, by: string) =>
        sql`UPDATE deliveries SET status = 'in_flight', attempts = 1, claimed_by = ${by}, claimed_until = now() + interval '10 minutes' WHERE task_id = ${taskId}`.execute(
          svc.store.db,
        );
      await claim(orphaned.id, 'dsp_gone');
      await claim(held.id, live.id);
      await live.start();
      dispatcher = await startDispatcher(svc.store, FAST);

      await agent.waitFor(() => agent.received().length === 1);
      expect(agent.received().map((r) => [r.method, r.params.task.id, r.id])).toEqual([['task/create', orphaned.id, expect.any(String)]]);
      await until('the orphaned delivery done', async () => (await statusesOf(svc, orphaned.id))[0] === 'done');
      expect(await deliveriesOf(svc, orphaned.id)).toEqual([{ method: 'task/create', status: 'done', attempts: 2 }]);
      // A few polls later the live dispatcher's claim is still its own.
      await new Promise((r) => setTimeout(r, 300));
      const kept = await svc.store.db.selectFrom('deliveries').select(['status', 'claimed_by']).where('task_id', '=', held.id).executeTakeFirstOrThrow();
      expect(kept).toEqual({ status: 'in_flight', claimed_by: live.id });
      expect(agent.received()).toHaveLength(1);
    } finally {
      await live.close();
    }
  });

  test('a lease that runs out unrenewed is delivered again, with the same id', async () => {
    const v1 = await deploy(svc);
    const agent = await startAgent(svc, v1.version_id, { AGENT_DEFER: '1' });
    dispatcher = await startDispatcher(svc.store, { ...FAST, leaseMs: 1000 });
    const task = await createTask(svc);
    await agent.waitFor(() => agent.received().length === 2, 15_000);
    const [first, again] = agent.received();
    expect([first.method, again.method]).toEqual(['task/create', 'task/create']);
    expect(again.id).toBe(first.id);
    // Sent again and acknowledged again: leased again, and the agent's completion ends it.
    await until('leased again', async () => (await statusesOf(svc, task.id))[0] === 'leased');
    expect((await asAgent(agent, 'POST', `/deliveries/${first.id}/complete`)).body).toMatchObject({ status: 'done', attempts: 2 });
  });

  test('a lease taken before the server restarted is delivered again without counting as a failure; one its agent renewed since counts', async () => {
    const v1 = await deploy(svc);
    const agent = await startAgent(svc, v1.version_id);
    const [held, renewed] = [await createTask(svc), await createTask(svc)];
    // As a server killed while both handlers held their leases left them: granted a minute ago, running out in a second.
    await sql`UPDATE deliveries SET status = 'leased', attempts = 1, leased_to = ${agent.acpUrl}, lease_ms = 1000, claimed_until = now() + interval '1 second',
      updated_at = now() - interval '1 minute' WHERE task_id IN (${held.id}, ${renewed.id})`.execute(svc.store.db);
    const [renewedId] = (await svc.store.db.selectFrom('deliveries').select('id').where('task_id', '=', renewed.id).execute()).map((d) => String(d.id));
    dispatcher = await startDispatcher(svc.store, FAST);
    // One agent reaches the restarted server and renews; then neither reports again.
    expect((await asAgent(agent, 'POST', `/deliveries/${renewedId}/renew`)).status).toBe(200);

    for (const task of [held, renewed]) await until(`${task.id} delivered again`, async () => (await statusesOf(svc, task.id))[0] === 'done');
    const failing = async (taskId: string) =>
      await svc.store.db.selectFrom('deliveries').select(['attempts', 'failing_since']).where('task_id', '=', taskId).executeTakeFirstOrThrow();
    expect(await failing(held.id)).toEqual({ attempts: 2, failing_since: null });
    expect(await failing(renewed.id)).toEqual({ attempts: 2, failing_since: expect.any(Date) });
  });

  test('when the replica that took a delivery goes before its lease is written, the delivery goes at once to the replica after it', async () => {
    const v1 = await deploy(svc);
    const first = await startAgent(svc, v1.version_id, { AGENT_DEFER: '1' });
    // The lease waits (for a completion that never comes) long enough for the runtime to see the replica go first.
    dispatcher = await startDispatcher(svc.store, { ...FAST, leaseWriteWaitMs: 2000 });
    const task = await createTask(svc);
    await first.waitFor(() => first.received().length === 1);
    await markReplicaGone(svc.store.db, v1.version_id, first.acpUrl);
    // Not leased to the replica that went (nothing would release it before the lease ran out): out again.
    await until('task/create out again', async () => (await statusesOf(svc, task.id))[0] === 'pending');
    const released = await svc.store.db.selectFrom('deliveries').select(['last_error', 'leased_to']).where('task_id', '=', task.id).executeTakeFirstOrThrow();
    expect(released).toEqual({ last_error: REPLICA_GONE_REASON, leased_to: null });
    const second = await startAgent(svc, v1.version_id);
    await second.waitFor(() => second.received().length === 1);
    expect(second.received()[0].id).toBe(first.received()[0].id);
    await until('task/create done', async () => (await statusesOf(svc, task.id))[0] === 'done');
    expect((await settledDeliveries(svc, task.id)).map((d) => [d.method, d.status, d.attempts])).toEqual([['task/create', 'done', 2]]);
  });

  test('when the replica holding a lease goes, the delivery goes at once to the replica started after it', async () => {
    const v1 = await deploy(svc);
    const first = await startAgent(svc, v1.version_id, { AGENT_DEFER: '1' });
    dispatcher = await startDispatcher(svc.store, FAST);
    const task = await createTask(svc);
    await sendEvent(task.id, 'one');
    await first.waitFor(() => first.received().length === 1);
    await until('task/create leased', async () => (await statusesOf(svc, task.id))[0] === 'leased');
    await first.kill('SIGKILL');
    // What the runtime does when the process exits: the 5-minute lease does not have to run out.
    await markReplicaGone(svc.store.db, v1.version_id, first.acpUrl);
    const released = await svc.store.db
      .selectFrom('deliveries')
      .select(['status', 'last_error', 'leased_to'])
      .where('task_id', '=', task.id)
      .orderBy('id')
      .executeTakeFirstOrThrow();
    expect(released).toEqual({ status: 'pending', last_error: REPLICA_GONE_REASON, leased_to: null });
    const second = await startAgent(svc, v1.version_id);
    await second.waitFor(() => second.received().length === 2);
    expect(methods(second)).toEqual(['task/create', 'event/send:one']);
    expect(second.received()[0].id).toBe(first.received()[0].id);
    expect((await settledDeliveries(svc, task.id)).map((d) => [d.method, d.status, d.attempts])).toEqual([
      ['task/create', 'done', 2],
      ['event/send', 'done', 1],
    ]);
  });

  test('lost leases count against the retry budget: past it the task becomes FAILED, naming the cause', async () => {
    const v1 = await deploy(svc);
    const agent = await startAgent(svc, v1.version_id, { AGENT_DEFER: '1' });
    dispatcher = await startDispatcher(svc.store, { ...FAST, leaseMs: 1000, retryBudgetMs: 1500 });
    const task = await createTask(svc);
    await until('FAILED', async () => (await getTask(task.id)).status === 'FAILED', 20_000);
    expect((await getTask(task.id)).status_reason).toBe(
      'Delivery failed: task/create could not be delivered to the agent within 1.5 seconds (the agent did not report its handler finished within the completion lease)',
    );
    expect(await statusesOf(svc, task.id)).toEqual(['failed']);
    // The handler finishing now changes nothing.
    const id = agent.received()[0].id;
    expect(await asAgent(agent, 'POST', `/deliveries/${id}/renew`)).toEqual({
      status: 409,
      body: { detail: `Delivery ${id} is no longer leased (failed): it failed`, code: 'lease_lost' },
    });
    expect(await asAgent(agent, 'POST', `/deliveries/${id}/complete`)).toEqual({
      status: 409,
      body: {
        detail: `Delivery ${id} failed (the agent did not report its handler finished within the completion lease); there is nothing to complete`,
        code: 'delivery_failed',
      },
    });
  });

  test('a cancel while a handler holds the lease: the task is CANCELED at once and task/cancel follows the completion', async () => {
    const v1 = await deploy(svc);
    const agent = await startAgent(svc, v1.version_id, { AGENT_DEFER: '1' });
    dispatcher = await startDispatcher(svc.store, FAST);
    const task = await createTask(svc);
    await agent.waitFor(() => agent.received().length === 1);
    const canceled = await svc.api('POST', `/tasks/${task.id}/cancel`);
    expect([canceled.status, canceled.body.status]).toEqual([200, 'CANCELED']);
    await new Promise((r) => setTimeout(r, 300));
    expect(methods(agent)).toEqual(['task/create']);
    expect((await asAgent(agent, 'POST', `/deliveries/${agent.received()[0].id}/complete`)).status).toBe(200);
    await agent.waitFor(() => agent.received().length === 2);
    expect(methods(agent)).toEqual(['task/create', 'task/cancel']);
  });

  test('a task migrated while its handler holds the lease on v1: the old agent completes it, the next delivery reaches v2', async () => {
    const v1 = await deploy(svc, { are_tasks_sticky: true });
    const old = await startAgent(svc, v1.version_id, { AGENT_DEFER: '1' });
    dispatcher = await startDispatcher(svc.store, FAST);
    const task = await createTask(svc);
    await old.waitFor(() => old.received().length === 1);
    const v2 = await deploy(svc, { are_tasks_sticky: true });
    const next = await startAgent(svc, v2.version_id);
    await migrate(task.id, v2.version_id);
    await sendEvent(task.id, 'after');
    await new Promise((r) => setTimeout(r, 300));
    expect(next.received()).toEqual([]);
    expect((await asAgent(old, 'POST', `/deliveries/${old.received()[0].id}/complete`)).status).toBe(200);
    await next.waitFor(() => next.received().length === 1);
    expect(methods(old)).toEqual(['task/create']);
    expect(methods(next)).toEqual(['event/send:after']);
  });

  test('one statement settling several tasks’ acknowledgements claims each task’s next turn once; one whose claim was lost claims nothing', async () => {
    const v1 = await deploy(svc);
    // A live replica (nothing listens: no dispatcher runs to send to it).
    expect((await svc.api('POST', '/versions/register', { body: { version_id: v1.version_id, acp_url: 'http://127.0.0.1:9' } })).status).toBe(200);
    const [a, b, c] = [await createTask(svc), await createTask(svc), await createTask(svc)];
    for (const task of [a, b, c]) for (const text of ['one', 'two']) await sendEvent(task.id, text);
    const db = svc.store.db;
    const idsOf = async (taskId: string) =>
      (await sql<{ id: string }>`SELECT id::text FROM deliveries WHERE task_id = ${taskId} ORDER BY deliveries.id`.execute(db)).rows.map((r) => r.id);
    // Each task/create in flight under one claim; task a also has an interrupt in flight under it.
    await sql`UPDATE deliveries SET status = 'in_flight', claimed_by = 'flight', attempts = 1 WHERE method = 'task/create'`.execute(db);
    const interrupt = await sql<{ id: string }>`
      INSERT INTO deliveries (task_id, method, kind, payload, status, claimed_by, attempts)
      VALUES (${a.id}, 'task/interrupt', 'interrupt', '{}', 'in_flight', 'flight', 1) RETURNING id::text`.execute(db);
    const [aCreate, aOne, aTwo] = await idsOf(a.id);
    const [bCreate, bOne, bTwo] = await idsOf(b.id);
    const [cCreate, cOne] = await idsOf(c.id);

    // The settling statement, driven directly: which answers share one is the event loop's choice.
    // Not started, the dispatcher claims nothing on its own.
    const settler = new Dispatcher(svc.store, FAST) as unknown as {
      id: string;
      settleBatch(batch: object[]): Promise<{ next: Map<string, { id: string }> }>;
    };
    const done = (id: string, taskId: string, claimer = 'flight') => ({
      op: 'done',
      id,
      taskId,
      claimer,
      chain: true,
      target: null,
      resolve: () => {},
      reject: () => {},
    });
    const { next } = await settler.settleBatch([
      done(aCreate, a.id),
      done(interrupt.rows[0].id, a.id),
      done(bCreate, b.id),
      // Its claim went to another dispatcher meanwhile: not written, and c's next turn stays put.
      done(cCreate, c.id, 'someone else'),
    ]);
    expect(new Map([...next].map(([taskId, row]) => [taskId, row.id]))).toEqual(
      new Map([
        [a.id, aOne],
        [b.id, bOne],
      ]),
    );
    const rows = async () =>
      (
        await sql<{ id: string; status: string; claimed_by: string | null; attempts: number }>`
          SELECT id::text, status, claimed_by, attempts FROM deliveries WHERE task_id IN (${a.id}, ${b.id}, ${c.id}) ORDER BY deliveries.id`.execute(db)
      ).rows;
    const expected = (id: string, status: string, claimed_by: string | null, attempts: number) => ({ id, status, claimed_by, attempts });
    const byId = (list: ReturnType<typeof expected>[]) => [...list].sort((x, y) => Number(x.id) - Number(y.id));
    expect(await rows()).toEqual(
      byId([
        expected(aCreate, 'done', null, 1),
        expected(aOne, 'in_flight', settler.id, 1),
        expected(aTwo, 'pending', null, 0),
        expected(interrupt.rows[0].id, 'done', null, 1),
        expected(bCreate, 'done', null, 1),
        expected(bOne, 'in_flight', settler.id, 1),
        expected(bTwo, 'pending', null, 0),
        expected(cCreate, 'in_flight', 'flight', 1),
        expected(cOne, 'pending', null, 0),
        expected((await idsOf(c.id))[2], 'pending', null, 0),
      ]),
    );

    // Alone (the single-completion form), a lost claim claims nothing either; its own claim, the next.
    expect((await settler.settleBatch([done(cCreate, c.id, 'someone else')])).next.size).toBe(0);
    expect((await rows()).filter((row) => row.id === cCreate || row.id === cOne)).toEqual([
      expected(cCreate, 'in_flight', 'flight', 1),
      expected(cOne, 'pending', null, 0),
    ]);
    const alone = await settler.settleBatch([done(cCreate, c.id)]);
    expect([...alone.next].map(([taskId, row]) => [taskId, row.id])).toEqual([[c.id, cOne]]);
    expect((await rows()).filter((row) => row.id === cCreate || row.id === cOne)).toEqual([
      expected(cCreate, 'done', null, 1),
      expected(cOne, 'in_flight', settler.id, 1),
    ]);
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
        const seen = agent
          .received()
          .filter((r) => r.params.task.id === task.id)
          .map((r) => (r.method === 'event/send' ? r.params.event.content.text : r.method));
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
