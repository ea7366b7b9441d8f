// What refusing an archive bomb costs the server (issue 19), against accepting a small valid archive
// in the same run as the floor: the time of `PUT /filesystems/{id}/archive` until its answer, and the
// server process's peak RSS during it (VmHWM, reset through /proc/self/clear_refs before each upload)
// and how far that peak rose above the RSS just before. The bombs, all with the default limits (1 GiB,
// 100,000 members):
// - 98 KB of zstd: a one-file archive, then 3 GiB of zeros after its end (no header claims them);
// - 98 KB of zstd: a member whose header declares 3 GiB, and the 3 GiB of zeros;
// - a member whose header declares 2 GiB, with 64 MiB of zeros.
// Knobs: BENCH_RUNS (5). PostgreSQL when it answers (PGlite's memory would blur the server's own figure).
import { once } from 'node:events';
import { readFileSync, writeFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { Readable } from 'node:stream';
import zlib from 'node:zlib';
import { Header } from 'tar';
import { zstdWithZeros } from '../test/support/trees.js';
import { fmt, median, timed } from './support.js';

const { buildApp } = await import('../src/server/app.js');
const { ensureBootstrap } = await import('../src/server/bootstrap.js');
const { openStore } = await import('../src/server/store/db.js');
const { generateSecret } = await import('../src/server/auth/secrets.js');
const { openBlobStore } = await import('../src/server/blobs/index.js');
const { readArchive } = await import('../src/sync/archive.js');
const { benchEngines, throwawayDatabase } = await import('./support.js');

const MiB = 1024 * 1024;
const GiB = 1024 * MiB;
const RUNS = Number(process.env.BENCH_RUNS ?? 5);
const status = (key: 'VmRSS' | 'VmHWM') => Number(new RegExp(`${key}:\\s+(\\d+) kB`).exec(readFileSync('/proc/self/status', 'utf8'))![1]) / 1024;
/** Forgets this process's peak so far: Linux then counts VmHWM from the current RSS. */
const resetPeak = () => writeFileSync('/proc/self/clear_refs', '5');
const gc = () => (globalThis as { gc?: () => void }).gc?.();

/** One member's header block (and its content, padded), as a tar writer makes it. */
function member(name: string, size: number, content = Buffer.alloc(0)): Buffer {
  const block = Buffer.alloc(512);
  new Header({ path: name, type: 'File', size, mode: 0o644, mtime: new Date(0), uid: 0, gid: 0 }).encode(block, 0);
  return Buffer.concat([block, content, Buffer.alloc((512 - (content.length % 512)) % 512)]);
}

const small = zlib.zstdCompressSync(Buffer.concat([member('notes.txt', 1024, Buffer.alloc(1024, 0x61)), Buffer.alloc(1024)]));
const bombs: { label: string; body: Buffer }[] = [
  { label: '3 GiB of zeros after the archive', body: await zstdWithZeros(member('a', 1, Buffer.from('a')), 3 * GiB) },
  { label: 'a member declaring 3 GiB, and its zeros', body: await zstdWithZeros(member('zeros', 3 * GiB), 3 * GiB) },
  { label: 'a member declaring 2 GiB, 64 MiB of zeros', body: await zstdWithZeros(member('big', 2 * GiB), 64 * MiB) },
];

const work = await mkdtemp(path.join(os.tmpdir(), 'agentctl-bench-bomb-'));
const database = (await benchEngines()).includes('postgres') ? await throwawayDatabase() : undefined;
const store = await openStore({ databaseUrl: database?.url });
const secret = generateSecret();
await ensureBootstrap(store.db, secret);
const blobs = await openBlobStore({ dir: path.join(work, 'blobs') });
const app = await buildApp({ store, blobs, config: { rateLimitPerSecond: 0 } });
await app.listen({ host: '127.0.0.1', port: 0 });
const base = `http://127.0.0.1:${(app.server.address() as AddressInfo).port}`;
const auth = { authorization: `Bearer ${secret}` };

try {
  const created = await fetch(`${base}/filesystems`, {
    method: 'POST',
    headers: { ...auth, 'content-type': 'application/json' },
    body: JSON.stringify({ namespace: 'default' }),
  });
  const fsId = ((await created.json()) as { id: string }).id;
  /** One upload: its time, the peak RSS during it, how far the peak rose, and the status it got. */
  const upload = async (body: Buffer) => {
    gc();
    resetPeak();
    const before = status('VmRSS');
    let answer = 0;
    const ms = await timed(async () => {
      // Headers and body in one write (fetch sends them apart, and the delayed ACK between would be most of the time).
      const req = http.request(`${base}/filesystems/${fsId}/archive`, {
        method: 'PUT',
        headers: { ...auth, 'content-type': 'application/zstd', 'if-match': '*', 'content-length': body.length },
      });
      req.end(body);
      const [res] = (await once(req, 'response')) as [http.IncomingMessage];
      for await (const _chunk of res);
      answer = res.statusCode!;
    });
    const peak = status('VmHWM');
    return { ms, peak, rise: peak - before, answer };
  };
  const measure = async (body: Buffer) => {
    for (let i = 0; i < 3; i++) await upload(body); // warm-up: the first requests of a path pay for its compilation
    const runs = [];
    for (let i = 0; i < RUNS; i++) runs.push(await upload(body));
    return {
      ms: median(runs.map((r) => r.ms))!,
      peak: Math.max(...runs.map((r) => r.peak)),
      rise: Math.max(...runs.map((r) => r.rise)),
      answers: [...new Set(runs.map((r) => r.answer))].join(','),
    };
  };

  const floor = await measure(small);
  console.log(`server on ${database ? 'PostgreSQL' : 'PGlite'}, default limits; times are medians of ${RUNS}, memory the largest`);
  console.log(
    `floor: uploading a ${fmt(small.length)}-byte archive (one 1 KiB file): ${fmt(floor.ms, 1)} ms (${floor.answers}) | peak RSS ${fmt(floor.peak)} MiB (+${fmt(floor.rise, 1)} MiB)`,
  );
  // The reader alone, in this process, without HTTP, the database or the blob store.
  const read = async (body: Buffer) => {
    const runs: number[] = [];
    for (let i = 0; i < RUNS + 3; i++) runs.push(await timed(() => readArchive(Readable.from([body])).catch(() => undefined)));
    return median(runs.slice(3))!;
  };
  const readFloor = await read(small);
  console.log(`floor: readArchive alone (no HTTP, database or blob store) reading it: ${fmt(readFloor, 2)} ms`);
  for (const bomb of bombs) {
    const r = await measure(bomb.body);
    const alone = await read(bomb.body);
    console.log(`refusing ${fmt(bomb.body.length)} bytes of zstd, ${bomb.label}:`);
    console.log(
      `  upload ${fmt(r.ms, 1)} ms (${r.answers}), ${fmt(r.ms / floor.ms, 2)}x the floor | peak RSS ${fmt(r.peak)} MiB (+${fmt(r.rise, 1)} MiB), ${fmt(r.peak / floor.peak, 2)}x the floor's peak`,
    );
    console.log(`  readArchive alone ${fmt(alone, 2)} ms, ${fmt(alone / readFloor, 2)}x its floor`);
  }
} finally {
  await app.close();
  await blobs.close();
  await store.close();
  await database?.drop();
  await rm(work, { recursive: true, force: true });
}
