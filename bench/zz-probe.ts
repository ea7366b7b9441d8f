import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { request } from 'undici';
import { openStore } from '../src/server/store/db.js';
import { ensureBootstrap } from '../src/server/bootstrap.js';
import { buildApp } from '../src/server/app.js';
import { generateSecret } from '../src/server/auth/secrets.js';
import { createEvent } from '../src/server/domain/conversation.js';
import { unrestricted } from '../src/server/auth/policy.js';
import { Dispatcher } from '../src/server/delivery/dispatcher.js';
import { BENCH_DEPLOY } from './support.js';

const store = await openStore({ databaseUrl: process.env.URL });
const key = generateSecret();
const { orgId } = await ensureBootstrap(store.db, key);
const app = await buildApp({ store, config: { rateLimitPerSecond: 0 } });
await app.listen({ host: '127.0.0.1', port: 0 });
const url = `http://127.0.0.1:${(app.server.address() as AddressInfo).port}`;
const call = async (path: string, body: unknown) => JSON.parse(await (await request(url + path, { method: 'POST', headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' }, body: JSON.stringify(body) })).body.text());
let got = 0; let done: () => void = () => {};
const times: number[] = [];
const agent = createServer((req, res) => { req.resume(); req.on('end', () => { times.push(performance.now()); res.setHeader('content-type', 'application/json'); res.end(JSON.stringify({ jsonrpc: '2.0', id: 1, result: { accepted: true } }), () => { if (++got >= 101) done(); }); }); });
await new Promise<void>((r) => agent.listen(0, '127.0.0.1', () => r()));
const dep = await call('/agents/deploy', BENCH_DEPLOY);
await call('/versions/register', { version_id: dep.version_id, acp_url: `http://127.0.0.1:${(agent.address() as AddressInfo).port}` });
const perms = unrestricted({ keyId: '', orgId, name: 'p' });
const task = await call('/tasks', { agent_id: dep.agent_id });
for (let n = 0; n < 100; n++) await createEvent(store.db, perms, task.id, { type: 'text', text: `e${n}` });
const d = new Dispatcher(store) as any;
const counts: Record<string, number> = {}; const spent: Record<string, number> = {};
for (const m of ['claim', 'complete', 'deliver', 'signed', 'settledBeforeSending', 'release']) {
  const orig = d[m].bind(d);
  d[m] = async (...a: any[]) => { const t = performance.now(); try { return await orig(...a); } finally { counts[m] = (counts[m] ?? 0) + 1; spent[m] = (spent[m] ?? 0) + performance.now() - t; } };
}
const t0 = performance.now();
await d.start();
await new Promise<void>((r) => { done = r; });
console.log('events/s', (101 / ((performance.now() - t0) / 1000)).toFixed(0), counts, Object.fromEntries(Object.entries(spent).map(([k, v]) => [k, v.toFixed(0)])));
const gaps = times.slice(1).map((t, i) => t - times[i]).sort((a, b) => a - b);
console.log('gap p50', gaps[50].toFixed(1), 'p90', gaps[90].toFixed(1));

for (let n = 0; n < 5; n++) await createEvent(store.db, perms, task.id, { type: 'text', text: `x${n}` });
await d.close();
const d2 = new Dispatcher(store) as any;
const [x] = await d2.claim(1, undefined, [task.id]);
const orig2 = d2.claiming.bind(d2);
d2.claiming = (...a: any[]) => { const b = orig2(...a); return { execute: async (db: any) => { const c = b.compile(db); const t = performance.now(); const r = await db.executeQuery({ ...c, sql: 'EXPLAIN (ANALYZE, VERBOSE OFF) ' + c.sql }); console.log('wall', (performance.now() - t).toFixed(1)); for (const row of r.rows) console.log(Object.values(row)[0]); return { rows: [] }; } }; };
await d2.complete(x, d2.id, true);
agent.close(); await app.close(); await store.close();
