// Streams with readers that never read: the server's memory while items pass. 200 watchers over 10
// tasks (20 each); 10,000 messages of 8 KiB (1,000 per task, ~8 MiB per stream: more than the kernel's
// socket buffers take for a reader that never reads). The floor is the same run with every watcher
// reading, in the same process on the same database; then 20 watchers (2 per task) never read. Each
// line gives the server's RSS and V8 heap (after a GC) before and after the items, as ratios, the peak
// RSS sampled meanwhile, and how many streams the hub ended for falling behind (a reading watcher that
// fell behind resumes with Last-Event-ID, as the client does).
import { fork } from 'node:child_process';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { fileURLToPath } from 'node:url';
import { buildApp } from '../src/server/app.js';
import { ensureBootstrap } from '../src/server/bootstrap.js';
import { openStore, type Engine } from '../src/server/store/db.js';
import { generateSecret } from '../src/server/auth/secrets.js';
import { benchEngines, fmt, throwawayDatabase, BENCH_DEPLOY } from './support.js';

const TASKS = Number(process.env.BENCH_SLOW_TASKS ?? 10);
const WATCHERS = Number(process.env.BENCH_SLOW_WATCHERS ?? 200);
const NEVER_READ = Number(process.env.BENCH_SLOW_NEVER_READ ?? 20);
const ITEMS = Number(process.env.BENCH_SLOW_ITEMS ?? 10_000);
const ITEM_BYTES = Number(process.env.BENCH_SLOW_ITEM_BYTES ?? 8192);

interface ClientArgs {
  url: string;
  key: string;
  taskIds: string[];
  watchersPerTask: number;
  neverReadPerTask: number;
  itemsPerTask: number;
}

/** The load process: opens the watchers, then (when told) posts the items and waits until every reading watcher has all of them. */
async function clientRole(): Promise<void> {
  const args = JSON.parse(process.argv[3]!) as ClientArgs;
  const headers = { authorization: `Bearer ${args.key}` };
  const readers: { task: number; lastSeen: number }[] = [];
  let resumes = 0;
  let done = false;
  let wanted = 1;
  let notify: (() => void) | undefined;
  const check = () => {
    if (readers.every((r) => r.lastSeen >= wanted)) notify?.();
  };
  const until = (sequence: number) =>
    new Promise<void>((resolve) => {
      wanted = sequence;
      notify = resolve;
      check();
    });
  const opened: Promise<unknown>[] = [];
  const stuck: http.ClientRequest[] = [];
  args.taskIds.forEach((taskId, task) => {
    for (let w = 0; w < args.watchersPerTask; w++) {
      if (w < args.neverReadPerTask) {
        // Never reads: node:http stops reading the socket once the unconsumed response buffer is full.
        opened.push(new Promise((resolve) => stuck.push(http.get(`${args.url}/tasks/${taskId}/stream`, { headers, agent: false }, resolve))));
        continue;
      }
      const reader = { task, lastSeen: 0 };
      readers.push(reader);
      void (async () => {
        // As a client does: a stream the server ended (this reader fell behind) resumes with Last-Event-ID.
        for (;;) {
          const response = await fetch(`${args.url}/tasks/${taskId}/stream`, { headers: { ...headers, 'last-event-id': String(reader.lastSeen) } });
          const decoder = new TextDecoder();
          let buffer = '';
          for await (const chunk of response.body as unknown as AsyncIterable<Uint8Array>) {
            buffer += decoder.decode(chunk, { stream: true });
            let end: number;
            while ((end = buffer.indexOf('\n\n')) >= 0) {
              const id = /^id: (\d+)$/m.exec(buffer.slice(0, end));
              buffer = buffer.slice(end + 2);
              if (id) reader.lastSeen = Number(id[1]);
            }
            check();
          }
          if (done) return;
          resumes++;
        }
      })();
    }
  });
  await Promise.all(opened);
  await until(1);
  process.send!('ready');
  await new Promise<void>((resolve) => process.once('message', () => resolve()));
  const text = 'x'.repeat(ITEM_BYTES);
  // One writer per task, all at once.
  await Promise.all(
    args.taskIds.map(async (taskId) => {
      for (let i = 0; i < args.itemsPerTask; i++) {
        const res = await fetch(`${args.url}/messages`, {
          method: 'POST',
          headers: { ...headers, 'content-type': 'application/json' },
          body: JSON.stringify({ task_id: taskId, content: `${i} ${text}` }),
        });
        if (!res.ok) throw new Error(`POST /messages: ${res.status} ${await res.text()}`);
        await res.arrayBuffer();
      }
    }),
  );
  await until(1 + args.itemsPerTask);
  done = true;
  process.send!({ resumes });
  await new Promise<void>((resolve) => process.once('message', () => resolve()));
  for (const request of stuck) request.destroy();
  process.exit(0);
}

const MiB = 1024 * 1024;

