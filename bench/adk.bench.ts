// The ADK's costs, as ratios against floors measured in the same run:
// 1. `import('agentctl/adk')` in a fresh Node process against `node -e 0`.
// 2. `ctx.state.update` and `ctx.messages.send` called one after another from one handler's context,
//    against the same endpoint called bare (undici keep-alive, no ADK) from the same process.
import { execFileSync, spawnSync } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { Agent, request } from 'undici';
import { createAdk, TaskContext } from '../src/adk/index.js';
import { buildApp } from '../src/server/app.js';
import { ensureBootstrap } from '../src/server/bootstrap.js';
import { generateSecret } from '../src/server/auth/secrets.js';
import { openStore, type Engine } from '../src/server/store/db.js';
import { benchEngines, fmt, median, throwawayDatabase, BENCH_DEPLOY } from './support.js';

const root = path.dirname(path.dirname(fileURLToPath(import.meta.url)));
const IMPORT_RUNS = Number(process.env.BENCH_IMPORT_RUNS ?? 15);
const SLICE_MS = 1000;
const SLICES = Number(process.env.BENCH_DURATION ?? 4);

function importCost() {
  execFileSync(process.execPath, [path.join(root, 'scripts/build-adk.mjs'), '--no-declarations'], { cwd: root });
  const run = (args: string[]) => {
    const started = performance.now();
    const r = spawnSync(process.execPath, args, { cwd: root });
    if (r.status !== 0) throw new Error(`node ${args.join(' ')}: ${r.stderr}`);
    return performance.now() - started;
  };
  const bare: number[] = [];
  const adk: number[] = [];
  run(['-e', '0']);
  run(['--input-type=module', '-e', "await import('agentctl/adk')"]);
  for (let i = 0; i < IMPORT_RUNS; i++) {
    bare.push(run(['-e', '0']));
    adk.push(run(['--input-type=module', '-e', "await import('agentctl/adk')"]));
  }
  const floor = median(bare);
  const measured = median(adk);
  console.log(
    `import('agentctl/adk') ${fmt(measured, 1)} ms | node -e 0 ${fmt(floor, 1)} ms | ratio = ${fmt(measured / floor, 2)} (median of ${IMPORT_RUNS}, fresh processes)`,
  );
}

/** Calls `fn` back to back for `ms`; returns how many completed. */
async function repeatFor(ms: number, fn: () => Promise<unknown>): Promise<number> {
  const end = performance.now() + ms;
  let n = 0;
  while (performance.now() < end) {
    await fn();
    n++;
  }
  return n;
}

async function callRates(engine: Engine) {
  const database = engine === 'postgres' ? await throwawayDatabase() : undefined;
  const store = await openStore({ databaseUrl: database?.url });
  const adminKey = generateSecret();
  await ensureBootstrap(store.db, adminKey);
  const app = await buildApp({ store, config: { rateLimitPerSecond: 0 } });
  await app.listen({ host: '127.0.0.1', port: 0 });
  const url = `http://127.0.0.1:${(app.server.address() as AddressInfo).port}`;
  const pool = new Agent({ connections: 4 });
  // Creates carry an Idempotency-Key as the ADK's do, so the ratio is the ADK's own cost.
  const bare = async (method: 'POST' | 'PATCH', p: string, body: unknown) => {
    const headers = {
      authorization: `Bearer ${adminKey}`,
      'content-type': 'application/json',
      ...(method === 'POST' ? { 'idempotency-key': randomUUID() } : {}),
    };
    const res = await request(url + p, { method, dispatcher: pool, headers, body: JSON.stringify(body) });
    const text = await res.body.text();
    if (res.statusCode >= 300) throw new Error(`${method} ${p}: ${res.statusCode} ${text.slice(0, 300)}`);
    return JSON.parse(text);
  };
  try {
    const deployed = await bare('POST', '/agents/deploy', BENCH_DEPLOY);
    await bare('POST', '/versions/register', { version_id: deployed.version_id });
    const tasks = [await bare('POST', '/tasks', { agent_id: deployed.agent_id }), await bare('POST', '/tasks', { agent_id: deployed.agent_id })];
    const bareState = await bare('POST', '/states', { task_id: tasks[0].id, agent_id: deployed.agent_id, state: { step: 0 } });
    await bare('POST', '/states', { task_id: tasks[1].id, agent_id: deployed.agent_id, state: { step: 0 } });
    const adk = createAdk({ baseUrl: url, apiKey: adminKey });
    const ctx = new TaskContext(adk, tasks[1], { id: deployed.agent_id, name: 'default/bench-bot' }, null, root);

    const sides = {
      'state.update': {
        adk: () => ctx.state.update({ step: 1, message: 'working' }),
        bare: () => bare('PATCH', `/states/${bareState.id}`, { state: { step: 1, message: 'working' } }),
      },
      'messages.send': {
        adk: () => ctx.messages.send('progress note'),
        bare: () => bare('POST', '/messages', { task_id: tasks[0].id, content: 'progress note' }),
      },
    };
    for (const [name, side] of Object.entries(sides)) {
      await repeatFor(300, side.bare); // warm-up, discarded
      await repeatFor(300, side.adk);
      const counts = { adk: 0, bare: 0 };
      for (let slice = 0; slice < SLICES; slice++) {
        const order = slice % 2 === 0 ? (['bare', 'adk'] as const) : (['adk', 'bare'] as const);
        for (const s of order) counts[s] += await repeatFor(SLICE_MS, side[s]);
      }
      const seconds = (SLICES * SLICE_MS) / 1000;
      const adkRate = counts.adk / seconds;
      const bareRate = counts.bare / seconds;
      console.log(
        `${engine.padEnd(8)} ctx.${name.padEnd(13)} ${fmt(adkRate).padStart(5)} calls/s | bare HTTP, same endpoint ${fmt(bareRate).padStart(5)} req/s | ratio = ${fmt(adkRate / bareRate, 2)}`,
      );
    }
  } finally {
    await pool.close();
    await app.close();
    await store.close();
    await database?.drop();
  }
}

importCost();
console.log(`one caller, calls back to back, ${SLICES} alternating 1 s slices per side`);
for (const engine of await benchEngines()) await callRates(engine);
process.exit(0);
