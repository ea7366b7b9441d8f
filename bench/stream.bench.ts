// One task's stream with 1, 100 and 300 watchers (a scaling row): the server's CPU time per event
// (process.cpuUsage of the server process while a second process posts events and holds the SSE
// connections), and the stream hub's database reads per event. The floor is the one-watcher run in
// the same process on the same database; the ratio says what the other watchers cost.
import { fork } from 'node:child_process';
import type { AddressInfo } from 'node:net';
import { fileURLToPath } from 'node:url';
import { buildApp } from '../src/server/app.js';
import { ensureBootstrap } from '../src/server/bootstrap.js';
import { openStore, type Engine } from '../src/server/store/db.js';
import { generateSecret } from '../src/server/auth/secrets.js';
import { benchEngines, fmt, throwawayDatabase, BENCH_DEPLOY } from './support.js';

const EVENTS = Number(process.env.BENCH_STREAM_EVENTS ?? 200);
const WATCHERS = (process.env.BENCH_STREAM_WATCHERS ?? '100,300').split(',').map(Number);

interface ClientArgs {
  url: string;
  key: string;
  taskId: string;
  watchers: number;
  events: number;
}

/** The load process: opens the watchers, then (when told) posts events and waits until every watcher has all of them. */
async function clientRole(): Promise<void> {
  const args = JSON.parse(process.argv[3]!) as ClientArgs;
  const headers = { authorization: `Bearer ${args.key}` };
  const lastSeen = new Array<number>(args.watchers).fill(0);
  let wanted = 1;
  let notify: (() => void) | undefined;
  const check = () => {
    if (lastSeen.every((s) => s >= wanted)) notify?.();
  };
  const until = (sequence: number) =>
    new Promise<void>((resolve) => {
      wanted = sequence;
      notify = resolve;
      check();
    });
  for (let w = 0; w < args.watchers; w++) {
    void (async () => {
      const response = await fetch(`${args.url}/tasks/${args.taskId}/stream`, { headers });
      const decoder = new TextDecoder();
      let buffer = '';
      for await (const chunk of response.body as unknown as AsyncIterable<Uint8Array>) {
        buffer += decoder.decode(chunk, { stream: true });
        let end: number;
        while ((end = buffer.indexOf('\n\n')) >= 0) {
          const id = /^id: (\d+)$/m.exec(buffer.slice(0, end));
          buffer = buffer.slice(end + 2);
          if (id) lastSeen[w] = Number(id[1]);
        }
        check();
      }
    })();
  }
  await until(1);
  process.send!('ready');
  await new Promise<void>((resolve) => process.once('message', () => resolve()));
  let last = 1;
  for (let i = 0; i < args.events; i++) {
    const res = await fetch(`${args.url}/tasks/${args.taskId}/events`, {
      method: 'POST',
      headers: { ...headers, 'content-type': 'application/json' },
      body: JSON.stringify({ content: `event ${i}` }),
    });
    last = ((await res.json()) as { sequence_id: number }).sequence_id;
  }
  await until(last);
  process.send!('done');
  await new Promise<void>((resolve) => process.once('message', () => resolve()));
  process.exit(0);
}

async function benchEngine(engine: Engine): Promise<void> {
  const database = engine === 'postgres' ? await throwawayDatabase() : undefined;
  const store = await openStore({ databaseUrl: database?.url });
  const key = generateSecret();
  await ensureBootstrap(store.db, key);
  const app = await buildApp({ store, config: { rateLimitPerSecond: 0 } });
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
  try {
    const deployed = await call('POST', '/agents/deploy', BENCH_DEPLOY);
    await call('POST', '/versions/register', { version_id: deployed.version_id });

    const measure = async (watchers: number) => {
      const task = await call('POST', '/tasks', { agent_name: 'default/bench-bot' });
      const child = fork(
        fileURLToPath(import.meta.url),
        ['client', JSON.stringify({ url, key, taskId: task.id, watchers, events: EVENTS } satisfies ClientArgs)],
        {
          execArgv: ['--import', 'tsx'],
          stdio: 'inherit',
        },
      );
      const next = () =>
        new Promise<void>((resolve, reject) => {
          child.once('message', () => resolve());
          child.once('exit', (code) => reject(new Error(`client exited with ${code}`)));
        });
      await next();
      const readsBefore = app.service.streamHub.reads;
      const cpuBefore = process.cpuUsage();
      const started = performance.now();
      child.send('go');
      await next();
      const cpu = process.cpuUsage(cpuBefore);
      const wall = performance.now() - started;
      const reads = app.service.streamHub.reads - readsBefore;
      child.send('exit');
      await new Promise((resolve) => child.once('exit', resolve));
      await call('POST', `/tasks/${task.id}/cancel`, undefined);
      return { cpuMsPerEvent: (cpu.user + cpu.system) / 1000 / EVENTS, readsPerEvent: reads / EVENTS, wallMsPerEvent: wall / EVENTS };
    };
    await measure(1); // warm-up: JIT, pools
    const one = await measure(1);
    console.log(
      `${engine}: server CPU per event, 1 watcher ${fmt(one.cpuMsPerEvent, 2)} ms (floor); hub reads per event ${fmt(one.readsPerEvent, 2)}; wall per event ${fmt(one.wallMsPerEvent, 1)} ms`,
    );
    for (const watchers of WATCHERS) {
      const many = await measure(watchers);
      console.log(
        `${engine}: ${watchers} watchers ${fmt(many.cpuMsPerEvent, 2)} ms: ratio ${fmt(many.cpuMsPerEvent / one.cpuMsPerEvent, 2)}x` +
          ` (${fmt(many.cpuMsPerEvent / one.cpuMsPerEvent / watchers, 3)}x of linear); hub reads per event ${fmt(many.readsPerEvent, 2)}; wall per event ${fmt(many.wallMsPerEvent, 1)} ms`,
      );
    }
  } finally {
    await app.close();
    await store.close();
    await database?.drop();
  }
}

if (process.argv[2] === 'client') {
  await clientRole();
} else {
  console.log(`stream: ${EVENTS} events on one task, 1 watcher vs ${WATCHERS.join(', ')} watchers`);
  for (const engine of await benchEngines()) await benchEngine(engine);
}
