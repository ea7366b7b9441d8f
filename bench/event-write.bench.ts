// The event write alone, on each engine: the one-statement path that `POST /tasks/{id}/events` takes
// in the common case (domain/conversation.ts createEvent) against the transactional path it falls
// back to (insertEvent in a transaction: ~10 statements), interleaved in one process on one task,
// wall time p50/p99 and this process's CPU per write. The floor is the transactional path measured
// in the same run; the ratio says what the single statement saves.
import { createEvent, insertEvent } from '../src/server/domain/conversation.js';
import { buildApp } from '../src/server/app.js';
import { ensureBootstrap } from '../src/server/bootstrap.js';
import { generateSecret } from '../src/server/auth/secrets.js';
import { unrestricted } from '../src/server/auth/policy.js';
import { openStore, type Engine } from '../src/server/store/db.js';
import type { AddressInfo } from 'node:net';
import { BENCH_DEPLOY, benchEngines, fmt, throwawayDatabase } from './support.js';

const SAMPLES = Number(process.env.BENCH_EVENT_WRITE_SAMPLES ?? 400);
const percentile = (xs: number[], p: number) => [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor((xs.length * p) / 100))];

async function benchEngine(engine: Engine): Promise<void> {
  const database = engine === 'postgres' ? await throwawayDatabase() : undefined;
  const store = await openStore({ databaseUrl: database?.url });
  const key = generateSecret();
  const { orgId } = await ensureBootstrap(store.db, key);
  const app = await buildApp({ store, config: { rateLimitPerSecond: 0 } });
  await app.listen({ host: '127.0.0.1', port: 0 });
  const url = `http://127.0.0.1:${(app.server.address() as AddressInfo).port}`;
  const call = async (path: string, body: unknown) => {
    const res = await fetch(url + path, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });
    if (!res.ok) throw new Error(`${path}: ${res.status} ${await res.text()}`);
    return res.json() as Promise<{ id: string; version_id: string }>;
  };
  try {
    const deployed = await call('/agents/deploy', BENCH_DEPLOY);
    await call('/versions/register', { version_id: deployed.version_id });
    const task = await call('/tasks', { agent_name: 'default/bench-bot' });
    const perms = unrestricted({ keyId: '', orgId, name: 'bench' });
    const content = { type: 'text' as const, text: 'x' };
    const paths = {
      transaction: () => store.db.transaction().execute((trx) => insertEvent(trx, perms, task.id, content)),
      statement: () => createEvent(store.db, perms, task.id, content),
    };
    const wall = { transaction: [] as number[], statement: [] as number[] };
    const cpu = { transaction: 0, statement: 0 };
    for (let i = 0; i < 50; i++) for (const run of Object.values(paths)) await run();
    for (let i = 0; i < SAMPLES; i++) {
      for (const name of ['transaction', 'statement'] as const) {
        const before = process.cpuUsage();
        const start = performance.now();
        await paths[name]();
        wall[name].push(performance.now() - start);
        const used = process.cpuUsage(before);
        cpu[name] += (used.user + used.system) / 1000;
      }
    }
    const line = (name: 'transaction' | 'statement') =>
      `p50 ${fmt(percentile(wall[name], 50), 2)} ms, p99 ${fmt(percentile(wall[name], 99), 2)} ms, CPU ${fmt(cpu[name] / SAMPLES, 3)} ms`;
    console.log(`[${engine}] event write, ${SAMPLES} interleaved: transaction path ${line('transaction')}; one statement ${line('statement')}`);
    console.log(
      `  ratio one statement / transaction: p50 ${fmt(percentile(wall.statement, 50) / percentile(wall.transaction, 50), 2)}, ` +
        `p99 ${fmt(percentile(wall.statement, 99) / percentile(wall.transaction, 99), 2)}, CPU ${fmt(cpu.statement / cpu.transaction, 2)}`,
    );
  } finally {
    await app.close();
    await store.close();
    await database?.drop();
  }
}

for (const engine of await benchEngines()) await benchEngine(engine);
