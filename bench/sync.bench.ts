// The sync library against the floors the issue names, measured in the same run (medians of
// interleaved runs: each run times the floor and the operation back to back):
// 1. Full syncUp and syncDown of several trees (48 MiB and 200 MiB of 4 MiB files, one 100 MiB file)
//    against `tar | zstd -1` and `zstd -d | tar -x` of the same tree (Debian's zstd; skipped with a
//    note when it is missing), with the peak memory of each side.
// 2. The scaling table: trees of 1,000, 10,000 and 50,000 small files: full syncUp, full syncDown,
//    and the clean re-check (syncUp of an unchanged tree, answered from the stat cache) against a
//    bare recursive lstat walk; the re-check's time growth from 10k to 50k files says whether it is linear.
// Beside each full sync, the least this design can take on this machine: the CPU of the parts it
// cannot do without (for an upload: the floor's read and compression, node:http receiving the archive,
// the server's zstd -d and its sha256 of every file, which it checks and hashes the upload by; for a
// download: zstd -d | tar -x and undici receiving it), over the machine's cores, as if nothing
// else (the client's send, the blob write, the database) cost anything.
// A summary in the rows closes the output.
//
// The client runs in a child process (this file with --client) and the server in this one, so each
// side's memory is its own: a side's figure is its peak RSS (VmHWM, reset through
// /proc/self/clear_refs just before the operation) less its RSS at that moment. "Streams end to
// end" means these growths stay flat as the tree grows.
//
// Knobs: BENCH_RUNS (3), BENCH_SYNC_TREES (mixed-48,mixed-200,one-100; also mixed-400),
// BENCH_SYNC_SCALE (1000,10000,50000: file counts of the scaling table),
// BENCH_SYNC_SAMPLE=1 (the client's heap and Buffer peaks), BENCH_SYNC_PROF=DIR (CPU profiles of each run's
// operation alone, one per side: DIR/{client,server}-{up,down}-N.cpuprofile, start-up and tree making left out).
import { spawn, spawnSync } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import http from 'node:http';
import { createWriteStream, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { lstat, mkdir, mkdtemp, readdir, rm, writeFile } from 'node:fs/promises';
import { once } from 'node:events';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { Session } from 'node:inspector/promises';
import { routes } from '../src/contract/routes.js';
import { syncDown, syncUp, type SyncTransport } from '../src/sync/index.js';
import { fmt, median, timed } from './support.js';

const MiB = 1024 * 1024;
const status = (key: 'VmRSS' | 'VmHWM') => Number(new RegExp(`${key}:\\s+(\\d+) kB`).exec(readFileSync('/proc/self/status', 'utf8'))![1]) / 1024;
/** Forgets this process's peak so far: Linux then counts VmHWM from the current RSS. */
const resetPeak = () => writeFileSync('/proc/self/clear_refs', '5');
const gc = () => (globalThis as { gc?: () => void }).gc?.();
const PROF_DIR = process.env.BENCH_SYNC_PROF;

/**
 * CPU seconds (user + system) of this process's threads, by role: the main thread (JavaScript, zstd,
 * hashing, system calls), V8's workers (the garbage collector's concurrent marking and sweeping) and
 * libuv's thread pool (file reads and writes); other threads are counted in `other`.
 */
interface ThreadCpu {
  main: number;
  gc: number;
  pool: number;
  other: number;
}
function threadCpu(): ThreadCpu {
  const cpu: ThreadCpu = { main: 0, gc: 0, pool: 0, other: 0 };
  for (const tid of readdirSync('/proc/self/task')) {
    let stat: string;
    try {
      stat = readFileSync(`/proc/self/task/${tid}/stat`, 'utf8');
    } catch {
      continue; // the thread ended
    }
    const name = stat.slice(stat.indexOf('(') + 1, stat.lastIndexOf(')'));
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    const seconds = (Number(fields[11]) + Number(fields[12])) / CLOCK_TICKS;
    const role: keyof ThreadCpu = tid === String(process.pid) ? 'main' : name.startsWith('V8') ? 'gc' : name.startsWith('libuv') ? 'pool' : 'other';
    cpu[role] += seconds;
  }
  return cpu;
}
/** Linux's USER_HZ: /proc's CPU times are in these ticks. */
const CLOCK_TICKS = 100;
const threadCpuSince = (before: ThreadCpu): ThreadCpu => {
  const now = threadCpu();
  return { main: now.main - before.main, gc: now.gc - before.gc, pool: now.pool - before.pool, other: now.other - before.other };
};

/** BENCH_SYNC_PROF: a CPU profile of this thread from now until the returned function writes it to `name`. */
async function profile(name: string): Promise<() => Promise<void>> {
  if (!PROF_DIR) return async () => undefined;
  const session = new Session();
  session.connect();
  await session.post('Profiler.enable');
  await session.post('Profiler.setSamplingInterval', { interval: 200 });
  await session.post('Profiler.start');
  return async () => {
    const { profile: taken } = await session.post('Profiler.stop');
    writeFileSync(path.join(PROF_DIR, `${name}.cpuprofile`), JSON.stringify(taken));
    session.disconnect();
  };
}

/** GETs the filesystem's archive over undici (the client's HTTP stack) and drops it: the bytes received. */
async function drainArchive(transport: SyncTransport, fsId: string): Promise<number> {
  const { request } = await import('undici');
  const archivePath = routes.downloadFilesystemArchive.path.replace(':filesystem_id', encodeURIComponent(fsId));
  const response = await request(new URL(archivePath, transport.baseUrl), { headers: { authorization: `Bearer ${transport.apiKey}` } });
  let bytes = 0;
  for await (const chunk of response.body) bytes += (chunk as Buffer).length;
  return bytes;
}

interface ClientJob {
  /** `drain`: only GET the archive with undici and drop its bytes (the download's floor in a client process). */
  op: 'up' | 'down' | 'drain';
  transport: SyncTransport;
  fsId: string;
  dir: string;
  stateFile: string;
  cacheHome: string;
}
interface ClientReport {
  seconds: number;
  /** CPU seconds (user + system, every thread) of the operation. */
  cpuS: number;
  /** The same by thread role. */
  threads: ThreadCpu;
  growthMiB: number;
  bytes: number;
}

if (process.argv[2] === '--client') {
  // ---- the client side, in its own process ---------------------------------------------------
  const job = JSON.parse(process.argv[3]!) as ClientJob;
  process.env.XDG_CACHE_HOME = job.cacheHome;
  gc();
  resetPeak();
  const base = status('VmRSS');
  // BENCH_SYNC_SAMPLE=1: also print where the memory went (V8 heap, Buffers), sampled every 2 ms.
  const peaks = { rss: 0, heapUsed: 0, heapTotal: 0, external: 0, arrayBuffers: 0 };
  const sample = () => {
    const now = process.memoryUsage();
    for (const k of Object.keys(peaks) as (keyof typeof peaks)[]) peaks[k] = Math.max(peaks[k], now[k] / MiB);
  };
  const sampler = process.env.BENCH_SYNC_SAMPLE ? setInterval(sample, 2) : undefined;
  let result: { bytes: number } | undefined;
  const stopProfile = await profile(`client-${job.op}-${process.pid}`);
  // Tells the server side the operation starts: its CPU is counted from here, not over this process's start-up.
  process.stdout.write('start\n');
  const cpuBefore = process.cpuUsage();
  const threadsBefore = threadCpu();
  const ms = await timed(async () => {
    if (job.op === 'drain') result = { bytes: await drainArchive(job.transport, job.fsId) };
    else result = await (job.op === 'up' ? syncUp : syncDown)(job.transport, job.fsId, job.dir, { stateFile: job.stateFile });
  });
  const cpu = process.cpuUsage(cpuBefore);
  const threads = threadCpuSince(threadsBefore);
  await stopProfile();
  if (sampler) {
    clearInterval(sampler);
    const rounded = Object.fromEntries(Object.entries(peaks).map(([k, v]) => [k, Math.round(v)]));
    process.stderr.write(`  (${job.op} client: RSS ${base.toFixed(0)} MiB before; peaks in MiB ${JSON.stringify(rounded)})\n`);
  }
  const report: ClientReport = { seconds: ms / 1000, cpuS: (cpu.user + cpu.system) / 1e6, threads, growthMiB: status('VmHWM') - base, bytes: result!.bytes };
  process.stdout.write(JSON.stringify(report));
  process.exit(0);
}

const { buildApp } = await import('../src/server/app.js');
const { ensureBootstrap } = await import('../src/server/bootstrap.js');
const { openStore } = await import('../src/server/store/db.js');
const { generateSecret } = await import('../src/server/auth/secrets.js');
const { openBlobStore } = await import('../src/server/blobs/index.js');
const { benchEngines, throwawayDatabase } = await import('./support.js');

const RUNS = Number(process.env.BENCH_RUNS ?? 3);
const self = fileURLToPath(import.meta.url);

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

/** A shell pipeline's wall time, CPU time (user + system of all its processes) and peak RSS (GNU time's %M is its largest process). */
function shell(command: string): { seconds: number; cpuS: number; peakMiB: number } {
  const started = performance.now();
  const r = spawnSync('/usr/bin/time', ['-f', '%M %U %S', 'bash', '-o', 'pipefail', '-c', command], { encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`${command}: ${r.stderr}`);
  const [kib, user, sys] = r.stderr.trim().split('\n').pop()!.split(' ').map(Number) as [number, number, number];
  return { seconds: (performance.now() - started) / 1000, cpuS: user + sys, peakMiB: kib / 1024 };
}

const work = await mkdtemp(path.join(os.tmpdir(), 'agentctl-bench-sync-'));
process.env.XDG_CACHE_HOME = path.join(work, 'cache');
// PostgreSQL when it answers: PGlite's memory would blur the server's own figure.
const database = (await benchEngines()).includes('postgres') ? await throwawayDatabase() : undefined;
const store = await openStore({ databaseUrl: database?.url });
const secret = generateSecret();
await ensureBootstrap(store.db, secret);
const blobs = await openBlobStore({ dir: path.join(work, 'blobs') });
const app = await buildApp({ store, blobs, config: { rateLimitPerSecond: 0 } });
await app.listen({ host: '127.0.0.1', port: 0 });
const transport: SyncTransport = { baseUrl: `http://127.0.0.1:${(app.server.address() as AddressInfo).port}`, apiKey: secret };
const createFs = async () => {
  const res = await fetch(`${transport.baseUrl}/filesystems`, {
    method: 'POST',
    headers: { authorization: `Bearer ${secret}`, 'content-type': 'application/json' },
    body: JSON.stringify({ namespace: 'default' }),
  });
  return ((await res.json()) as { id: string }).id;
};

/** Runs one sync in a child process; returns its report and the server's peak growth meanwhile. */
async function clientRun(
  job: Omit<ClientJob, 'transport' | 'cacheHome'>,
): Promise<ClientReport & { serverGrowthMiB: number; serverCpuS: number; serverThreads: ThreadCpu }> {
  gc();
  resetPeak();
  const serverBase = status('VmRSS');
  // The server's CPU while the client's operation runs (from its `start` line to its exit).
  let serverCpu = process.cpuUsage();
  const child = spawn(
    process.execPath,
    ['--expose-gc', '--import', 'tsx', self, '--client', JSON.stringify({ ...job, transport, cacheHome: path.join(work, 'cache') })],
    {
      stdio: ['ignore', 'pipe', 'inherit'],
    },
  );
  let out = '';
  let threadsBefore = threadCpu();
  let stopProfile: Promise<() => Promise<void>> | undefined;
  child.stdout.on('data', (d) => {
    if (!out.includes('start\n') && (out + d).includes('start\n')) {
      serverCpu = process.cpuUsage();
      threadsBefore = threadCpu();
      stopProfile = profile(`server-${job.op}-${child.pid}`);
    }
    out += d;
  });
  const [code] = (await once(child, 'exit')) as [number];
  const serverGrowthMiB = status('VmHWM') - serverBase;
  const cpu = process.cpuUsage(serverCpu);
  const serverThreads = threadCpuSince(threadsBefore);
  await (await stopProfile)?.();
  if (code !== 0) throw new Error(`the client exited ${code}`);
  return { ...(JSON.parse(out.slice(out.indexOf('start\n') + 6)) as ClientReport), serverGrowthMiB, serverCpuS: (cpu.user + cpu.system) / 1e6, serverThreads };
}

/** Files of 4 MiB (or `fileMiB`), half incompressible, half repetitive: a tree of sources and binaries. */
async function bigFiles(dir: string, totalMiB: number, fileMiB: number): Promise<void> {
  await mkdir(dir, { recursive: true });
  for (let i = 0; i < totalMiB / fileMiB; i++) {
    const out = createWriteStream(path.join(dir, `blob-${i}.bin`));
    for (let m = 0; m < fileMiB; m++) {
      if (!out.write(m % 2 ? randomBytes(MiB) : Buffer.alloc(MiB, i + m))) await once(out, 'drain');
    }
    out.end();
    await once(out, 'finish');
  }
}

/** `count` files of `size` bytes, 100 to a directory, half incompressible: a source tree. */
async function smallFiles(dir: string, count: number, size: number): Promise<void> {
  for (let d = 0; d < count / 100; d++) {
    await mkdir(path.join(dir, `d${d}`), { recursive: true });
    await Promise.all(
      Array.from({ length: 100 }, (_, f) => writeFile(path.join(dir, `d${d}`, `f${f}.txt`), f % 2 ? randomBytes(size) : Buffer.alloc(size, f))),
    );
  }
}

const max = (xs: number[]) => Math.max(...xs);

/**
 * CPU seconds of this thread sha256-hashing every file under `dir` from memory (the server hashes
 * every member of an upload as zstd gives it; each file's read is not counted: the floor's tar did it).
 */
function hashTree(dir: string): number {
  let seconds = 0;
  const visit = (d: string) => {
    for (const entry of readdirSync(d, { withFileTypes: true })) {
      const full = path.join(d, entry.name);
      if (entry.isDirectory()) visit(full);
      else if (entry.isFile()) {
        const content = readFileSync(full);
        const before = process.cpuUsage();
        createHash('sha256').update(content).digest();
        const used = process.cpuUsage(before);
        seconds += (used.user + used.system) / 1e6;
      }
    }
  };
  visit(dir);
  return seconds;
}
const hasZstd = spawnSync('zstd', ['--version']).status === 0;
const hasCurl = spawnSync('curl', ['--version']).status === 0;

/**
 * A bare node:http server in this process (the agentctl server's), whose handler only drains the
 * request body: what receiving an upload costs before any code of ours runs (Node's HTTP parser
 * copies every body chunk into a fresh buffer).
 */
const bareServer = http.createServer((req, res) => {
  req.on('end', () => res.end());
  req.resume();
});
await new Promise<void>((resolve) => bareServer.listen(0, '127.0.0.1', resolve));
/** The server's CPU (this process) while curl PUTs `file` to the bare server. */
async function bareReceive(file: string): Promise<ThreadCpu> {
  const before = threadCpu();
  const curl = spawn(
    'curl',
    ['-sS', '-o', '/dev/null', '-X', 'PUT', '--data-binary', `@${file}`, `http://127.0.0.1:${(bareServer.address() as AddressInfo).port}/`],
    {
      stdio: 'ignore',
    },
  );
  const [code] = (await once(curl, 'exit')) as [number];
  if (code !== 0) throw new Error(`curl exited ${code}`);
  return threadCpuSince(before);
}

interface FullSyncFigures {
  upS: number;
  downS: number;
  /** Undefined without zstd. */
  packS?: number;
  unpackS?: number;
}

/**
 * Full syncUp and syncDown of `dir`, each run followed by its floor (the shell pipelines), medians
 * of RUNS. Leaves the last run's filesystem and state file for a re-check.
 */
async function fullSyncs(name: string, dir: string, t: string, print: boolean): Promise<FullSyncFigures & { fsId: string; stateFile: string }> {
  const up: Awaited<ReturnType<typeof clientRun>>[] = [];
  const down: Awaited<ReturnType<typeof clientRun>>[] = [];
  const packRuns: { seconds: number; cpuS: number; peakMiB: number }[] = [];
  const unpackRuns: { seconds: number; cpuS: number; peakMiB: number }[] = [];
  const receiveRuns: ThreadCpu[] = [];
  const unzstdRuns: number[] = [];
  const hashRuns: number[] = [];
  const drains: Awaited<ReturnType<typeof clientRun>>[] = [];
  const archive = path.join(work, 'tree.tar.zst');
  let fsId = '';
  let stateFile = '';
  for (let i = 0; i < RUNS; i++) {
    fsId = await createFs();
    stateFile = path.join(work, `up-${t}-${i}.json`);
    if (hasZstd) packRuns.push(shell(`tar -cf - -C '${dir}' . | zstd -1 -q -f -o '${archive}'`));
    if (print && hasZstd && hasCurl) receiveRuns.push(await bareReceive(archive));
    if (print && hasZstd) {
      unzstdRuns.push(shell(`zstd -d -q -c '${archive}' > /dev/null`).cpuS);
      hashRuns.push(hashTree(dir));
    }
    up.push(await clientRun({ op: 'up', fsId, dir, stateFile }));
    const dest = path.join(work, `down-${i}`);
    down.push(await clientRun({ op: 'down', fsId, dir: dest, stateFile: path.join(work, `down-${t}-${i}.json`) }));
    if (print) drains.push(await clientRun({ op: 'drain', fsId, dir: dest, stateFile: '' }));
    await rm(dest, { recursive: true, force: true });
    if (hasZstd) {
      const untar = path.join(work, `untar-${i}`);
      await mkdir(untar);
      unpackRuns.push(shell(`zstd -d -q -c '${archive}' | tar -xf - -C '${untar}'`));
      await rm(untar, { recursive: true, force: true });
    }
  }
  const upS = median(up.map((r) => r.seconds));
  const downS = median(down.map((r) => r.seconds));
  const packS = hasZstd ? median(packRuns.map((r) => r.seconds)) : undefined;
  const unpackS = hasZstd ? median(unpackRuns.map((r) => r.seconds)) : undefined;
  if (print) {
    console.log(`\n${name}:`);
    console.log(
      `  syncUp   ${fmt(upS, 2)} s | client +${fmt(max(up.map((r) => r.growthMiB)))} MiB | server (receive, validate, store) +${fmt(max(up.map((r) => r.serverGrowthMiB)))} MiB | archive ${fmt(up[0]!.bytes / MiB, 1)} MiB`,
    );
    console.log(
      `  syncDown ${fmt(downS, 2)} s | client +${fmt(max(down.map((r) => r.growthMiB)))} MiB | server (serve) +${fmt(max(down.map((r) => r.serverGrowthMiB)))} MiB`,
    );
    // CPU seconds are steadier than wall time on a loaded machine: what each side spent, against the pipeline's.
    const cpu = (runs: Awaited<ReturnType<typeof clientRun>>[]) => ({
      client: median(runs.map((r) => r.cpuS)),
      server: median(runs.map((r) => r.serverCpuS)),
    });
    const upCpu = cpu(up);
    const downCpu = cpu(down);
    console.log(`  syncUp   CPU ${fmt(upCpu.client, 2)} s client + ${fmt(upCpu.server, 2)} s server`);
    console.log(`  syncDown CPU ${fmt(downCpu.client, 2)} s client + ${fmt(downCpu.server, 2)} s server`);
    // Where each side's CPU went by thread (medians per role): GC workers are the collector's, the pool libuv's file I/O.
    const roles = (threads: ThreadCpu[]) =>
      (['main', 'gc', 'pool'] as const).map((k) => `${k === 'gc' ? 'GC workers' : k} ${fmt(median(threads.map((t) => t[k])), 2)}`).join(', ');
    console.log(`  syncUp   threads: client ${roles(up.map((r) => r.threads))} | server ${roles(up.map((r) => r.serverThreads))}`);
    console.log(`  syncDown threads: client ${roles(down.map((r) => r.threads))} | server ${roles(down.map((r) => r.serverThreads))}`);
    if (receiveRuns.length) {
      // The part of the server's upload no code of ours runs: node:http receiving the same bytes, in this process.
      const bare = median(receiveRuns.map((t) => t.main + t.gc + t.pool + t.other));
      console.log(
        `  server receive floor: a bare node:http handler draining the same archive (curl sends it) ${fmt(bare, 2)} s CPU (${roles(receiveRuns)}) -> syncUp's server side ${fmt(upCpu.server / bare, 2)}x of it`,
      );
    }
    // The same for a download: undici in a client process fetching the archive and dropping it.
    const drainCpu = median(drains.map((r) => r.cpuS));
    console.log(
      `  client receive floor: undici GETting the archive and dropping it ${fmt(drainCpu, 2)} s CPU (${roles(drains.map((r) => r.threads))}) -> syncDown's client side ${fmt(downCpu.client / drainCpu, 2)}x of it`,
    );
    if (packS !== undefined && unpackS !== undefined) {
      const packCpu = median(packRuns.map((r) => r.cpuS));
      const unpackCpu = median(unpackRuns.map((r) => r.cpuS));
      if (receiveRuns.length) {
        const receiveCpu = median(receiveRuns.map((t) => t.main + t.gc + t.pool + t.other));
        const unzstdCpu = median(unzstdRuns);
        const hashCpu = median(hashRuns);
        const cores = os.availableParallelism();
        const upBound = (packCpu + receiveCpu + unzstdCpu + hashCpu) / cores;
        const downBound = (unpackCpu + drainCpu) / cores;
        console.log(
          `  the least syncUp can take here: (tar | zstd -1 ${fmt(packCpu, 2)} + node:http receiving ${fmt(receiveCpu, 2)} + zstd -d ${fmt(unzstdCpu, 2)} + sha256 of the files ${fmt(hashCpu, 2)}) s CPU / ${cores} cores = ${fmt(upBound, 2)} s, ${fmt(upBound / packS, 2)}x the floor; syncUp is ${fmt(upS / upBound, 2)}x it`,
        );
        console.log(
          `  the least syncDown can take here: (zstd -d | tar -x ${fmt(unpackCpu, 2)} + undici receiving ${fmt(drainCpu, 2)}) s CPU / ${cores} cores = ${fmt(downBound, 2)} s, ${fmt(downBound / unpackS, 2)}x the floor; syncDown is ${fmt(downS / downBound, 2)}x it`,
        );
      }
      console.log(
        `  CPU: tar | zstd -1 ${fmt(packCpu, 2)} s -> syncUp ${fmt((upCpu.client + upCpu.server) / packCpu, 2)}x; zstd -d | tar -x ${fmt(unpackCpu, 2)} s -> syncDown ${fmt((downCpu.client + downCpu.server) / unpackCpu, 2)}x`,
      );
      console.log(`  tar | zstd -1      ${fmt(packS, 2)} s (peak ${fmt(max(packRuns.map((r) => r.peakMiB)))} MiB) -> syncUp ratio ${fmt(upS / packS, 2)}x`);
      console.log(
        `  zstd -d | tar -x   ${fmt(unpackS, 2)} s (peak ${fmt(max(unpackRuns.map((r) => r.peakMiB)))} MiB) -> syncDown ratio ${fmt(downS / unpackS, 2)}x`,
      );
    }
  }
  return { upS, downS, packS, unpackS, fsId, stateFile };
}

/** The clean re-check of `dir` (already synced as `fsId` with `stateFile`) against a bare lstat walk, medians of RUNS interleaved. */
async function cleanRecheck(dir: string, fsId: string, stateFile: string): Promise<{ cleanMs: number; walkMs: number }> {
  // The files were written just now: wait out the racy-timestamp window so the cache is trusted,
  // then one re-check hashes what the cache could not vouch for and records the stamps.
  await new Promise((r) => setTimeout(r, 1500));
  await syncUp(transport, fsId, dir, { stateFile });
  const walkMs: number[] = [];
  const cleanMs: number[] = [];
  for (let i = 0; i < RUNS; i++) {
    walkMs.push(await timed(() => bareWalk(dir)));
    cleanMs.push(
      await timed(async () => {
        const r = await syncUp(transport, fsId, dir, { stateFile });
        if (r.bytes !== 0) throw new Error('a clean tree was uploaded');
      }),
    );
  }
  return { cleanMs: median(cleanMs), walkMs: median(walkMs) };
}

const ratio = (a: number | undefined, b: number | undefined) => (a === undefined || b === undefined ? 'n/a' : `${fmt(a / b, 2)}x`);
const summary: { measure: string; floor: string; now: string; goal: string }[] = [];

try {
  // ---- 1. full syncs, speed and memory per side ------------------------------------------------
  const trees: { key: string; name: string; make: (dir: string) => Promise<void> }[] = (process.env.BENCH_SYNC_TREES ?? 'mixed-48,mixed-200,one-100')
    .split(',')
    .filter(Boolean)
    .map((key) => {
      if (key === 'mixed-48') return { key, name: '48 MiB of 4 MiB files', make: (d: string) => bigFiles(d, 48, 4) };
      if (key === 'mixed-200') return { key, name: '200 MiB of 4 MiB files', make: (d: string) => bigFiles(d, 200, 4) };
      if (key === 'mixed-400') return { key, name: '400 MiB of 4 MiB files', make: (d: string) => bigFiles(d, 400, 4) };
      if (key === 'one-100') return { key, name: 'one 100 MiB file', make: (d: string) => bigFiles(d, 100, 100) };
      throw new Error(`unknown tree ${key}`);
    });
  console.log(
    `client in a child process, server (${database ? 'PostgreSQL' : 'PGlite'}) in this one; memory is each side's peak RSS growth during the operation; times are medians of ${RUNS} interleaved runs, peaks the largest`,
  );
  const full = new Map<string, FullSyncFigures>();
  for (const tree of trees) {
    const dir = path.join(work, 'tree');
    await tree.make(dir);
    full.set(tree.key, await fullSyncs(tree.name, dir, tree.key, true));
    await rm(dir, { recursive: true, force: true });
  }

  // ---- 2. the scaling table: 1k, 10k, 50k files ------------------------------------------------
  const counts = (process.env.BENCH_SYNC_SCALE ?? '1000,10000,50000').split(',').filter(Boolean).map(Number);
  const scale: { files: number; fullUp: FullSyncFigures; recheck: { cleanMs: number; walkMs: number } }[] = [];
  for (const files of counts) {
    const dir = path.join(work, `files-${files}`);
    await smallFiles(dir, files, 4096);
    const figures = await fullSyncs(`${fmt(files)} files`, dir, `files-${files}`, false);
    const recheck = await cleanRecheck(dir, figures.fsId, figures.stateFile);
    scale.push({ files, fullUp: figures, recheck });
    await rm(dir, { recursive: true, force: true });
  }
  if (scale.length) {
    console.log('\nscaling: files of 4 KiB, 100 to a directory (seconds, and the ratio to the floor of the same run)');
    console.log('| files | full syncUp / tar \\| zstd -1 | full syncDown / zstd -d \\| tar -x | clean re-check / bare lstat walk |');
    console.log('|---|---|---|---|');
    for (const s of scale) {
      const f = s.fullUp;
      console.log(
        `| ${fmt(s.files)} | ${fmt(f.upS, 2)} s / ${f.packS === undefined ? 'n/a' : fmt(f.packS, 2)} s = ${ratio(f.upS, f.packS)} | ${fmt(f.downS, 2)} s / ${f.unpackS === undefined ? 'n/a' : fmt(f.unpackS, 2)} s = ${ratio(f.downS, f.unpackS)} | ${fmt(s.recheck.cleanMs)} ms / ${fmt(s.recheck.walkMs)} ms = ${ratio(s.recheck.cleanMs, s.recheck.walkMs)} |`,
      );
    }
  }

  // ---- the rows ------------------------------------------------------------------------
  const both = (a?: FullSyncFigures, b?: FullSyncFigures, pick?: (f: FullSyncFigures) => [number, number | undefined]) =>
    [a, b].map((f) => (f && pick ? ratio(...pick(f)) : 'n/a')).join(' / ');
  const m48 = full.get('mixed-48');
  const m200 = full.get('mixed-200');
  summary.push({
    measure: 'full `syncUp`, 48 MiB / 200 MiB tree',
    floor: '`tar | zstd -1` of the same tree',
    now: both(m48, m200, (f) => [f.upS, f.packS]),
    goal: '≤ 1.2x',
  });
  summary.push({
    measure: 'full `syncDown`, 48 MiB / 200 MiB tree',
    floor: '`zstd -d | tar -x`',
    now: both(m48, m200, (f) => [f.downS, f.unpackS]),
    goal: '≤ 1.2x',
  });
  for (const s of scale) {
    summary.push({
      measure: `full \`syncUp\` / \`syncDown\`, ${fmt(s.files)} files`,
      floor: 'the same pipelines',
      now: `${ratio(s.fullUp.upS, s.fullUp.packS)} / ${ratio(s.fullUp.downS, s.fullUp.unpackS)}`,
      goal: '≤ 1.2x',
    });
  }
  const r10 = scale.find((s) => s.files === 10_000);
  const r50 = scale.find((s) => s.files === 50_000);
  if (r10 && r50) {
    summary.push({
      measure: 'clean re-check 10k -> 50k files',
      floor: 'bare lstat walk',
      now: `${ratio(r10.recheck.cleanMs, r10.recheck.walkMs)} -> ${ratio(r50.recheck.cleanMs, r50.recheck.walkMs)} (${fmt(r50.recheck.cleanMs / r10.recheck.cleanMs, 1)}x time for 5x files; the walk ${fmt(r50.recheck.walkMs / r10.recheck.walkMs, 1)}x)`,
      goal: '≤ 1.2x, linear',
    });
  }
  console.log('\n| measure | floor, same run | now | goal |\n|---|---|---|---|');
  for (const r of summary) console.log(`| ${r.measure.replaceAll('|', '\\|')} | ${r.floor.replaceAll('|', '\\|')} | ${r.now} | ${r.goal} |`);
  if (!hasZstd) console.log('\nzstd is not installed (Debian package zstd): the tar | zstd comparison is skipped');
  console.log(
    '\n(syncUp: hashing, packing, the HTTP upload, the server-side validation and blob store write; syncDown: the download, validation, staging and apply)',
  );
} finally {
  bareServer.close();
  await app.close();
  await blobs.close();
  await store.close();
  await database?.drop();
  await rm(work, { recursive: true, force: true });
}
