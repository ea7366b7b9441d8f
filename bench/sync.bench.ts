// The sync library against the floors the issue names, in the same run:
// 1. syncUp of a clean 10,000-file tree (the stat-cache re-check) against a bare recursive lstat walk.
// 2. Full syncUp and syncDown of a 200 MiB tree against `tar | zstd -1` and `zstd -d | tar -x` of
//    the same tree (Debian's zstd; skipped with a note when it is missing), with peak memory.
// Client and server share this process, so its peak RSS covers both sides of the sync.
import { spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { lstat, mkdir, mkdtemp, readdir, rm, writeFile } from 'node:fs/promises';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { buildApp } from '../src/server/app.js';
import { ensureBootstrap } from '../src/server/bootstrap.js';
import { openStore } from '../src/server/store/db.js';
import { generateSecret } from '../src/server/auth/secrets.js';
import { openBlobStore } from '../src/server/blobs/index.js';
import { syncDown, syncUp, type SyncTransport } from '../src/sync/index.js';
import { fmt, median, timed } from './support.js';

const MiB = 1024 * 1024;
const SMALL_FILES = Number(process.env.BENCH_SYNC_FILES ?? 10_000);
const BIG_TREE_MIB = Number(process.env.BENCH_SYNC_MIB ?? 200);
const RUNS = Number(process.env.BENCH_RUNS ?? 3);

async function bareWalk(dir: string): Promise<number> {
  let n = 0;
  const visit = async (d: string): Promise<void> => {
    for (const name of await readdir(d)) {
      const st = await lstat(path.join(d, name));
      n++;
      if (st.isDirectory()) await visit(path.join(d, name));
    }
  };
  await visit(dir);
  return n;
}

/** Runs `fn` while sampling RSS every 10 ms; returns seconds and the peak RSS in MiB. */
async function withPeak(fn: () => Promise<unknown>): Promise<{ seconds: number; peakMiB: number; baseMiB: number }> {
  (globalThis as { gc?: () => void }).gc?.();
  const base = process.memoryUsage().rss;
  let peak = base;
  const timer = setInterval(() => (peak = Math.max(peak, process.memoryUsage().rss)), 10);
  const ms = await timed(fn);
  clearInterval(timer);
  peak = Math.max(peak, process.memoryUsage().rss);
  return { seconds: ms / 1000, peakMiB: peak / MiB, baseMiB: base / MiB };
}

/** A shell pipeline's wall time and peak RSS (GNU time's %M covers its largest process). */
function shell(command: string): { seconds: number; peakMiB: number } {
  const started = performance.now();
  const r = spawnSync('/usr/bin/time', ['-f', '%M', 'bash', '-o', 'pipefail', '-c', command], { encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`${command}: ${r.stderr}`);
  const kib = Number(r.stderr.trim().split('\n').pop());
  return { seconds: (performance.now() - started) / 1000, peakMiB: kib / 1024 };
}

const work = await mkdtemp(path.join(os.tmpdir(), 'agentctl-bench-sync-'));
process.env.XDG_CACHE_HOME = path.join(work, 'cache');
const store = await openStore({});
const secret = generateSecret();
await ensureBootstrap(store.db, secret);
const blobs = await openBlobStore({ dir: path.join(work, 'blobs') });
const app = await buildApp({ store, blobs, config: { rateLimitPerSecond: 0 } });
await app.listen({ host: '127.0.0.1', port: 0 });
const transport: SyncTransport = { baseUrl: `http://127.0.0.1:${(app.server.address() as AddressInfo).port}`, apiKey: secret };
const createFs = async () => {
  const res = await fetch(`${transport.baseUrl}/filesystems`, { method: 'POST', headers: { authorization: `Bearer ${secret}`, 'content-type': 'application/json' }, body: JSON.stringify({ namespace: 'default' }) });
  return ((await res.json()) as { id: string }).id;
};

try {
  // ---- 1. clean re-check of a 10,000-file tree -----------------------------------------------
  const small = path.join(work, 'small');
  for (let d = 0; d < SMALL_FILES / 100; d++) {
    await mkdir(path.join(small, `d${d}`), { recursive: true });
    await Promise.all(Array.from({ length: 100 }, (_, f) => writeFile(path.join(small, `d${d}`, `f${f}.txt`), `file ${d}/${f}\n`)));
  }
  const smallFs = await createFs();
  await syncUp(transport, smallFs, small);
  // The files were written just now: wait out the racy-timestamp window so the cache is trusted.
  await new Promise((r) => setTimeout(r, 1500));
  await syncUp(transport, smallFs, small);
  const walkMs: number[] = [];
  const cleanMs: number[] = [];
  for (let i = 0; i < RUNS; i++) {
    walkMs.push(await timed(() => bareWalk(small)));
    cleanMs.push(
      await timed(async () => {
        const r = await syncUp(transport, smallFs, small);
        if (r.bytes !== 0) throw new Error('a clean tree was uploaded');
      }),
    );
  }
  console.log(`clean syncUp of ${fmt(SMALL_FILES)} files: ${fmt(median(cleanMs))} ms; bare lstat walk: ${fmt(median(walkMs))} ms; ratio ${fmt(median(cleanMs) / median(walkMs), 2)}x (median of ${RUNS})`);

  // ---- 2. full sync of a 200 MiB tree --------------------------------------------------------
  const big = path.join(work, 'big');
  await mkdir(big, { recursive: true });
  for (let i = 0; i < BIG_TREE_MIB / 4; i++) {
    // Half incompressible, half repetitive: a tree of sources and binaries.
    await writeFile(path.join(big, `blob-${i}.bin`), i % 2 ? randomBytes(4 * MiB) : Buffer.alloc(4 * MiB, i));
  }
  const upRuns: { seconds: number; peakMiB: number; baseMiB: number }[] = [];
  const downRuns: { seconds: number; peakMiB: number; baseMiB: number }[] = [];
  for (let i = 0; i < RUNS; i++) {
    const fsId = await createFs();
    upRuns.push(await withPeak(() => syncUp(transport, fsId, big, { stateFile: path.join(work, `up-${i}.json`) })));
    const dest = path.join(work, `down-${i}`);
    downRuns.push(await withPeak(() => syncDown(transport, fsId, dest, { stateFile: path.join(work, `down-${i}.json`) })));
    await rm(dest, { recursive: true, force: true });
  }
  const up = { seconds: median(upRuns.map((r) => r.seconds)), peakMiB: Math.max(...upRuns.map((r) => r.peakMiB)) };
  const down = { seconds: median(downRuns.map((r) => r.seconds)), peakMiB: Math.max(...downRuns.map((r) => r.peakMiB)) };
  console.log(`process RSS before the first full sync: ${fmt(upRuns[0]!.baseMiB)} MiB (PGlite, the server and the client together)`);
  const hasZstd = spawnSync('zstd', ['--version']).status === 0;
  if (!hasZstd) {
    console.log(`full syncUp of ${BIG_TREE_MIB} MiB: ${fmt(up.seconds, 2)} s (peak RSS ${fmt(up.peakMiB)} MiB); syncDown: ${fmt(down.seconds, 2)} s (peak RSS ${fmt(down.peakMiB)} MiB)`);
    console.log('zstd is not installed (Debian package zstd): the tar | zstd comparison is skipped');
  } else {
    const archive = path.join(work, 'big.tar.zst');
    const packRuns: { seconds: number; peakMiB: number }[] = [];
    const unpackRuns: { seconds: number; peakMiB: number }[] = [];
    for (let i = 0; i < RUNS; i++) {
      packRuns.push(shell(`tar -cf - -C '${big}' . | zstd -1 -q -f -o '${archive}'`));
      const dest = path.join(work, `untar-${i}`);
      await mkdir(dest);
      unpackRuns.push(shell(`zstd -d -q -c '${archive}' | tar -xf - -C '${dest}'`));
      await rm(dest, { recursive: true, force: true });
    }
    const pack = { seconds: median(packRuns.map((r) => r.seconds)), peakMiB: Math.max(...packRuns.map((r) => r.peakMiB)) };
    const unpack = { seconds: median(unpackRuns.map((r) => r.seconds)), peakMiB: Math.max(...unpackRuns.map((r) => r.peakMiB)) };
    console.log(`full syncUp of ${BIG_TREE_MIB} MiB: ${fmt(up.seconds, 2)} s, peak RSS ${fmt(up.peakMiB)} MiB | tar | zstd -1: ${fmt(pack.seconds, 2)} s, peak RSS ${fmt(pack.peakMiB)} MiB | ratio ${fmt(up.seconds / pack.seconds, 2)}x`);
    console.log(`full syncDown of ${BIG_TREE_MIB} MiB: ${fmt(down.seconds, 2)} s, peak RSS ${fmt(down.peakMiB)} MiB | zstd -d | tar -x: ${fmt(unpack.seconds, 2)} s, peak RSS ${fmt(unpack.peakMiB)} MiB | ratio ${fmt(down.seconds / unpack.seconds, 2)}x`);
    console.log('(syncUp includes hashing, the HTTP upload, the server-side validation and blob store write; syncDown the download, validation, staging and apply; peak RSS is this process: client, server and PGlite)');
  }
} finally {
  await app.close();
  await blobs.close();
  await store.close();
  await rm(work, { recursive: true, force: true });
}
