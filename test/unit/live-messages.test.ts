import { describe, expect, test } from 'vitest';
import type { Message, MessageContent as Content, MessageDelta } from '../../src/contract/conversation.js';
import { LiveMessages } from '../../src/cli/output/live-messages.js';

const message = (id: string, content: Content, streaming_status: Message['streaming_status']): Message => ({
  id,
  task_id: 'task_1',
  author: 'agent',
  content,
  streaming_status,
  streaming_error: null,
  sequence_id: 1,
  updated_sequence_id: 1,
  created_at: 'x',
  updated_at: 'x',
});
const delta = (message_id: string, offset: number, text: string): MessageDelta => ({ message_id, task_id: 'task_1', sequence_id: 2, offset, delta: text });

/** Feeds one streamed text message ("Hello\nworld") and records each write. */
function writesOf(inPlace: boolean): string[] {
  const writes: string[] = [];
  const live = new LiveMessages((text) => writes.push(text), inPlace);
  live.message(message('m1', { type: 'text', text: 'Hel' }, 'IN_PROGRESS'));
  live.delta(delta('m1', 3, 'lo\nwor'));
  live.delta(delta('m1', 9, 'ld'));
  live.message(message('m1', { type: 'text', text: 'Hello\nworld' }, 'DONE'));
  return writes;
}

describe('tasks watch: streamed messages', () => {
  test('on a terminal each delta is written as it arrives, then a newline at the end', () => {
    expect(writesOf(true)).toEqual(['Hel', 'lo\nwor', 'ld', '\n']);
  });

  test('piped, only whole lines are written as they complete, the rest at the end', () => {
    expect(writesOf(false)).toEqual(['Hello\n', 'world', '\n']);
  });

  test('reasoning and a tool call read with their prefix, the call’s id when it finishes', () => {
    const writes: string[] = [];
    const live = new LiveMessages((text) => writes.push(text), true);
    live.message(message('r', { type: 'reasoning', summary: 'Look' }, 'IN_PROGRESS'));
    live.delta(delta('r', 4, 'ing.'));
    live.message(message('r', { type: 'reasoning', summary: 'Looking.' }, 'DONE'));
    live.message(message('t', { type: 'tool_request', name: 'lookup', call_id: 'c1', arguments: '' }, 'IN_PROGRESS'));
    live.delta(delta('t', 0, '{"q":1}'));
    live.message(message('t', { type: 'tool_request', name: 'lookup', call_id: 'c1', arguments: '{"q":1}' }, 'DONE'));
    expect(writes.join('')).toBe('(thinking) Looking.\n→ lookup({"q":1}) [c1]\n');
  });

  test('a message that finished before the watch saw it stream is left to the caller', () => {
    const live = new LiveMessages(() => {}, true);
    expect(live.message(message('m', { type: 'text', text: 'whole' }, 'DONE'))).toBe(false);
    expect(live.message(message('d', { type: 'data', data: {} }, 'IN_PROGRESS'))).toBe(false);
  });
});
