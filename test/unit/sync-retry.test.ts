// syncDown against a server that says "later" (429 from a key's rate limit, 503 while busy): the
// download is a GET that changed nothing yet, so it is asked again after Retry-After, a bounded
// number of times. Issue 19: a restarted agent's burst of workspace syncs on one runtime key got 429s,
// and its handlers failed without reaching onEvent.
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { readFile, rm } from 'node:fs/promises';
import path from 'node:path';
import { afterEach, describe, expect, test } from 'vitest';
import { SyncHttpError, syncDown } from '../../src/sync/index.js';
import { rawTar, tempDir, zstd } from '../support/trees.js';

const archive = zstd(rawTar([{ path: 'notes.txt', body: Buffer.from('hello\n') }]));

/** A server whose first `busy` answers are `status` with Retry-After 0, then the archive; counts requests. */
async function serve(busy: number, status = 429): Promise<{ baseUrl: string; requests: () => number; close: () => Promise<void> }> {
  let requests = 0;
  const server = http.createServer((_req, res) => {
    requests++;
    if (requests <= busy) {
      res.writeHead(status, { 'content-type': 'application/json', 'retry-after': '0' });
      return res.end(JSON.stringify({ detail: 'Too many requests for this API key; retry in 0s', code: 'rate_limited' }));
    }
    res.writeHead(200, { 'content-type': 'application/zstd' });
    res.end(archive);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return { baseUrl: `http://127.0.0.1:${port}`, requests: () => requests, close: () => new Promise((resolve) => server.close(() => resolve())) };
}

describe('syncDown when the server says later', () => {
  const cleanups: (() => Promise<unknown>)[] = [];
  afterEach(async () => {
    for (const cleanup of cleanups.splice(0)) await cleanup();
  });

  test.each([429, 503])('two %i answers are waited out: the third request gets the archive', async (status) => {
    const server = await serve(2, status);
    const dir = await tempDir();
    cleanups.push(server.close, () => rm(dir, { recursive: true, force: true }));
    const result = await syncDown({ baseUrl: server.baseUrl }, 'fs_retry', path.join(dir, 'tree'), { stateFile: path.join(dir, 'state.json') });
    expect(result.added).toBe(1);
    expect(await readFile(path.join(dir, 'tree', 'notes.txt'), 'utf8')).toBe('hello\n');
    expect(server.requests()).toBe(3);
  });

  test('a server that keeps saying 429 is asked five times, then the 429 is the answer', async () => {
    const server = await serve(Number.POSITIVE_INFINITY);
    const dir = await tempDir();
    cleanups.push(server.close, () => rm(dir, { recursive: true, force: true }));
    const failure = await syncDown({ baseUrl: server.baseUrl }, 'fs_retry', path.join(dir, 'tree'), { stateFile: path.join(dir, 'state.json') }).catch(
      (error) => error,
    );
    expect(failure).toBeInstanceOf(SyncHttpError);
    expect((failure as SyncHttpError).status).toBe(429);
    expect(server.requests()).toBe(5);
  });
});
