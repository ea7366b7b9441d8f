import { beforeEach, describe, expect, test } from 'vitest';
import { createClient } from '../../src/client/index.js';
import { send, TransportError } from '../../src/client/transport.js';
import { Message, MessageDelta } from '../../src/contract/conversation.js';
import { MESSAGE_DELTA_MAX, MESSAGE_TEXT_MAX } from '../../src/contract/enums.js';
import type { Task } from '../../src/contract/resources.js';
import { engines, useService } from '../support/service.js';
import { createTask, deployActive } from '../support/fixtures.js';
import { expectError, expectInvalid } from '../support/bad-input.js';
import { scopedKey } from '../support/scoped-key.js';
import { readSse, type SseFrame } from '../support/sse.js';

describe.each(engines)('streamed messages: deltas (%s)', (engine) => {
  const svc = useService(engine, { streamHeartbeatMs: 300 });
  let task: Task;
  beforeEach(async () => {
    await deployActive(svc);
    task = await createTask(svc);
  });

  const startMessage = async (content: unknown = '', streaming_status: string | null = 'IN_PROGRESS') => {
    const res = await svc.api('POST', '/messages', { body: { task_id: task.id, content, streaming_status } });
    expect(res.status, JSON.stringify(res.body)).toBe(201);
    return Message.strict().parse(res.body);
  };
  const append = async (messageId: string, delta: string, offset: number) => {
    const res = await svc.api('POST', `/messages/${messageId}/deltas`, { body: { delta, offset } });
    expect(res.status, JSON.stringify(res.body)).toBe(201);
    return MessageDelta.strict().parse(res.body);
  };
  const getMessage = async (messageId: string) => Message.strict().parse((await svc.api('GET', `/messages/${messageId}`)).body);
  const finish = (messageId: string, body: Record<string, unknown> = { streaming_status: 'DONE' }) => svc.api('PUT', `/messages/${messageId}`, { body });
  const complete = () => svc.client().updateTask({ params: { task_id: task.id }, body: { status: 'COMPLETED' } });
  const stream = (options: { after?: number; lastEventId?: string; stopAfter?: number; onOpen?: () => void } = {}) =>
    readSse(svc, `/tasks/${task.id}/stream${options.after !== undefined ? `?after_sequence_id=${options.after}` : ''}`, {
      key: svc.adminKey,
      headers: options.lastEventId !== undefined ? { 'last-event-id': options.lastEventId } : {},
      stopAfter: options.stopAfter,
      onOpen: options.onOpen,
    });
  /** What a reader rebuilds of one message from stream frames: the message's text as created, plus each delta at its offset. */
  const rebuild = (frames: SseFrame[], messageId: string, from = '') => {
    let text = from;
    for (const frame of frames) {
      if (frame.event === 'message' && frame.data.id === messageId) text = frame.data.content.text;
      if (frame.event === 'message_delta' && frame.data.message_id === messageId) {
        expect(frame.data.offset).toBe([...text].length);
        text += frame.data.delta;
      }
    }
    return text;
  };

  test('deltas append in order: each takes the next sequence_id and starts where the text ended; the record holds the concatenation', async () => {
    const message = await startMessage('He');
    const deltas = [await append(message.id, 'llo', 2), await append(message.id, ', wor', 5), await append(message.id, 'ld', 10)];
    expect(deltas).toEqual([
      { message_id: message.id, task_id: task.id, sequence_id: message.sequence_id + 1, offset: 2, delta: 'llo' },
      { message_id: message.id, task_id: task.id, sequence_id: message.sequence_id + 2, offset: 5, delta: ', wor' },
      { message_id: message.id, task_id: task.id, sequence_id: message.sequence_id + 3, offset: 10, delta: 'ld' },
    ]);
    expect(await getMessage(message.id)).toMatchObject({
      content: { type: 'text', text: 'Hello, world' },
      streaming_status: 'IN_PROGRESS',
      sequence_id: message.sequence_id,
      updated_sequence_id: message.sequence_id + 3,
    });
  });

  test('the stream carries each delta as a message_delta item, then the finish as a message_update', async () => {
    const message = await startMessage();
    await append(message.id, 'one ', 0);
    await append(message.id, 'two', 4);
    expect((await finish(message.id)).status).toBe(200);
    await complete();
    const read = await stream();
    expect(read.frames.map((f) => [f.event, f.data.delta ?? f.data.streaming_status ?? f.data.status])).toEqual([
      ['task', 'RUNNING'],
      ['message', 'IN_PROGRESS'],
      ['message_delta', 'one '],
      ['message_delta', 'two'],
      ['message_update', 'DONE'],
      ['task', 'COMPLETED'],
    ]);
    expect(read.frames[4]!.data).toMatchObject({ content: { type: 'text', text: 'one two' }, streaming_status: 'DONE', streaming_error: null });
    expect(rebuild(read.frames, message.id)).toBe('one two');
  });

  test('offsets count characters (code points), not bytes or UTF-16 units', async () => {
    const message = await startMessage('né ');
    expect((await append(message.id, '👋🏽 ok', 3)).offset).toBe(3);
    expect((await append(message.id, '!', 3 + [...'👋🏽 ok'].length)).offset).toBe(3 + [...'👋🏽 ok'].length);
    expect((await getMessage(message.id)).content).toEqual({ type: 'text', text: 'né 👋🏽 ok!' });
  });

  test('reasoning deltas extend the summary and tool_request deltas the arguments', async () => {
    const reasoning = await startMessage({ type: 'reasoning', summary: '' });
    await append(reasoning.id, 'The user wants ', 0);
    await append(reasoning.id, 'the weather.', 15);
    const call = await startMessage({ type: 'tool_request', name: 'get_weather', call_id: 'call_1' });
    expect((await append(call.id, '{"city":', 0)).offset).toBe(0);
    expect((await append(call.id, '"Oslo"}', 8)).offset).toBe(8);
    expect((await getMessage(reasoning.id)).content).toEqual({ type: 'reasoning', summary: 'The user wants the weather.' });
    expect((await getMessage(call.id)).content).toEqual({ type: 'tool_request', name: 'get_weather', call_id: 'call_1', arguments: '{"city":"Oslo"}' });
  });

  test('tool_response and data parts are stored whole', async () => {
    const answer = await startMessage({ type: 'tool_response', call_id: 'call_1', result: { temperature_c: 21 } }, null);
    const failed = await startMessage({ type: 'tool_response', call_id: 'call_2', error: 'city not found' }, null);
    expect(answer.content).toEqual({ type: 'tool_response', call_id: 'call_1', result: { temperature_c: 21 } });
    expect(failed.content).toEqual({ type: 'tool_response', call_id: 'call_2', error: 'city not found' });
    expectInvalid(await svc.api('POST', '/messages', { body: { task_id: task.id, content: { type: 'tool_request', name: 'x' } } }), ['body', 'content']);
  });

  const post = (messageId: string, body: unknown) => svc.api('POST', `/messages/${messageId}/deltas`, { body });
  /** The task's message_delta items so far, as `offset:delta`. */
  const streamedDeltas = async () => {
    await complete();
    return (await stream()).frames.filter((f) => f.event === 'message_delta').map((f) => `${f.data.offset}:${f.data.delta}`);
  };

  test('a retried delta (the same delta at the same offset) answers its first record and is applied once, even after later deltas and the finish', async () => {
    const message = await startMessage('He');
    const first = await append(message.id, 'llo', 2);
    expect(await append(message.id, 'llo', 2)).toEqual(first);
    const second = await append(message.id, ' world', 5);
    expect(await append(message.id, 'llo', 2)).toEqual(first);
    await finish(message.id);
    expect(await append(message.id, ' world', 5)).toEqual(second);
    expect(await getMessage(message.id)).toMatchObject({ content: { type: 'text', text: 'Hello world' }, updated_sequence_id: message.sequence_id + 3 });
    expect(await streamedDeltas()).toEqual(['2:llo', '5: world']);
  });

  test('the client retries a delta whose answer was lost, and the server applies it once', async () => {
    const message = await startMessage('a');
    let lost = 0;
    // The request reaches the server; its answer does not reach the client (a dropped connection).
    const client = createClient({
      baseUrl: svc.url,
      apiKey: svc.adminKey,
      retries: 1,
      backoffMs: 1,
      transport: async (url, request) => {
        const response = await send(url, request);
        if (url.endsWith('/deltas') && lost++ === 0) throw new TransportError('ECONNRESET', 'socket hang up');
        return response;
      },
    });
    const record = await client.appendMessageDelta({ params: { message_id: message.id }, body: { delta: 'b', offset: 1 } });
    expect(lost).toBe(2);
    expect(record).toEqual({ message_id: message.id, task_id: task.id, sequence_id: message.sequence_id + 1, offset: 1, delta: 'b' });
    expect((await getMessage(message.id)).content).toEqual({ type: 'text', text: 'ab' });
    expect(await streamedDeltas()).toEqual(['1:b']);
  });

  test('409 delta_offset_mismatch for an offset past the end, or a different delta where text already is; nothing is written', async () => {
    const message = await startMessage('abc');
    await append(message.id, 'de', 3);
    expectError(
      await post(message.id, { delta: 'x', offset: 6 }),
      409,
      'delta_offset_mismatch',
      `Message ${message.id} has 5 characters in its text; a delta at offset 6 would leave a gap`,
    );
    expectError(
      await post(message.id, { delta: 'x', offset: 3 }),
      409,
      'delta_offset_mismatch',
      `Message ${message.id} has 5 characters in its text; a delta at offset 3 would overwrite what is there`,
    );
    // Longer than what is at its offset: not the delta that was written there.
    expectError(await post(message.id, { delta: 'def', offset: 3 }), 409, 'delta_offset_mismatch');
    // The text matches but came with the create, not as a delta at that offset.
    expectError(await post(message.id, { delta: 'bc', offset: 1 }), 409, 'delta_offset_mismatch');
    // Nothing took a sequence number: the next delta follows the last one.
    expect(await append(message.id, 'f', 5)).toMatchObject({ sequence_id: message.sequence_id + 2, offset: 5 });
    expect((await getMessage(message.id)).content).toEqual({ type: 'text', text: 'abcdef' });
    expect(await streamedDeltas()).toEqual(['3:de', '5:f']);
  });

  test('an offset is required: missing, negative or not an integer is 422', async () => {
    const message = await startMessage();
    expectInvalid(await post(message.id, { delta: 'x' }), ['body', 'offset']);
    expectInvalid(await post(message.id, { delta: 'x', offset: -1 }), ['body', 'offset']);
    expectInvalid(await post(message.id, { delta: 'x', offset: 0.5 }), ['body', 'offset']);
    expect((await getMessage(message.id)).content).toEqual({ type: 'text', text: '' });
  });

  test('concurrent writers at the same offset: one delta is appended, the others get 409; the same delta sent at once is applied once', async () => {
    const message = await startMessage('>');
    const writers = await Promise.all(Array.from({ length: 8 }, (_, i) => post(message.id, { delta: `w${i}`, offset: 1 })));
    const won = writers.filter((res) => res.status === 201);
    expect(won).toHaveLength(1);
    for (const res of writers) if (res.status !== 201) expectError(res, 409, 'delta_offset_mismatch');
    const winner = won[0]!.body.delta as string;
    const retries = await Promise.all(Array.from({ length: 8 }, () => post(message.id, { delta: '!', offset: 3 })));
    expect(retries.map((res) => res.status)).toEqual(Array(8).fill(201));
    expect(new Set(retries.map((res) => JSON.stringify(res.body))).size).toBe(1);
    expect((await getMessage(message.id)).content).toEqual({ type: 'text', text: `>${winner}!` });
    expect(await streamedDeltas()).toEqual([`1:${winner}`, '3:!']);
  });

  test('409 message_not_streamable for a delta to a part that has no streamed field', async () => {
    const answer = await startMessage({ type: 'tool_response', call_id: 'call_1', result: 1 });
    expectError(await svc.api('POST', `/messages/${answer.id}/deltas`, { body: { delta: 'x', offset: 0 } }), 409, 'message_not_streamable');
  });

  test('409 message_not_streaming for a delta to a finished message, or to one never streamed; nothing changes', async () => {
    const done = await startMessage('final');
    await finish(done.id);
    const whole = await startMessage('whole', null);
    expectError(await svc.api('POST', `/messages/${done.id}/deltas`, { body: { delta: 'late', offset: 5 } }), 409, 'message_not_streaming');
    expectError(await svc.api('POST', `/messages/${whole.id}/deltas`, { body: { delta: 'late', offset: 5 } }), 409, 'message_not_streaming');
    expect((await getMessage(done.id)).content).toEqual({ type: 'text', text: 'final' });
    expect((await getMessage(whole.id)).content).toEqual({ type: 'text', text: 'whole' });
  });

  test('a stream that fails ends FAILED with its reason, and takes no more deltas', async () => {
    const message = await startMessage('partial');
    const res = await finish(message.id, { streaming_status: 'FAILED', streaming_error: 'model overloaded' });
    expect(res.body).toMatchObject({ streaming_status: 'FAILED', streaming_error: 'model overloaded', content: { type: 'text', text: 'partial' } });
    expectError(await svc.api('POST', `/messages/${message.id}/deltas`, { body: { delta: 'x', offset: 7 } }), 409, 'message_not_streaming');
    expectInvalid(await finish(message.id, { streaming_status: 'DONE', streaming_error: 'no' }), ['body', 'streaming_error']);
  });

  test('404 for an unknown message and for one on a task the caller cannot run', async () => {
    const message = await startMessage();
    expectError(await svc.api('POST', '/messages/msg_missing/deltas', { body: { delta: 'x', offset: 0 } }), 404, 'not_found');
    const stranger = await scopedKey(svc, [], 'stranger');
    expectError(await svc.api('POST', `/messages/${message.id}/deltas`, { body: { delta: 'x', offset: 0 }, key: stranger }), 404, 'not_found');
    expect((await getMessage(message.id)).content).toEqual({ type: 'text', text: '' });
  });

  test('413 for a delta longer than MESSAGE_DELTA_MAX, and for one that would grow the message past MESSAGE_TEXT_MAX', async () => {
    const message = await startMessage('x'.repeat(MESSAGE_TEXT_MAX - 1));
    const end = MESSAGE_TEXT_MAX - 1;
    expectError(
      await svc.api('POST', `/messages/${message.id}/deltas`, { body: { delta: 'y'.repeat(MESSAGE_DELTA_MAX + 1), offset: end } }),
      413,
      'delta_too_large',
    );
    expectError(await svc.api('POST', `/messages/${message.id}/deltas`, { body: { delta: 'yy', offset: end } }), 413, 'message_too_large');
    expect((await append(message.id, 'y', end)).offset).toBe(end);
    expectInvalid(await svc.api('POST', `/messages/${message.id}/deltas`, { body: { delta: '', offset: MESSAGE_TEXT_MAX } }), ['body', 'delta']);
  });

  test('a reader that reconnects with Last-Event-ID in the middle of a message gets the rest exactly once', async () => {
    const message = await startMessage('The ');
    await append(message.id, 'quick ', 4);
    await append(message.id, 'brown ', 10);
    // The first connection drops after the task, the message and one delta.
    const first = await stream({ stopAfter: 3 });
    expect(first.frames.map((f) => f.event)).toEqual(['task', 'message', 'message_delta']);
    await append(message.id, 'fox', 16);
    await finish(message.id);
    await complete();
    const rest = await stream({ lastEventId: first.frames.at(-1)!.id });
    expect(rest.frames.map((f) => [f.event, f.data.delta ?? f.data.status ?? f.data.streaming_status])).toEqual([
      ['message_delta', 'brown '],
      ['message_delta', 'fox'],
      ['message_update', 'DONE'],
      ['task', 'COMPLETED'],
    ]);
    const rebuilt = rebuild(rest.frames, message.id, rebuild(first.frames, message.id));
    expect(rebuilt).toBe('The quick brown fox');
    expect((await getMessage(message.id)).content).toEqual({ type: 'text', text: rebuilt });
  });

  test('a late joiner gets the message so far, then the live deltas', async () => {
    const message = await startMessage('Once ');
    await append(message.id, 'upon ', 5);
    // Joins now: replays the created item and the delta so far, then follows what comes while it reads.
    let writing: Promise<unknown> = Promise.resolve();
    const read = await stream({
      onOpen: () => {
        writing = (async () => {
          await append(message.id, 'a ', 10);
          await append(message.id, 'time', 12);
          await finish(message.id);
          await complete();
        })();
      },
    });
    await writing;
    expect(read.ended).toBe(true);
    expect(read.frames.map((f) => f.event)).toEqual(['task', 'message', 'message_delta', 'message_delta', 'message_delta', 'message_update', 'task']);
    expect(rebuild(read.frames, message.id)).toBe('Once upon a time');
  });

  test('a late joiner may start from the message record: streaming after its updated_sequence_id gives exactly the rest', async () => {
    const message = await startMessage('ab');
    await append(message.id, 'cd', 2);
    const snapshot = await getMessage(message.id);
    await append(message.id, 'ef', 4);
    await finish(message.id);
    await complete();
    const read = await stream({ after: snapshot.updated_sequence_id });
    expect(snapshot.content).toEqual({ type: 'text', text: 'abcd' });
    expect(rebuild(read.frames, message.id, 'abcd')).toBe('abcdef');
  });
});
