import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, test } from 'vitest';
import { createClient, ApiRequestError } from '../../src/client/index.js';
import type { StreamRecord } from '../../src/contract/conversation.js';

const task = (sequence: number, status: string) =>
  `id: ${sequence}\nevent: task\ndata: ${JSON.stringify({ id: 'task_1', filesystem_id: 'fs_1', namespace_id: 'ns_1', status })}\n\n`;
const message = (sequence: number, text: string) =>
  `id: ${sequence}\nevent: message\ndata: ${JSON.stringify({ id: `msg_${sequence}`, task_id: 'task_1', author: 'agent', content: { type: 'text', text }, streaming_status: null, sequence_id: sequence, updated_sequence_id: sequence, created_at: 'x', updated_at: 'x' })}\n\n`;

describe('client.streamTask', () => {
  let server: Server | undefined;
  afterEach(async () => {
    server?.closeAllConnections();
    await new Promise((resolve) => server?.close(resolve));
  });

  async function serve(handler: (req: IncomingMessage, res: ServerResponse) => void): Promise<string> {
    server = createServer(handler);
    await new Promise<void>((resolve) => server!.listen(0, '127.0.0.1', resolve));
    return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  }

  test('reconnects after a dropped connection with Last-Event-ID and yields nothing twice', async () => {
    const seen: string[] = [];
    const url = await serve((req, res) => {
      seen.push(String(req.headers['last-event-id']));
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      if (seen.length === 1) {
        // Two records, a heartbeat, then the connection dies mid-stream.
        res.write(`${task(1, 'RUNNING') + message(2, 'one')}: heartbeat\n\nid: 3\nevent: mess`);
        setTimeout(() => res.socket?.destroy(), 20);
      } else {
        // A server may repeat what the client already has: the client skips it.
        res.end(message(2, 'one') + message(3, 'two') + task(4, 'COMPLETED'));
      }
    });
    const client = createClient({ baseUrl: url, apiKey: 'agk_test' });
    const records: StreamRecord[] = [];
    for await (const record of client.streamTask('task_1', { backoffMs: 1 })) records.push(record);
    expect(records.map((r) => [r.kind, r.sequence_id])).toEqual([
      ['task', 1],
      ['message', 2],
      ['message', 3],
      ['task', 4],
    ]);
    expect(seen).toEqual(['0', '2']);
  });

  test('starts after afterSequenceId and sends the key', async () => {
    let auth: string | undefined;
    let lastEventId: string | undefined;
    const url = await serve((req, res) => {
      auth = req.headers.authorization;
      lastEventId = String(req.headers['last-event-id']);
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.end(task(8, 'CANCELED'));
    });
    const records: StreamRecord[] = [];
    for await (const record of createClient({ baseUrl: url, apiKey: 'agk_secret' }).streamTask('task_1', { afterSequenceId: 7 })) records.push(record);
    expect(records.map((r) => r.sequence_id)).toEqual([8]);
    expect([auth, lastEventId]).toEqual(['Bearer agk_secret', '7']);
  });

  test('a 404 is an ApiRequestError with the server’s code, not a retry', async () => {
    let calls = 0;
    const url = await serve((_req, res) => {
      calls++;
      res.writeHead(404, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ detail: 'Task task_1 was not found', code: 'not_found' }));
    });
    const iterate = async () => {
      for await (const _ of createClient({ baseUrl: url }).streamTask('task_1')) void _;
    };
    const error = await iterate().catch((e) => e);
    expect(error).toBeInstanceOf(ApiRequestError);
    expect([error.status, error.code, error.message]).toEqual([404, 'not_found', 'Task task_1 was not found']);
    expect(calls).toBe(1);
  });

  test('the caller’s signal ends the stream', async () => {
    const url = await serve((_req, res) => {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.write(task(1, 'RUNNING'));
    });
    const controller = new AbortController();
    const records: StreamRecord[] = [];
    const error = await (async () => {
      for await (const record of createClient({ baseUrl: url }).streamTask('task_1', { signal: controller.signal })) {
        records.push(record);
        controller.abort(new Error('stop'));
      }
    })().catch((e) => e);
    expect(records).toHaveLength(1);
    expect(error?.message).toBe('stop');
  });
});
