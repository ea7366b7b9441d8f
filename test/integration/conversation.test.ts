import { beforeEach, describe, expect, test } from 'vitest';
import { Event, Message, Tracker } from '../../src/contract/conversation.js';
import type { Task } from '../../src/contract/resources.js';
import { engines, useService } from '../support/service.js';
import { createTask, deployActive, type Deployed } from '../support/fixtures.js';
import { expectError, expectInvalid, expectMalformed, expectOversize, MALFORMED_JSON, OVERSIZE_BODY } from '../support/bad-input.js';
import { scopedKey } from '../support/scoped-key.js';
import { readSse } from '../support/sse.js';

describe.each(engines)('conversation (%s)', (engine) => {
  const svc = useService(engine, { streamHeartbeatMs: 300 });
  let agent: Deployed;
  let task: Task;
  beforeEach(async () => {
    agent = await deployActive(svc);
    task = await createTask(svc);
  });

  const sendEvent = async (content: unknown, taskId = task.id) => {
    const res = await svc.api('POST', `/tasks/${taskId}/events`, { body: { content } });
    expect(res.status, JSON.stringify(res.body)).toBe(201);
    return Event.strict().parse(res.body);
  };
  const sendMessage = async (body: Record<string, unknown>) => {
    const res = await svc.api('POST', '/messages', { body: { task_id: task.id, ...body } });
    expect(res.status, JSON.stringify(res.body)).toBe(201);
    return Message.strict().parse(res.body);
  };
  const trackerOf = async (taskId = task.id) => {
    const res = await svc.api('GET', `/tracker?task_id=${taskId}`);
    expect(res.status).toBe(200);
    return Tracker.strict().parse(res.body.trackers[0]);
  };
  const cancel = () => svc.client().cancelTask({ params: { task_id: task.id } });
  const complete = () => svc.client().updateTask({ params: { task_id: task.id }, body: { status: 'COMPLETED' } });
  const stream = (taskId = task.id, options: { after?: number; lastEventId?: string; stopAfter?: number; keepComments?: boolean } = {}) =>
    readSse(svc, `/tasks/${taskId}/stream${options.after !== undefined ? `?after_sequence_id=${options.after}` : ''}`, {
      key: svc.adminKey,
      headers: options.lastEventId !== undefined ? { 'last-event-id': options.lastEventId } : {},
      stopAfter: options.stopAfter,
      keepComments: options.keepComments,
    });

  describe('events', () => {
    test('a bare string is stored as a TextPart and takes the task’s next sequence_id (the task record is 1)', async () => {
      const event = await sendEvent('hello');
      expect(event).toEqual({
        id: event.id,
        task_id: task.id,
        agent_id: agent.agent_id,
        sequence_id: 2,
        content: { type: 'text', text: 'hello' },
        created_at: event.created_at,
      });
      expect(event.id).toMatch(/^evt_[0-9A-Z]{26}$/);
      expect((await svc.api('GET', `/events/${event.id}`)).body).toEqual(event);
    });

    test('a DataPart is stored as it was sent', async () => {
      const event = await sendEvent({ type: 'data', data: { action: 'approve', ids: [1, 2] } });
      expect(event.content).toEqual({ type: 'data', data: { action: 'approve', ids: [1, 2] } });
    });

    test('GET /events lists ascending after a sequence_id, with has_more', async () => {
      const sent = [await sendEvent('a'), await sendEvent('b'), await sendEvent('c')];
      const first = await svc.api('GET', `/events?task_id=${task.id}&limit=2`);
      expect(first.body).toEqual({ events: sent.slice(0, 2), has_more: true });
      const rest = await svc.api('GET', `/events?task_id=${task.id}&after_sequence_id=${sent[1]!.sequence_id}`);
      expect(rest.body).toEqual({ events: [sent[2]], has_more: false });
    });

    test('a terminal task refuses new events: 409 task_terminal', async () => {
      await cancel();
      expectError(
        await svc.api('POST', `/tasks/${task.id}/events`, { body: { content: 'late' } }),
        409,
        'task_terminal',
        `Task ${task.id} is CANCELED; a finished task takes no new events or messages`,
      );
      expect((await svc.api('GET', `/events?task_id=${task.id}`)).body.events).toEqual([]);
    });
  });

  describe('messages', () => {
    test('POST /messages defaults to author agent with no streaming status', async () => {
      const message = await sendMessage({ content: 'working on it' });
      expect(message).toMatchObject({
        task_id: task.id,
        author: 'agent',
        content: { type: 'text', text: 'working on it' },
        streaming_status: null,
        sequence_id: 2,
        updated_sequence_id: 2,
      });
      expect(message.id).toMatch(/^msg_/);
      expect((await svc.api('GET', `/messages/${message.id}`)).body).toEqual(message);
    });

    test('PUT replaces the content and finishes streaming under a new sequence number; the created one stays', async () => {
      const message = await sendMessage({ content: 'draf', streaming_status: 'IN_PROGRESS' });
      await sendEvent('meanwhile');
      const res = await svc.api('PUT', `/messages/${message.id}`, { body: { content: 'draft done', streaming_status: 'DONE' } });
      expect(res.status).toBe(200);
      expect(res.body).toMatchObject({
        id: message.id,
        content: { type: 'text', text: 'draft done' },
        streaming_status: 'DONE',
        sequence_id: 2,
        updated_sequence_id: 4,
      });
    });

    test('PUT with only streaming_status keeps the content', async () => {
      const message = await sendMessage({ content: 'kept', streaming_status: 'IN_PROGRESS' });
      const res = await svc.api('PUT', `/messages/${message.id}`, { body: { streaming_status: 'DONE' } });
      expect(res.body).toMatchObject({ content: { type: 'text', text: 'kept' }, streaming_status: 'DONE' });
    });

    test('GET /messages lists ascending, default limit 50, after a sequence_id', async () => {
      const sent = [];
      for (let i = 0; i < 52; i++) sent.push(await sendMessage({ content: `m${i}`, author: i % 2 ? 'user' : 'agent' }));
      const page = await svc.api('GET', `/messages?task_id=${task.id}`);
      expect(page.body.messages.map((m: Message) => m.id)).toEqual(sent.slice(0, 50).map((m) => m.id));
      expect(page.body.has_more).toBe(true);
      const rest = await svc.api('GET', `/messages?task_id=${task.id}&after_sequence_id=${sent[49]!.sequence_id}`);
      expect(rest.body).toEqual({ messages: sent.slice(50), has_more: false });
    });

    test('a terminal task refuses new messages and message updates: 409 task_terminal', async () => {
      const message = await sendMessage({ content: 'x', streaming_status: 'IN_PROGRESS' });
      await complete();
      expectError(await svc.api('POST', '/messages', { body: { task_id: task.id, content: 'late' } }), 409, 'task_terminal');
      expectError(await svc.api('PUT', `/messages/${message.id}`, { body: { streaming_status: 'DONE' } }), 409, 'task_terminal');
    });

    test('a handler error is an agent message with a handler_error DataPart', async () => {
      const event = await sendEvent('boom');
      const res = await svc.api('POST', `/tasks/${task.id}/handler-errors`, {
        body: { handler: 'onEvent', message: 'TypeError: x is undefined', event_id: event.id },
      });
      expect(res.status).toBe(201);
      expect(Message.strict().parse(res.body)).toMatchObject({
        author: 'agent',
        content: { type: 'data', data: { handler_error: { handler: 'onEvent', message: 'TypeError: x is undefined', event_id: event.id } } },
      });
    });

    test('a handler error naming an event of another task is 404', async () => {
      const other = await createTask(svc);
      const event = await sendEvent('elsewhere', other.id);
      expectError(
        await svc.api('POST', `/tasks/${task.id}/handler-errors`, { body: { handler: 'onEvent', message: 'x', event_id: event.id } }),
        404,
        'not_found',
        `Event ${event.id} was not found`,
      );
    });
  });

  describe('trackers', () => {
    test('every task gets a tracker for its agent when it is created', async () => {
      const tracker = await trackerOf();
      expect(tracker).toMatchObject({
        task_id: task.id,
        agent_id: agent.agent_id,
        status: 'idle',
        status_message: null,
        progress: null,
        last_processed_event_id: null,
      });
      expect(tracker.id).toMatch(/^trk_/);
      expect((await svc.api('GET', `/tracker/${tracker.id}`)).body).toEqual(tracker);
      expect((await svc.api('GET', `/tracker?agent_id=${agent.agent_id}`)).body).toEqual({ trackers: [tracker], total: 1 });
    });

    test('PATCH changes only the fields it names', async () => {
      const tracker = await trackerOf();
      await svc.api('PATCH', `/tracker/${tracker.id}`, { body: { status: 'working', status_message: 'reading files', progress: 10 } });
      const res = await svc.api('PATCH', `/tracker/${tracker.id}`, { body: { progress: 55.5 } });
      expect(res.status).toBe(200);
      expect(res.body).toMatchObject({ status: 'working', status_message: 'reading files', progress: 55.5, last_processed_event_id: null });
    });

    test('the cursor moves forward; backwards is 409 cursor_backwards and changes nothing', async () => {
      const [first, second] = [await sendEvent('1'), await sendEvent('2')];
      const tracker = await trackerOf();
      expect((await svc.api('PATCH', `/tracker/${tracker.id}`, { body: { last_processed_event_id: second.id } })).body.last_processed_event_id).toBe(second.id);
      const back = await svc.api('PATCH', `/tracker/${tracker.id}`, { body: { last_processed_event_id: first.id, progress: 90 } });
      expectError(back, 409, 'cursor_backwards');
      expect(await trackerOf()).toMatchObject({ last_processed_event_id: second.id, progress: null });
    });

    test('a cursor naming an unknown event (or one of another task) is 404', async () => {
      const tracker = await trackerOf();
      const other = await createTask(svc);
      const foreign = await sendEvent('x', other.id);
      expectError(
        await svc.api('PATCH', `/tracker/${tracker.id}`, { body: { last_processed_event_id: 'evt_missing' } }),
        404,
        'not_found',
        'Event evt_missing was not found',
      );
      expectError(await svc.api('PATCH', `/tracker/${tracker.id}`, { body: { last_processed_event_id: foreign.id } }), 404, 'not_found');
    });

    test('GET /tracker with neither task_id nor agent_id is a 422', async () => {
      expectInvalid(await svc.api('GET', '/tracker'), ['query', 'task_id']);
    });
  });

  describe('the stream', () => {
    test('replays the task’s records in sequence order and closes after the terminal status', async () => {
      const event = await sendEvent('hi');
      const message = await sendMessage({ content: 'hel', streaming_status: 'IN_PROGRESS' });
      await svc.client().updateMessage({ params: { message_id: message.id }, body: { content: 'hello', streaming_status: 'DONE' } });
      const tracker = await trackerOf();
      await svc.client().updateTracker({ params: { tracker_id: tracker.id }, body: { progress: 100, last_processed_event_id: event.id } });
      await cancel();

      const read = await stream();
      expect(read.status).toBe(200);
      expect(read.headers.get('content-type')).toBe('text/event-stream; charset=utf-8');
      expect(read.ended).toBe(true);
      expect(read.frames.map((f) => [f.id, f.event])).toEqual([
        ['1', 'task'],
        ['2', 'event'],
        ['3', 'message'],
        ['4', 'message_update'],
        ['5', 'tracker'],
        ['6', 'task'],
      ]);
      expect(read.frames[0]!.data).toMatchObject({ id: task.id, status: 'RUNNING' });
      expect(read.frames[1]!.data).toEqual(event);
      expect(read.frames[3]!.data).toMatchObject({
        id: message.id,
        content: { type: 'text', text: 'hello' },
        streaming_status: 'DONE',
        updated_sequence_id: 4,
      });
      expect(read.frames[4]!.data).toMatchObject({ id: tracker.id, progress: 100, last_processed_event_id: event.id });
      expect(read.frames[5]!.data).toMatchObject({ id: task.id, status: 'CANCELED', status_reason: 'Canceled by request' });
    });

    test('a live watcher sees writes as they commit, then the terminal status, then the end', async () => {
      const reading = stream(task.id, { after: 1 });
      // The first write lands after the watcher is subscribed or before; either way it must arrive.
      await sendEvent('one');
      await sendMessage({ content: 'two' });
      await complete();
      const read = await reading;
      expect(read.ended).toBe(true);
      expect(read.frames.map((f) => [f.id, f.event, f.data.status ?? f.data.content.text])).toEqual([
        ['2', 'event', 'one'],
        ['3', 'message', 'two'],
        ['4', 'task', 'COMPLETED'],
      ]);
    });

    test('Last-Event-ID resumes after that record (and wins over after_sequence_id)', async () => {
      await sendEvent('a');
      await sendEvent('b');
      await cancel();
      const read = await stream(task.id, { after: 0, lastEventId: '2' });
      expect(read.frames.map((f) => f.id)).toEqual(['3', '4']);
    });

    test('resuming after the terminal record ends at once with nothing', async () => {
      await cancel();
      const read = await stream(task.id, { after: 2 });
      expect(read).toMatchObject({ status: 200, ended: true, frames: [] });
    });

    test('status changes made elsewhere appear too: delete, branch retire, agent delete', async () => {
      const retired = await createTask(svc);
      const other = await deployActive(svc, { agent: 'other-bot' });
      const orphan = await createTask(svc, { agent_name: 'default/other-bot' });
      const client = svc.client();
      await client.deleteTask({ params: { task_id: task.id } });
      await client.retireBranch({ params: { branch_id: agent.branch_id }, body: { reason: 'done', force: true } });
      await client.deleteAgent({ params: { agent_id: other.agent_id } });
      const last = async (taskId: string) => (await stream(taskId)).frames.at(-1)!.data;
      expect(await last(task.id)).toMatchObject({ status: 'DELETED' });
      expect(await last(retired.id)).toMatchObject({ status: 'TERMINATED', status_reason: 'Branch retired: done' });
      expect(await last(orphan.id)).toMatchObject({ status: 'TERMINATED', status_reason: 'Agent deleted' });
    });

    test('an idle stream carries heartbeat comments', async () => {
      const abort = new AbortController();
      const response = await fetch(`${svc.url}/tasks/${task.id}/stream?after_sequence_id=1`, {
        headers: { authorization: `Bearer ${svc.adminKey}` },
        signal: abort.signal,
      });
      const reader = response.body!.getReader();
      const { value } = await reader.read();
      abort.abort();
      expect(new TextDecoder().decode(value)).toBe(': heartbeat\n\n');
    });

    test('401 without a key, 404 for an unknown task, 422 for a bad Last-Event-ID: all before the stream starts', async () => {
      const noKey = await fetch(`${svc.url}/tasks/${task.id}/stream`);
      expect(noKey.status).toBe(401);
      expect(noKey.headers.get('www-authenticate')).toBe('Bearer');
      const unknown = await stream('task_missing');
      expect(unknown.status).toBe(404);
      expect(unknown.body).toEqual({ detail: 'Task task_missing was not found', code: 'not_found' });
      const bad = await stream(task.id, { lastEventId: 'abc' });
      expect(bad.status).toBe(422);
      expect(bad.body.detail.map((d: { loc: unknown }) => d.loc)).toEqual([['header', 'last-event-id']]);
      const badQuery = await stream(task.id, { after: -1 });
      expect(badQuery.status).toBe(422);
    });
  });

  describe('permissions', () => {
    // viewer holds run; discoverer sees the agent but may not run it; a stranger sees nothing.
    const keys = async () => ({
      viewer: await scopedKey(svc, [{ resource_type: 'agent', resource_id: agent.agent_id, role: 'viewer' }], 'viewer'),
      discoverer: await scopedKey(svc, [{ resource_type: 'agent', resource_id: agent.agent_id, role: 'discoverer' }], 'discoverer'),
      stranger: await scopedKey(svc, [], 'stranger'),
    });

    test('every conversation endpoint: run on the agent allows, discover-only is 403, no grant is 404', async () => {
      const event = await sendEvent('x');
      const message = await sendMessage({ content: 'y' });
      const tracker = await trackerOf();
      const k = await keys();
      const calls: [string, string, unknown?][] = [
        ['POST', `/tasks/${task.id}/events`, { content: 'hi' }],
        ['GET', `/events?task_id=${task.id}`],
        ['GET', `/events/${event.id}`],
        ['POST', `/tasks/${task.id}/handler-errors`, { handler: 'onCreate', message: 'x' }],
        ['POST', '/messages', { task_id: task.id, content: 'hi' }],
        ['PUT', `/messages/${message.id}`, { content: 'z' }],
        ['GET', `/messages?task_id=${task.id}`],
        ['GET', `/messages/${message.id}`],
        ['GET', `/tracker?task_id=${task.id}`],
        ['GET', `/tracker?agent_id=${agent.agent_id}`],
        ['GET', `/tracker/${tracker.id}`],
        ['PATCH', `/tracker/${tracker.id}`, { progress: 5 }],
      ];
      for (const [method, path, body] of calls) {
        const allowed = await svc.api(method, path, { key: k.viewer, body });
        expect([200, 201], `${method} ${path} as viewer: ${JSON.stringify(allowed.body)}`).toContain(allowed.status);
        const discover = await svc.api(method, path, { key: k.discoverer, body });
        expect(discover.status, `${method} ${path} as discoverer`).toBe(403);
        expect(discover.body.code).toBe('forbidden');
        const stranger = await svc.api(method, path, { key: k.stranger, body });
        expect(stranger.status, `${method} ${path} as stranger`).toBe(404);
        expect(stranger.body.code).toBe('not_found');
      }
      const sse = (key: string) => readSse(svc, `/tasks/${task.id}/stream`, { key, stopAfter: 1 });
      expect((await sse(k.viewer)).status).toBe(200);
      expect((await sse(k.discoverer)).status).toBe(403);
      expect((await sse(k.stranger)).status).toBe(404);
    });

    test('a stranger asking for a record learns nothing about its task', async () => {
      const event = await sendEvent('x');
      const { stranger } = await keys();
      expectError(await svc.api('GET', `/events/${event.id}`, { key: stranger }), 404, 'not_found', `Event ${event.id} was not found`);
    });
  });

  describe('bad input never gets a 5xx', () => {
    const writes = () =>
      [
        ['POST', `/tasks/${task.id}/events`],
        ['POST', `/tasks/${task.id}/handler-errors`],
        ['POST', '/messages'],
        ['PUT', '/messages/msg_x'],
        ['PATCH', '/tracker/trk_x'],
      ] as const;

    test('malformed JSON is a 422 at body', async () => {
      for (const [method, path] of writes()) expectMalformed(await svc.api(method, path, { rawBody: MALFORMED_JSON }));
    });

    test('a body over 1 MiB is a 413', async () => {
      for (const [method, path] of writes()) expectOversize(await svc.api(method, path, { rawBody: OVERSIZE_BODY }));
    });

    test('missing fields are 422s naming them', async () => {
      expectInvalid(await svc.api('POST', `/tasks/${task.id}/events`, { body: {} }), ['body', 'content'], 'missing');
      expectInvalid(await svc.api('POST', '/messages', { body: { content: 'x' } }), ['body', 'task_id'], 'missing');
      expectInvalid(await svc.api('POST', `/tasks/${task.id}/handler-errors`, { body: { handler: 'onEvent' } }), ['body', 'message'], 'missing');
      expectInvalid(await svc.api('GET', '/events'), ['query', 'task_id'], 'missing');
      expectInvalid(await svc.api('GET', '/messages'), ['query', 'task_id'], 'missing');
    });

    test('wrong types and values are 422s naming the field', async () => {
      expectInvalid(await svc.api('POST', `/tasks/${task.id}/events`, { body: { content: 42 } }), ['body', 'content']);
      expectInvalid(await svc.api('POST', `/tasks/${task.id}/events`, { body: { content: { type: 'image', url: 'x' } } }), ['body', 'content']);
      expectInvalid(await svc.api('POST', '/messages', { body: { task_id: task.id, content: 'x', author: 'robot' } }), ['body', 'author']);
      expectInvalid(await svc.api('POST', '/messages', { body: { task_id: task.id, content: 'x', streaming_status: 'HALF' } }), ['body', 'streaming_status']);
      expectInvalid(await svc.api('PATCH', '/tracker/trk_x', { body: { progress: 101 } }), ['body', 'progress']);
      expectInvalid(await svc.api('PATCH', '/tracker/trk_x', { body: { status: '' } }), ['body', 'status']);
      expectInvalid(await svc.api('POST', `/tasks/${task.id}/handler-errors`, { body: { handler: 'onWhatever', message: 'x' } }), ['body', 'handler']);
      expectInvalid(await svc.api('GET', `/events?task_id=${task.id}&limit=0`), ['query', 'limit']);
      expectInvalid(await svc.api('GET', `/messages?task_id=${task.id}&limit=501`), ['query', 'limit']);
      expectInvalid(await svc.api('GET', `/events?task_id=${task.id}&after_sequence_id=x`), ['query', 'after_sequence_id']);
    });

    test('unknown ids are 404s', async () => {
      expectError(await svc.api('POST', '/tasks/task_x/events', { body: { content: 'x' } }), 404, 'not_found', 'Task task_x was not found');
      expectError(await svc.api('POST', '/tasks/task_x/handler-errors', { body: { handler: 'onEvent', message: 'x' } }), 404, 'not_found');
      expectError(await svc.api('POST', '/messages', { body: { task_id: 'task_x', content: 'x' } }), 404, 'not_found', 'Task task_x was not found');
      expectError(await svc.api('PUT', '/messages/msg_x', { body: { content: 'x' } }), 404, 'not_found', 'Message msg_x was not found');
      expectError(await svc.api('GET', '/messages/msg_x'), 404, 'not_found');
      expectError(await svc.api('GET', '/events/evt_x'), 404, 'not_found', 'Event evt_x was not found');
      expectError(await svc.api('GET', '/events?task_id=task_x'), 404, 'not_found');
      expectError(await svc.api('GET', '/messages?task_id=task_x'), 404, 'not_found');
      expectError(await svc.api('GET', '/tracker/trk_x'), 404, 'not_found', 'Tracker trk_x was not found');
      expectError(await svc.api('PATCH', '/tracker/trk_x', { body: { progress: 1 } }), 404, 'not_found');
      expectError(await svc.api('GET', '/tracker?task_id=task_x'), 404, 'not_found');
      expectError(await svc.api('GET', '/tracker?agent_id=agt_x'), 404, 'not_found', 'Agent agt_x was not found');
    });
  });

  describe('GET /tasks/{id}/conversation (read from its end)', () => {
    const page = async (query: string, key?: string) => svc.api('GET', `/tasks/${task.id}/conversation${query}`, { key });
    const summary = (items: { kind: string; data: { id: string; status?: string } }[]) =>
      items.map((i) => (i.kind === 'task' ? `status ${i.data.status}` : `${i.kind} ${i.data.id}`));

    test('pages backwards to the start: events, messages as they are now, status changes; the stream resumes after it', async () => {
      const first = await sendEvent('one');
      const answer = await sendMessage({ content: { type: 'text', text: 'Thinking' }, streaming_status: 'IN_PROGRESS' });
      await svc.client().appendMessageDelta({ params: { message_id: answer.id }, body: { delta: ' aloud', offset: 8 } });
      await svc.client().updateTask({ params: { task_id: task.id }, body: { status: 'IDLE' } });
      const second = await sendEvent('two');
      const last = await svc.api('GET', `/tasks/${task.id}/conversation?limit=2`);
      expect(last.status).toBe(200);
      expect(summary(last.body.items)).toEqual(['status IDLE', `event ${second.id}`]);
      expect(last.body).toMatchObject({ has_more: true, total: 4, status: 'IDLE', last_sequence_id: second.sequence_id });
      const earlier = (await page(`?before_sequence_id=${last.body.items[0].sequence_id}`)).body;
      expect(summary(earlier.items)).toEqual([`event ${first.id}`, `message ${answer.id}`]);
      expect(earlier.items[1].data.content).toEqual({ type: 'text', text: 'Thinking aloud' });
      expect(earlier).toMatchObject({ has_more: false, total: 4 });
      // The stream after last_sequence_id carries only what came after the page was read.
      const later = await sendMessage({ content: 'three' });
      const read = await stream(task.id, { after: last.body.last_sequence_id, stopAfter: 1 });
      expect(read.frames.map((f) => [f.event, f.data.id])).toEqual([['message', later.id]]);
    });

    test('a key that may not run the task gets a 404; bad paging is a 422', async () => {
      const nothing = await scopedKey(svc, []);
      expectError(await page('', nothing), 404, 'not_found', `Task ${task.id} was not found`);
      expectError(await svc.api('GET', '/tasks/task_nope/conversation'), 404, 'not_found', 'Task task_nope was not found');
      expectInvalid(await page('?limit=0'), ['query', 'limit']);
      expectInvalid(await page('?before_sequence_id=0'), ['query', 'before_sequence_id']);
    });
  });
});
