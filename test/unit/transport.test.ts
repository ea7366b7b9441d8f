import { createServer, type Server, type Socket } from 'node:net';
import { afterEach, describe, expect, test } from 'vitest';
import { send, TransportError } from '../../src/client/transport.js';

// The CLI's plain-http transport writes HTTP/1.1 on a node:net socket (transport.ts says why). These
// tests answer it from a raw TCP server, byte for byte, in the shapes a server or a proxy may use.

let server: Server | undefined;
afterEach(async () => {
  await new Promise((resolve) => (server ? server.close(resolve) : resolve(undefined)));
  server = undefined;
});

/** A TCP server that hands each connection's request text to `answer`, which writes the response bytes. */
async function raw(answer: (socket: Socket, request: string) => void): Promise<{ url: string; requests: string[] }> {
  const requests: string[] = [];
  server = createServer((socket) => {
    let text = '';
    socket.on('data', (d) => {
      text += d.toString('utf8');
      const headEnd = text.indexOf('\r\n\r\n');
      if (headEnd < 0) return;
      const length = Number(/\r\ncontent-length: (\d+)/i.exec(text.slice(0, headEnd))?.[1] ?? 0);
      if (Buffer.byteLength(text.slice(headEnd + 4)) < length) return;
      requests.push(text);
      answer(socket, text);
    });
    socket.on('error', () => {});
  });
  await new Promise<void>((resolve) => server!.listen(0, '127.0.0.1', resolve));
  return { url: `http://127.0.0.1:${(server!.address() as { port: number }).port}`, requests };
}

const signal = () => new AbortController().signal;
const writeInPieces = async (socket: Socket, pieces: (string | Buffer)[]) => {
  for (const piece of pieces) {
    socket.write(piece);
    await new Promise((r) => setTimeout(r, 5));
  }
};

describe('plain-http transport', () => {
  test('sends the method, path, query, Host, headers and body; reads a content-length answer from a server that keeps the connection open', async () => {
    const remote = await raw((socket) => socket.write('HTTP/1.1 201 Created\r\nContent-Type: application/json\r\nX-Request-Id: req_1\r\nContent-Length: 12\r\n\r\n{"id":"ü1"}trailing bytes past the length'));
    let sent = false;
    const response = await send(`${remote.url}/tasks?limit=2&name=a%20b`, { method: 'POST', headers: { authorization: 'Bearer k', 'content-type': 'application/json' }, body: '{"name":"é"}', signal: signal(), onSent: () => (sent = true) });
    expect(response).toMatchObject({ status: 201, statusText: 'Created', text: '{"id":"ü1"}' });
    expect(response.headers.get('X-Request-ID')).toBe('req_1');
    expect(response.headers.get('retry-after')).toBeNull();
    expect(sent).toBe(true);
    const port = new URL(remote.url).port;
    expect(remote.requests).toEqual([`POST /tasks?limit=2&name=a%20b HTTP/1.1\r\nhost: 127.0.0.1:${port}\r\nauthorization: Bearer k\r\ncontent-type: application/json\r\nconnection: close\r\ncontent-length: 13\r\n\r\n{"name":"é"}`]);
  });

  test('a chunked body split anywhere (a multi-byte character and the last chunk across writes), with trailers', async () => {
    const remote = await raw((socket) =>
      void writeInPieces(socket, ['HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\n{"a":\r\n', Buffer.from('4;ext=1\r\n"é"\r\n').subarray(0, 11), Buffer.from('4;ext=1\r\n"é"\r\n').subarray(11), '1\r\n}\r\n0\r', '\nTrailer-Field: x\r\n\r', '\n']),
    );
    const response = await send(remote.url + '/x', { method: 'GET', headers: {}, signal: signal() });
    expect(response.text).toBe('{"a":"é"}');
  });

  test('interim 1xx answers are skipped; a body without length ends with the connection', async () => {
    const remote = await raw((socket) => void writeInPieces(socket, ['HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 103 Early Hints\r\nLink: </a>\r\n\r\n', 'HTTP/1.1 502 Bad Gateway\r\nContent-Type: text/html\r\n\r\n<html>', 'down</html>']).then(() => socket.end()));
    const response = await send(remote.url, { method: 'GET', headers: {}, signal: signal() });
    expect(response).toMatchObject({ status: 502, statusText: 'Bad Gateway', text: '<html>down</html>' });
    expect(response.headers.get('link')).toBeNull();
  });

  test('204 has no body; repeated headers are joined', async () => {
    const remote = await raw((socket) => socket.write('HTTP/1.1 204 No Content\r\nVary: a\r\nVary: b\r\n\r\n'));
    const response = await send(remote.url, { method: 'DELETE', headers: {}, signal: signal() });
    expect(response).toMatchObject({ status: 204, text: '' });
    expect(response.headers.get('vary')).toBe('a, b');
  });

  test('a connection closed with no answer is a hang-up (ECONNRESET); cut inside the body or not HTTP at all says so', async () => {
    const hangUp = await raw((socket) => socket.destroy());
    await expect(send(hangUp.url, { method: 'GET', headers: {}, signal: signal() })).rejects.toMatchObject({ name: 'Error', code: 'ECONNRESET' });
    await new Promise((resolve) => server!.close(resolve));
    const cut = await raw((socket) => socket.end('HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\n{"a"'));
    await expect(send(cut.url, { method: 'GET', headers: {}, signal: signal() })).rejects.toEqual(new TransportError('HPE_INVALID_RESPONSE', 'the connection closed before the whole body arrived'));
    await new Promise((resolve) => server!.close(resolve));
    const ssh = await raw((socket) => socket.end('SSH-2.0-OpenSSH_9.6\r\n\r\n'));
    await expect(send(ssh.url, { method: 'GET', headers: {}, signal: signal() })).rejects.toEqual(new TransportError('HPE_INVALID_RESPONSE', 'not an HTTP/1.1 status line: "SSH-2.0-OpenSSH_9.6"'));
  });

  test('nothing listening is ECONNREFUSED; an abort rejects with the signal’s reason and closes the connection', async () => {
    await expect(send('http://127.0.0.1:1/', { method: 'GET', headers: {}, signal: signal() })).rejects.toMatchObject({ code: 'ECONNREFUSED' });
    let closed = false;
    const remote = await raw((socket) => socket.on('close', () => (closed = true)));
    const reason = new Error('Ctrl-C');
    const controller = new AbortController();
    const pending = send(remote.url, { method: 'GET', headers: {}, signal: controller.signal });
    await new Promise((r) => setTimeout(r, 50));
    controller.abort(reason);
    await expect(pending).rejects.toBe(reason);
    await new Promise((r) => setTimeout(r, 50));
    expect(closed).toBe(true);
  });

  test('a header value with a line break is refused before anything is sent', async () => {
    const remote = await raw((socket) => socket.end('HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n'));
    await expect(send(remote.url, { method: 'GET', headers: { authorization: 'Bearer agk_x\r\nX-Evil: 1' }, signal: signal() })).rejects.toThrow('Invalid character in header content ["authorization"]');
    expect(remote.requests).toEqual([]);
  });
});
