import { afterAll, beforeAll, beforeEach, describe, expect, test, vi } from 'vitest';
import type { AddressInfo } from 'node:net';
import http from 'node:http';
import { engines, useService } from '../support/service.js';
import { createTask, deployActive } from '../support/fixtures.js';
import { readSse, type SseFrame } from '../support/sse.js';
import { buildApp } from '../../src/server/app.js';
import { openStore, type Store } from '../../src/server/store/db.js';
import pg from 'pg';

const WRITERS = 10;
const PER_WRITER = 100;

describe.each(engines)('task stream ordering (%s)', (engine) => {
  // A long safety poll: what the watchers get here comes from notifications.
  const svc = useService(engine, { streamPollMs: 60_000 });
  let task: { id: string };
  beforeEach(async () => {
    await deployActive(svc);
    task = await createTask(svc);
  });

  const watch = (path: string, options: { lastEventId?: string; stopAfter?: number; onOpen?: () => void } = {}) =>
    readSse(svc, path, {
      key: svc.adminKey,
      headers: options.lastEventId ? { 'last-event-id': options.lastEventId } : {},
      stopAfter: options.stopAfter,
      onOpen: options.onOpen,
      timeoutMs: 120_000,
    });

  /** 1,000 events and messages from concurrent writers, interleaved, then the task completes. */
  async function writeInterleaved(): Promise<void> {
    const client = svc.client();
    await Promise.all(
      Array.from({ length: WRITERS }, async (_, writer) => {
        for (let i = 0; i < PER_WRITER; i++) {
          if (i % 2 === 0) await client.createEvent({ params: { task_id: task.id }, body: { content: `w${writer} e${i}` } });
          else await client.createMessage({ body: { task_id: task.id, content: `w${writer} m${i}` } });
        }
      }),
    );
    await client.updateTask({ params: { task_id: task.id }, body: { status: 'COMPLETED' } });
  }

  const ids = (frames: SseFrame[]) => frames.map((f) => Number(f.id));
  const total = WRITERS * PER_WRITER + 2; // + the task's created and completed records
  const oneToTotal = Array.from({ length: total }, (_, i) => i + 1);

  test('1,000 concurrent writes: a live watcher and a later read see the same gapless order; three resumed pieces equal the whole; the list agrees', async () => {
    let opened!: () => void;
    const open = new Promise<void>((resolve) => (opened = resolve));
    const live = watch(`/tasks/${task.id}/stream`, { onOpen: opened });
    await open;
    await writeInterleaved();
    const liveRead = await live;
    expect(liveRead.ended).toBe(true);
    expect(ids(liveRead.frames)).toEqual(oneToTotal);

    const whole = await watch(`/tasks/${task.id}/stream`);
    expect(whole.frames).toEqual(liveRead.frames);
    // Events and messages in the stream carry the sequence_id they were given, writer order kept.
    for (const frame of whole.frames.slice(1, -1)) expect(frame.data.sequence_id).toBe(Number(frame.id));
    for (let writer = 0; writer < WRITERS; writer++) {
      const mine = whole.frames.filter((f) => f.event !== 'task' && f.data.content.text.startsWith(`w${writer} `)).map((f) => f.data.content.text);
      expect(mine).toEqual(Array.from({ length: PER_WRITER }, (_, i) => `w${writer} ${i % 2 === 0 ? 'e' : 'm'}${i}`));
    }

    const first = await watch(`/tasks/${task.id}/stream`, { stopAfter: 300 });
    const second = await watch(`/tasks/${task.id}/stream`, { lastEventId: first.frames.at(-1)!.id, stopAfter: 400 });
    const third = await watch(`/tasks/${task.id}/stream`, { lastEventId: second.frames.at(-1)!.id });
    expect(third.ended).toBe(true);
    expect([...first.frames, ...second.frames, ...third.frames]).toEqual(whole.frames);

    // The events list, paged by sequence, agrees with the stream.
    const events = [];
    let after = 0;
    for (;;) {
      const page = (await svc.api('GET', `/events?task_id=${task.id}&limit=500&after_sequence_id=${after}`)).body;
      events.push(...page.events);
      if (!page.has_more) break;
      after = page.events.at(-1).sequence_id;
    }
    expect(events).toHaveLength((WRITERS * PER_WRITER) / 2);
    expect(whole.frames.filter((f) => f.event === 'event').map((f) => f.data)).toEqual(events);
  }, 300_000);

  test('many watchers of one task share the reads: one read per change, not one per watcher', async () => {
    const watchers = 20;
    let opened = 0;
    let allOpen!: () => void;
    const open = new Promise<void>((resolve) => (allOpen = resolve));
    const reads = Array.from({ length: watchers }, () => watch(`/tasks/${task.id}/stream`, { onOpen: () => ++opened === watchers && allOpen() }));
    await open;
    // Let each watcher finish its catch-up read before counting.
    await new Promise((resolve) => setTimeout(resolve, 300));
    const before = svc.service.streamHub.reads;
    const changes = 20;
    for (let i = 0; i < changes; i++) await svc.client().createEvent({ params: { task_id: task.id }, body: { content: `e${i}` } });
    await svc.client().cancelTask({ params: { task_id: task.id } });
    const results = await Promise.all(reads);
    for (const r of results) expect(ids(r.frames)).toEqual(Array.from({ length: changes + 2 }, (_, i) => i + 1));
    const readsPerChange = (svc.service.streamHub.reads - before) / (changes + 1);
    expect(readsPerChange).toBeLessThanOrEqual(2);
  });
  test('deltas written on this server reach its watcher as their statements returned them, with no read; a record written another way in between is read in its place', async () => {
    const hub = svc.service.streamHub;
    const client = svc.client();
    const message = await client.createMessage({ body: { task_id: task.id, content: { type: 'text', text: '' }, streaming_status: 'IN_PROGRESS' } });
    const tracker = (await client.listTrackers({ query: { task_id: task.id } })).trackers[0]!;
    // The task's created record, the message, 40 deltas, 4 tracker updates (a transaction, not a
    // one-statement write: nothing is handed over), the task's completion.
    const deltas = 40;
    const total = 2 + deltas + 4 + 1;
    const readsAtOpen = hub.reads;
    const live = watch(`/tasks/${task.id}/stream`);
    // Caught up: the watcher read what was there, then its task's group (the first watcher's) read
    // once from where it stopped. From then on a delta goes to it as soon as its statement returns.
    await vi.waitUntil(() => hub.reads === readsAtOpen + 2, { timeout: 20_000 });
    const readsBefore = hub.reads;
    for (let i = 0, offset = 0; i < deltas; i++) {
      const delta = `d${i} `;
      await client.appendMessageDelta({ params: { message_id: message.id }, body: { delta, offset } });
      offset += delta.length;
      if (i % 10 === 9) await client.updateTracker({ params: { tracker_id: tracker.id }, body: { status_message: `after d${i}` } });
    }
    // The last tracker update's NOTIFY may reach the hub after its statement returned (PostgreSQL
    // sends them on another connection, in commit order): once that one is read, every delta's was handled.
    await vi.waitUntil(() => hub.reads - readsBefore >= 4, { timeout: 20_000 });
    const readsForWrites = hub.reads - readsBefore;
    await client.updateTask({ params: { task_id: task.id }, body: { status: 'COMPLETED' } });
    const liveRead = await live;
    expect(ids(liveRead.frames)).toEqual(Array.from({ length: total }, (_, i) => i + 1));
    expect(liveRead.frames.filter((f) => f.event === 'message_delta').map((f) => f.data.delta)).toEqual(Array.from({ length: deltas }, (_, i) => `d${i} `));
    // What a later reader reads from the table is what the live watcher was handed.
    expect((await watch(`/tasks/${task.id}/stream`)).frames).toEqual(liveRead.frames);
    // Only the tracker updates were read. A delta's NOTIFY may come before its statement's answer (on
    // PGlite always, in the same turn; on PostgreSQL on another connection, more often on a loaded
    // machine: 20 of 40 in one CI run): the hub waits for the statement in flight and reads nothing.
    // Without the hand-off every delta would be read (4 + 40); without the wait, those NOTIFYs' deltas.
    expect(readsForWrites).toBe(4);
  });

  test("a delta's NOTIFY that comes before its statement's answer is not read: the hub waits for the write in flight", async () => {
    const hub = svc.service.streamHub;
    const client = svc.client();
    const message = await client.createMessage({ body: { task_id: task.id, content: { type: 'text', text: '' }, streaming_status: 'IN_PROGRESS' } });
    const readsAtOpen = hub.reads;
    const live = watch(`/tasks/${task.id}/stream`);
    await vi.waitUntil(() => hub.reads === readsAtOpen + 2, { timeout: 20_000 });
    // Each delta's answer held back in the driver (its NOTIFY has long reached the hub by then): the
    // statements are the only ones naming the message (PostgreSQL: a parameter; PGlite: the EXECUTE's text).
    const names = (x: unknown) => typeof x === 'string' && x.includes(message.id);
    const hold = async <T>(answer: Promise<T>) => {
      const result = await answer;
      await new Promise((resolve) => setTimeout(resolve, 100));
      return result;
    };
    const undo = holdAnswers(svc.store, (text, values) => names(text) || (Array.isArray(values) && values.some(names)), hold);
    const deltas = 5;
    try {
      const readsBefore = hub.reads;
      for (let i = 0, offset = 0; i < deltas; i++) {
        const delta = `d${i} `;
        await client.appendMessageDelta({ params: { message_id: message.id }, body: { delta, offset } });
        offset += delta.length;
      }
      expect(hub.reads - readsBefore).toBe(0);
    } finally {
      undo();
    }
    await client.updateTask({ params: { task_id: task.id }, body: { status: 'COMPLETED' } });
    const liveRead = await live;
    expect(ids(liveRead.frames)).toEqual(Array.from({ length: 2 + deltas + 1 }, (_, i) => i + 1));
    expect(liveRead.frames.filter((f) => f.event === 'message_delta').map((f) => f.data.delta)).toEqual(Array.from({ length: deltas }, (_, i) => `d${i} `));
  });
});