/** RSS and heap after a full GC (bench.mjs runs with --expose-gc). */
function settledMemory(): { rss: number; heap: number } {
  globalThis.gc?.();
  globalThis.gc?.();
  const usage = process.memoryUsage();
  return { rss: usage.rss, heap: usage.heapUsed };
}

async function benchEngine(engine: Engine): Promise<void> {
  const database = engine === 'postgres' ? await throwawayDatabase() : undefined;
  const store = await openStore({ databaseUrl: database?.url });
  const key = generateSecret();
  await ensureBootstrap(store.db, key);
  const app = await buildApp({ store, config: { rateLimitPerSecond: 0 }, logger: false });
  await app.listen({ host: '127.0.0.1', port: 0 });
  const url = `http://127.0.0.1:${(app.server.address() as AddressInfo).port}`;
  const call = async (method: string, path: string, body: unknown) => {
    const res = await fetch(url + path, {
      method,
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });
    if (!res.ok) throw new Error(`${method} ${path}: ${res.status} ${await res.text()}`);
    return res.json() as Promise<any>;
  };
  const hub = app.service.streamHub as { endedBehind?: number };
  try {
    const deployed = await call('POST', '/agents/deploy', BENCH_DEPLOY);
    await call('POST', '/versions/register', { version_id: deployed.version_id });

    const run = async (neverRead: number) => {
      const taskIds: string[] = [];
      for (let t = 0; t < TASKS; t++) taskIds.push((await call('POST', '/tasks', { agent_name: 'default/bench-bot' })).id);
      const args: ClientArgs = { url, key, taskIds, watchersPerTask: WATCHERS / TASKS, neverReadPerTask: neverRead / TASKS, itemsPerTask: ITEMS / TASKS };
      const child = fork(fileURLToPath(import.meta.url), ['client', JSON.stringify(args)], { execArgv: ['--import', 'tsx'], stdio: 'inherit' });
      let resumes = 0;
      const next = () =>
        new Promise<void>((resolve, reject) => {
          child.once('message', (message: { resumes?: number }) => {
            resumes = message.resumes ?? resumes;
            resolve();
          });
          child.once('exit', (code) => reject(new Error(`client exited with ${code}`)));
        });
      await next();
      const before = settledMemory();
      const endedBefore = hub.endedBehind ?? 0;
      let peak = before.rss;
      const sampler = setInterval(() => (peak = Math.max(peak, process.memoryUsage.rss())), 100);
      const started = performance.now();
      child.send('go');
      await next();
      const seconds = (performance.now() - started) / 1000;
      clearInterval(sampler);
      // Measured while the stuck readers are still connected: what they hold is counted.
      const after = settledMemory();
      const ended = hub.endedBehind === undefined ? 'n/a' : String(hub.endedBehind - endedBefore);
      child.send('exit');
      await new Promise((resolve) => child.once('exit', resolve));
      for (const id of taskIds) await call('POST', `/tasks/${id}/cancel`, undefined);
      return { before, after, peak, ended, resumes, seconds };
    };
    const line = (label: string, r: Awaited<ReturnType<typeof run>>) =>
      `${engine}: ${label}: RSS ${fmt(r.before.rss / MiB)} -> ${fmt(r.after.rss / MiB)} MiB (${fmt(r.after.rss / r.before.rss, 2)}x, peak ${fmt(r.peak / MiB)} MiB),` +
      ` heap ${fmt(r.before.heap / MiB)} -> ${fmt(r.after.heap / MiB)} MiB (${fmt(r.after.heap / r.before.heap, 2)}x); streams ended behind: ${r.ended} (reading watchers resumed ${r.resumes} times); ${fmt(r.seconds, 1)} s`;
    const floor = await run(0);
    console.log(line(`all ${WATCHERS} reading (floor)`, floor));
    const slow = await run(NEVER_READ);
    console.log(line(`${NEVER_READ} of ${WATCHERS} never reading`, slow));
    console.log(
      `${engine}: growth with ${NEVER_READ} never reading vs the floor: RSS ${fmt((slow.after.rss - slow.before.rss) / MiB, 1)} vs ${fmt((floor.after.rss - floor.before.rss) / MiB, 1)} MiB,` +
        ` heap ${fmt((slow.after.heap - slow.before.heap) / MiB, 1)} vs ${fmt((floor.after.heap - floor.before.heap) / MiB, 1)} MiB`,
    );
  } finally {
    await app.close();
    await store.close();
    await database?.drop();
  }
}

if (process.argv[2] === 'client') {
  await clientRole();
} else {
  console.log(`stream-slow-readers: ${WATCHERS} watchers over ${TASKS} tasks, ${NEVER_READ} never reading; ${fmt(ITEMS)} messages of ${fmt(ITEM_BYTES)} bytes`);
  for (const engine of await benchEngines()) await benchEngine(engine);
}
