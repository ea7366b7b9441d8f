import { beforeEach, describe, expect, test } from 'vitest';
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
  const append = async (messageId: string, delta: string) => {
    const res = await svc.api('POST', `/messages/${messageId}/deltas`, { body: { delta } });
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
    const deltas = [await append(message.id, 'llo'), await append(message.id, ', wor'), await append(message.id, 'ld')];
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
    await append(message.id, 'one ');
    await append(message.id, 'two');
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
    expect((await append(message.id, '👋🏽 ok')).offset).toBe(3);
    expect((await append(message.id, '!')).offset).toBe(3 + [...'👋🏽 ok'].length);
    expect((await getMessage(message.id)).content).toEqual({ type: 'text', text: 'né 👋🏽 ok!' });
  });

  test('reasoning deltas extend the summary and tool_request deltas the arguments', async () => {
    const reasoning = await startMessage({ type: 'reasoning', summary: '' });
    await append(reasoning.id, 'The user wants ');
    await append(reasoning.id, 'the weather.');
    const call = await startMessage({ type: 'tool_request', name: 'get_weather', call_id: 'call_1' });
    expect((await append(call.id, '{"city":')).offset).toBe(0);
    expect((await append(call.id, '"Oslo"}')).offset).toBe(8);
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

  test('409 message_not_streamable for a delta to a part that has no streamed field', async () => {
    const answer = await startMessage({ type: 'tool_response', call_id: 'call_1', result: 1 });
    expectError(await svc.api('POST', `/messages/${answer.id}/deltas`, { body: { delta: 'x' } }), 409, 'message_not_streamable');
  });

  test('409 message_not_streaming for a delta to a finished message, or to one never streamed; nothing changes', async () => {
    const done = await startMessage('final');
    await finish(done.id);
    const whole = await startMessage('whole', null);
    expectError(await svc.api('POST', `/messages/${done.id}/deltas`, { body: { delta: 'late' } }), 409, 'message_not_streaming');
    expectError(await svc.api('POST', `/messages/${whole.id}/deltas`, { body: { delta: 'late' } }), 409, 'message_not_streaming');
    expect((await getMessage(done.id)).content).toEqual({ type: 'text', text: 'final' });
    expect((await getMessage(whole.id)).content).toEqual({ type: 'text', text: 'whole' });
  });

  test('a stream that fails ends FAILED with its reason, and takes no more deltas', async () => {
    const message = await startMessage('partial');
    const res = await finish(message.id, { streaming_status: 'FAILED', streaming_error: 'model overloaded' });
    expect(res.body).toMatchObject({ streaming_status: 'FAILED', streaming_error: 'model overloaded', content: { type: 'text', text: 'partial' } });
    expectError(await svc.api('POST', `/messages/${message.id}/deltas`, { body: { delta: 'x' } }), 409, 'message_not_streaming');
    expectInvalid(await finish(message.id, { streaming_status: 'DONE', streaming_error: 'no' }), ['body', 'streaming_error']);
  });

  test('404 for an unknown message and for one on a task the caller cannot run', async () => {
    const message = await startMessage();
    expectError(await svc.api('POST', '/messages/msg_missing/deltas', { body: { delta: 'x' } }), 404, 'not_found');
    const stranger = await scopedKey(svc, [], 'stranger');
    expectError(await svc.api('POST', `/messages/${message.id}/deltas`, { body: { delta: 'x' }, key: stranger }), 404, 'not_found');
    expect((await getMessage(message.id)).content).toEqual({ type: 'text', text: '' });
  });

  test('413 for a delta longer than MESSAGE_DELTA_MAX, and for one that would grow the message past MESSAGE_TEXT_MAX', async () => {
    const message = await startMessage('x'.repeat(MESSAGE_TEXT_MAX - 1));
    expectError(await svc.api('POST', `/messages/${message.id}/deltas`, { body: { delta: 'y'.repeat(MESSAGE_DELTA_MAX + 1) } }), 413, 'delta_too_large');
    expectError(await svc.api('POST', `/messages/${message.id}/deltas`, { body: { delta: 'yy' } }), 413, 'message_too_large');
    expect((await append(message.id, 'y')).offset).toBe(MESSAGE_TEXT_MAX - 1);
    expectInvalid(await svc.api('POST', `/messages/${message.id}/deltas`, { body: { delta: '' } }), ['body', 'delta']);
  });

  test('a reader that reconnects with Last-Event-ID in the middle of a message gets the rest exactly once', async () => {
    const message = await startMessage('The ');
    await append(message.id, 'quick ');
    await append(message.id, 'brown ');
    // The first connection drops after the task, the message and one delta.
    const first = await stream({ stopAfter: 3 });
    expect(first.frames.map((f) => f.event)).toEqual(['task', 'message', 'message_delta']);
    await append(message.id, 'fox');
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
    await append(message.id, 'upon ');
    // Joins now: replays the created item and the delta so far, then follows what comes while it reads.
    let writing: Promise<unknown> = Promise.resolve();
    const read = await stream({
      onOpen: () => {
        writing = (async () => {
          await append(message.id, 'a ');
          await append(message.id, 'time');
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
    await append(message.id, 'cd');
    const snapshot = await getMessage(message.id);
    await append(message.id, 'ef');
    await finish(message.id);
    await complete();
    const read = await stream({ after: snapshot.updated_sequence_id });
    expect(snapshot.content).toEqual({ type: 'text', text: 'abcd' });
    expect(rebuild(read.frames, message.id, 'abcd')).toBe('abcdef');
  });
});
