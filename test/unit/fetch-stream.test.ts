// The console's way of streaming a task (the client over fetch, as in a browser): a dropped
// connection is resumed with Last-Event-ID, and a record sent again is not shown twice.
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, expect, test } from 'vitest';
import { createClient } from '../../src/client/index.js';
import { fetchStreamOpener, fetchTransport } from '../../src/client/fetch-transport.js';

const record = (id: number, kind: string, data: object) => `id: ${id}\nevent: ${kind}\ndata: ${JSON.stringify(data)}\n\n`;
const message = (id: number, text: string) =>
  record(id, 'message', { id: `msg_${id}`, task_id: 'task_1', author: 'agent', content: { type: 'text', text }, sequence_id: id });

const asked: string[] = [];
const headersSeen: (string | undefined)[] = [];
const server = createServer((req: IncomingMessage, res: ServerResponse) => {
  asked.push(String(req.headers['last-event-id']));
  headersSeen.push(req.headers['x-csrf-token'] as string | undefined);
  res.writeHead(200, { 'content-type': 'text/event-stream' });
  if (req.headers['last-event-id'] === '0') {
    // Two records, then the connection drops.
    res.write(message(1, 'one') + message(2, 'two'));
    setTimeout(() => res.socket?.destroy(), 50);
  } else {
    // The resumed stream repeats record 2 (as a server may around a reconnect), then goes on to the end.
    res.end(message(2, 'two') + message(3, 'three') + record(4, 'task', { id: 'task_1', status: 'COMPLETED' }));
  }
});
let url = '';
beforeAll(async () => {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

test('a fetch-streamed task resumes after a drop with Last-Event-ID, each record once, with the page’s headers', async () => {
  const headers = () => ({ 'x-csrf-token': 'csrf-1' });
  const client = createClient({ baseUrl: url, transport: fetchTransport({ headers }), streamOpener: fetchStreamOpener({ headers }), backoffMs: 10 });
  const seen: number[] = [];
  let retries = 0;
  for await (const r of client.streamTask('task_1', { backoffMs: 10, onRetry: () => retries++ })) seen.push(r.sequence_id);
  expect(seen).toEqual([1, 2, 3, 4]);
  expect(asked).toEqual(['0', '2']);
  expect(retries).toBe(1);
  expect(headersSeen).toEqual(['csrf-1', 'csrf-1']);
});