describe.each(engines)('a stream reader that stops reading (%s)', (engine) => {
  // Small bounds, so a stuck reader passes them soon after its socket is full.
  const svc = useService(engine, { streamMaxBuffered: { records: 50 } });
  let task: { id: string };
  beforeEach(async () => {
    await deployActive(svc);
    task = await createTask(svc);
  });

  async function waitUntil(what: string, done: () => boolean): Promise<void> {
    const deadline = Date.now() + 60_000;
    while (!done()) {
      if (Date.now() > deadline) throw new Error(`${what}: not reached in 60 s`);
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
  }

  /** Messages of 64 KiB each until the hub ends a stream for falling behind; returns how many were sent. */
  async function writeUntilEndedBehind(): Promise<number> {
    const hub = svc.service.streamHub;
    const before = hub.endedBehind;
    let sent = 0;
    while (hub.endedBehind === before) {
      if (sent === 2000) throw new Error('2,000 messages and no stream was ended');
      await svc.client().createMessage({ body: { task_id: task.id, content: `m${sent} ${'x'.repeat(64 * 1024)}` } });
      sent++;
    }
    expect(hub.endedBehind).toBe(before + 1);
    return sent;
  }

  /** After the stuck reader's end: three more messages, then the task completes. */
  async function finishTask(): Promise<void> {
    for (let i = 0; i < 3; i++) await svc.client().createMessage({ body: { task_id: task.id, content: `after ${i}` } });
    await svc.client().updateTask({ params: { task_id: task.id }, body: { status: 'COMPLETED' } });
  }

  /** Whole SSE frames of a text (a frame cut off by a closed connection is left out). */
  const framesOf = (text: string): SseFrame[] =>
    text
      .split('\n\n')
      .slice(0, -1)
      .filter((block) => !block.startsWith(':'))
      .map((block) => {
        const [id, event, data] = block.split('\n');
        return { id: id!.slice(4), event: event!.slice(7), data: JSON.parse(data!.slice(6)) };
      });

  const texts = (frames: SseFrame[]) => frames.map((f) => (f.event === 'message' ? f.data.content.text.split(' ')[0] : `${f.event}:${f.data.status}`));

  test('a watcher that never reads has its stream ended; resumed with Last-Event-ID it gets every record exactly once', async () => {
    // http.get stops reading the socket once its response buffer is full and nothing consumes it.
    const response = await new Promise<http.IncomingMessage>((resolve, reject) =>
      http.get(`${svc.url}/tasks/${task.id}/stream`, { headers: { authorization: `Bearer ${svc.adminKey}` }, agent: false }, resolve).on('error', reject),
    );
    expect(response.statusCode).toBe(200);
    await waitUntil('the stream watching the task', () => svc.service.streamHub.watching(task.id) === 1);
    const sent = await writeUntilEndedBehind();
    await waitUntil('the ended stream gone from the hub', () => svc.service.streamHub.watching(task.id) === 0);
    await finishTask();

    // Now it reads: what reached it, then the end of the response.
    let text = '';
    response.setEncoding('utf8');
    response.on('data', (chunk: string) => (text += chunk));
    await new Promise((resolve) => response.once('close', resolve));
    const first = framesOf(text);
    expect(first.length).toBeGreaterThan(0);
    expect(first.length).toBeLessThan(sent + 1);
    const resumed = await readSse(svc, `/tasks/${task.id}/stream`, { key: svc.adminKey, headers: { 'last-event-id': first.at(-1)!.id! }, timeoutMs: 120_000 });
    expect(resumed.ended).toBe(true);

    const all = [...first, ...resumed.frames];
    const total = 1 + sent + 3 + 1;
    expect(all.map((f) => Number(f.id))).toEqual(Array.from({ length: total }, (_, i) => i + 1));
    expect(texts(all)).toEqual(['task:RUNNING', ...Array.from({ length: sent }, (_, i) => `m${i}`), 'after', 'after', 'after', 'task:COMPLETED']);
  }, 300_000);

  test('the client’s stream reader, paused by its consumer, resumes across the end on its own: every record once, in order', async () => {
    const records = svc.client().streamTask(task.id);
    const seen = [(await records.next()).value!];
    // The consumer takes nothing more until the server ended this stream for falling behind.
    const sent = await writeUntilEndedBehind();
    await finishTask();
    for await (const record of records) seen.push(record);
    const total = 1 + sent + 3 + 1;
    expect(seen.map((r) => r.sequence_id)).toEqual(Array.from({ length: total }, (_, i) => i + 1));
    expect(seen.at(-1)).toMatchObject({ kind: 'task', data: { status: 'COMPLETED' } });
  }, 300_000);
});

describe.runIf(engines.includes('postgres'))('task stream across two servers on one PostgreSQL', () => {
  const svc = useService('postgres', { streamPollMs: 60_000 });
  let second: { url: string; close: () => Promise<void> };
  beforeAll(async () => {
    const store = await openStore({ databaseUrl: svc.store.databaseUrl });
    const app = await buildApp({ store, config: { rateLimitPerSecond: 0, streamPollMs: 60_000 } });
    await app.listen({ host: '127.0.0.1', port: 0 });
    second = {
      url: `http://127.0.0.1:${(app.server.address() as AddressInfo).port}`,
      close: async () => {
        await app.close();
        await store.close();
      },
    };
  });
  // Runs before the service closes (after-hooks run in reverse).
  afterAll(async () => second?.close());

  test('a write on one server reaches a watcher on the other through NOTIFY', async () => {
    await deployActive(svc);
    const task = await createTask(svc);
    let opened!: () => void;
    const open = new Promise<void>((resolve) => (opened = resolve));
    const watching = readSse(second, `/tasks/${task.id}/stream?after_sequence_id=1`, { key: svc.adminKey, onOpen: opened, timeoutMs: 20_000 });
    await open;
    await new Promise((resolve) => setTimeout(resolve, 200));
    const event = await svc.client().createEvent({ params: { task_id: task.id }, body: { content: 'across' } });
    await svc.client().cancelTask({ params: { task_id: task.id } });
    const read = await watching;
    expect(read.ended).toBe(true);
    expect(read.frames.map((f) => [f.id, f.event])).toEqual([
      ['2', 'event'],
      ['3', 'task'],
    ]);
    expect(read.frames[0]!.data).toEqual(event);
  });
});

/**
 * Wraps the engine's driver so the answers of the statements `matches` picks go through `hold`:
 * PostgreSQL's pg Client.query (a named statement comes as its config object), PGlite's exec (an
 * EXECUTE, its parameters as literals). Returns the function that undoes it.
 */
function holdAnswers(store: Store, matches: (text: unknown, values: unknown) => boolean, hold: <T>(answer: Promise<T>) => Promise<T>): () => void {
  const [target, name] = store.pglite
    ? [store.pglite as unknown as Record<string, unknown>, 'exec']
    : [pg.Client.prototype as unknown as Record<string, unknown>, 'query'];
  const original = target[name] as (...args: unknown[]) => unknown;
  target[name] = function (this: unknown, text: unknown, values?: unknown, ...rest: unknown[]) {
    const config = typeof text === 'object' && text !== null ? (text as { text?: unknown; values?: unknown }) : { text, values };
    const answer = original.call(this, text, values, ...rest);
    return matches(config.text, config.values) && answer instanceof Promise ? hold(answer) : answer;
  };
  return () => {
    target[name] = original;
  };
}
