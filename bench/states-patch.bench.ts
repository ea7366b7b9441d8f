// `PATCH /states/{id}` (the toolkit's state.update) through the whole service, against a bare Fastify
// route on the same database pool running the same merge statement, in the same run: requests per
// second of each and their ratio (target >= 0.6). Load comes from autocannon in a second process
// over loopback, so the load generator does not share the server's event loop.
import Fastify from 'fastify';
import { spawn } from 'node:child_process';
import { createRequire } from 'node:module';
import type { AddressInfo } from 'node:net';
import type { Engine } from '../src/server/store/db.js';
import { mergeStatement, writeScopeOf, type WriteScope } from '../src/server/domain/states.js';
import { loadPermissions } from '../src/server/auth/policy.js';
import { benchEngines, benchService, fmt, BENCH_DEPLOY } from './support.js';

/** Seconds of load per side, run as one-second slices that alternate between the sides, so drift in the machine's other load (and the updated rows' growing dead-tuple chains) weighs on both alike. */
const DURATION_S = Number(process.env.BENCH_DURATION ?? 5);
const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 10);
const TARGET = 0.6;
const autocannonBin = createRequire(import.meta.url).resolve('autocannon/autocannon.js');

interface LoadResult {
  seconds: number;
  p99: number;
  non2xx: number;
  errors: number;
  total: number;
}

/** Runs autocannon in a child process against one URL; resolves with its summary. */
function load(url: string, body: string, headers: Record<string, string>, seconds: number): Promise<LoadResult> {
  const args = [autocannonBin, '--json', '-c', String(CONNECTIONS), '-d', String(seconds), '-m', 'PATCH', '-b', body];
  for (const [name, value] of Object.entries({ 'content-type': 'application/json', ...headers })) args.push('-H', `${name}=${value}`);
  args.push(url);
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, args, { stdio: ['ignore', 'pipe', 'inherit'] });
    let out = '';
    child.stdout.on('data', (chunk) => (out += chunk));
    child.on('error', reject);
    child.on('close', (code) => {
      if (code !== 0) return reject(new Error(`autocannon exited with ${code}`));
      const r = JSON.parse(out.trim().split('\n').pop()!);
      resolve({ seconds: r.duration, p99: r.latency.p99, non2xx: r.non2xx, errors: r.errors, total: r.requests.total });
    });
  });
}

async function benchEngine(engine: Engine) {
  const service = await benchService(engine);
  const { store, orgId, serviceUrl, call } = service;

  // The floor: the same statement on the same pool, behind nothing but Fastify's routing and JSON.
  let scope: WriteScope | undefined;
  const bare = Fastify({ logger: false });
  bare.patch<{ Params: { id: string }; Body: { state: Record<string, unknown> } }>('/states/:id', async (request) => {
    const result = await mergeStatement(request.params.id, request.body.state, undefined, scope!).execute(store.db);
    return result.rows[0];
  });
  await bare.listen({ host: '127.0.0.1', port: 0 });
  const bareUrl = `http://127.0.0.1:${(bare.server.address() as AddressInfo).port}`;

  try {
    const deployed = await call('POST', '/agents/deploy', BENCH_DEPLOY);
    await call('POST', '/versions/register', { version_id: deployed.version_id });
    // One state per side, so neither run updates the row the other one bloated.
    const states: string[] = [];
    for (let i = 0; i < 2; i++) {
      const task = await call('POST', '/tasks', { agent_id: deployed.agent_id });
      const state = await call('POST', '/states', {
        task_id: task.id,
        agent_id: deployed.agent_id,
        state: { step: 0, notes: 'x'.repeat(200), items: [1, 2, 3] },
      });
      states.push(state.id);
    }
    const editor = await call('POST', '/api_keys', {
      name: 'bench-runtime',
      scopes: [{ resource_type: 'agent', resource_id: deployed.agent_id, role: 'editor' }],
    });
    const auth = { authorization: `Bearer ${editor.secret}` };
    scope = writeScopeOf(await loadPermissions(store.db, { keyId: editor.api_key.id, orgId, name: editor.api_key.name }));
    const body = JSON.stringify({ state: { step: 1, progress: 0.5, message: 'working' } });
    const targets = { service: `${serviceUrl}/states/${states[0]}`, bare: `${bareUrl}/states/${states[1]}` };

    await load(targets.bare, body, {}, 1); // warm-up, discarded
    await load(targets.service, body, auth, 1);
    const runs = { bare: [] as LoadResult[], service: [] as LoadResult[] };
    for (let slice = 0; slice < DURATION_S; slice++) {
      const order = slice % 2 === 0 ? (['bare', 'service'] as const) : (['service', 'bare'] as const);
      for (const side of order) runs[side].push(await load(targets[side], body, side === 'service' ? auth : {}, 1));
    }
    const summary = (side: 'bare' | 'service') => {
      const rs = runs[side];
      const total = rs.reduce((n, r) => n + r.total, 0);
      const failed = rs.reduce((n, r) => n + r.non2xx + r.errors, 0);
      if (failed || total === 0) throw new Error(`${side}: ${failed} failed requests out of ${total}`);
      return { rps: total / rs.reduce((n, r) => n + r.seconds, 0), p99: Math.max(...rs.map((r) => r.p99)) };
    };
    const floor = summary('bare');
    const service = summary('service');
    const ratio = service.rps / floor.rps;
    console.log(
      `${engine.padEnd(8)} PATCH /states/{id} ${fmt(service.rps).padStart(6)} req/s (p99 ${service.p99} ms)` +
        ` | bare route, same statement ${fmt(floor.rps).padStart(6)} req/s (p99 ${floor.p99} ms)` +
        ` | ratio = service / bare = ${fmt(ratio, 2)} (target >= ${TARGET})${ratio < TARGET ? '  BELOW TARGET' : ''}`,
    );
  } finally {
    await bare.close();
    await service.close();
  }
}

console.log(`${CONNECTIONS} connections, ${DURATION_S} s per side in alternating 1 s slices, autocannon in a second process`);
for (const engine of await benchEngines()) await benchEngine(engine);
