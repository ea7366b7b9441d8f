// Traces (README "Traces"): what tracing with the in-server span store costs, against the same
// server with AGENTCTL_TRACING=off, in one run. Per engine and per setting: a server, its dispatcher
// and an in-process agent that acknowledges each delivery at once; then
//  1. p50 latency of `POST /tasks/{id}/events` to the agent having the delivery, sequential events;
//  2. events per second from POST to the agent, across 20 tasks with 16 requests in flight.
// Every request carries a W3C traceparent, as the CLI's do. Each setting runs BENCH_ROUNDS times (3),
// interleaved, and keeps its median figures; printed as ratios (on / off); the goal is at most 10% of
// throughput and 5% of p50 latency.
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Agent, request } from 'undici';
import { verifySignature, SIGNATURE_HEADER } from '../src/contract/acp.js';
import { formatTraceparent, newSpanId, newTraceId } from '../src/contract/trace-context.js';
import { buildApp } from '../src/server/app.js';
import { ensureBootstrap } from '../src/server/bootstrap.js';
import { openStore, type Engine } from '../src/server/store/db.js';
import { generateSecret } from '../src/server/auth/secrets.js';
import { startDispatcher } from '../src/server/delivery/dispatcher.js';
import { signingSecretFor } from '../src/server/domain/registration.js';
import { benchEngines, fmt, median, throwawayDatabase, BENCH_DEPLOY } from './support.js';

const LATENCY_SAMPLES = Number(process.env.BENCH_LATENCY_SAMPLES ?? 150);
const THROUGHPUT_EVENTS = Number(process.env.BENCH_THROUGHPUT_EVENTS ?? 600);
const TASKS = 20;
const IN_FLIGHT = 16;

const now = () => performance.now();
const percentile = (xs: number[], p: number) => [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor((xs.length * p) / 100))]!;
const listen = (server: Server) =>
  new Promise<string>((resolve) => server.listen(0, '127.0.0.1', () => resolve(`http://127.0.0.1:${(server.address() as AddressInfo).port}`)));

async function measure(engine: Engine, tracing: boolean): Promise<{ p50: number; perSecond: number; spans: number; cpuMs: number }> {
  const database = engine === 'postgres' ? await throwawayDatabase() : undefined;
  const store = await openStore({ databaseUrl: database?.url });
  const adminKey = generateSecret();
  await ensureBootstrap(store.db, adminKey);
  const app = await buildApp({ store, config: { rateLimitPerSecond: 0, tracing } });
  await app.listen({ host: '127.0.0.1', port: 0 });
  const serviceUrl = `http://127.0.0.1:${(app.server.address() as AddressInfo).port}`;
  const http = new Agent({ connections: IN_FLIGHT + 4 });
  const call = async (method: 'POST' | 'GET', path: string, body?: unknown) => {
    const res = await request(serviceUrl + path, {
      method,
      dispatcher: http,
      headers: {
        authorization: `Bearer ${adminKey}`,
        'content-type': 'application/json',
        traceparent: formatTraceparent({ traceId: newTraceId(), spanId: newSpanId(), sampled: true }),
      },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const text = await res.body.text();
    if (res.statusCode >= 300) throw new Error(`${method} ${path}: ${res.statusCode} ${text.slice(0, 300)}`);
    return JSON.parse(text);
  };

  let secret = '';
  const arrived = new Map<string, number>();
  let received = 0;
  let waiting: { count: number; resolve: () => void } | undefined;
  const agent = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c) => chunks.push(c));
    req.on('end', () => {
      const body = Buffer.concat(chunks).toString('utf8');
      if (!verifySignature(secret, body, req.headers[SIGNATURE_HEADER] as string).ok) {
        res.statusCode = 401;
        return res.end('{}');
      }
      const rpc = JSON.parse(body);
      if (rpc.method === 'event/send') arrived.set(rpc.params.event.id, now());
      received++;
      if (waiting && received >= waiting.count) waiting.resolve();
      res.setHeader('content-type', 'application/json');
      res.end(JSON.stringify({ jsonrpc: '2.0', id: rpc.id, result: { accepted: true } }));
    });
  });
  const agentUrl = await listen(agent);
  const waitFor = (count: number) =>
    new Promise<void>((resolve) => {
      if (received >= count) return resolve();
      waiting = { count, resolve };
    });
  const dispatcher = await startDispatcher(store, { tracing: app.service.tracing });
  try {
    const deployed = await call('POST', '/agents/deploy', BENCH_DEPLOY);
    await call('POST', '/versions/register', { version_id: deployed.version_id, acp_url: agentUrl });
    secret = await signingSecretFor(store.db, deployed.version_id);
    const tasks: string[] = [];
    for (let i = 0; i < TASKS; i++) tasks.push((await call('POST', '/tasks', { agent_id: deployed.agent_id })).id);
    await waitFor(TASKS);

    // (1) latency, after a short warm-up.
    const latencies: number[] = [];
    for (let i = -20; i < LATENCY_SAMPLES; i++) {
      const target = received + 1;
      const start = now();
      const event = await call('POST', `/tasks/${tasks[0]}/events`, { content: `hello ${i}` });
      await waitFor(target);
      if (i >= 0) latencies.push(arrived.get(event.id)! - start);
    }

    // (2) throughput across the tasks.
    const target = received + THROUGHPUT_EVENTS;
    let next = 0;
    const cpuBefore = process.cpuUsage();
    const start = now();
    await Promise.all(
      Array.from({ length: IN_FLIGHT }, async () => {
        for (let i = next++; i < THROUGHPUT_EVENTS; i = next++) await call('POST', `/tasks/${tasks[i % TASKS]}/events`, { content: `event ${i}` });
      }),
    );
    await waitFor(target);
    const seconds = (now() - start) / 1000;
    const cpu = process.cpuUsage(cpuBefore);
    await app.service.tracing?.flush();
    const spans = Number(
      (
        await store.db
          .selectFrom('trace_spans')
          .select((eb) => eb.fn.countAll().as('n'))
          .executeTakeFirstOrThrow()
      ).n,
    );
    // This process's CPU per event (server, dispatcher, agent and client alike; the database's own is PostgreSQL's):
    // steadier than wall time on a loaded machine.
    return { p50: percentile(latencies, 50), perSecond: THROUGHPUT_EVENTS / seconds, spans, cpuMs: (cpu.user + cpu.system) / 1000 / THROUGHPUT_EVENTS };
  } finally {
    await dispatcher.close();
    await app.close();
    await http.close();
    agent.close();
    await store.close();
    await database?.drop();
  }
}

type Measure = Awaited<ReturnType<typeof measure>>;
/** Each setting's median over the rounds, so a burst of load on a shared machine does not decide the ratio. */
const middle = (runs: Measure[]) => ({
  p50: median(runs.map((r) => r.p50)),
  perSecond: median(runs.map((r) => r.perSecond)),
  spans: median(runs.map((r) => r.spans)),
  cpuMs: median(runs.map((r) => r.cpuMs)),
});
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);

for (const engine of await benchEngines()) {
  // Interleaved: off, on, off, on, ...; each setting's median figures.
  const runs = { off: [] as Measure[], on: [] as Measure[] };
  for (let round = 0; round < ROUNDS; round++) {
    runs.off.push(await measure(engine, false));
    runs.on.push(await measure(engine, true));
  }
  const off = middle(runs.off);
  const on = middle(runs.on);
  const each = (rs: Measure[]) => `runs: ${rs.map((r) => `${fmt(r.p50, 1)} ms/${fmt(r.perSecond)}`).join(', ')}`;
  console.log(`[${engine}] tracing off: p50 ${fmt(off.p50, 2)} ms, ${fmt(off.perSecond)} events/s (${each(runs.off)})`);
  console.log(
    `[${engine}] tracing on (in-server store, ${fmt(on.spans)} spans kept): p50 ${fmt(on.p50, 2)} ms, ${fmt(on.perSecond)} events/s (${each(runs.on)})`,
  );
  console.log(
    `[${engine}] cost of tracing: p50 latency ${fmt((on.p50 / off.p50 - 1) * 100, 1)}% (goal <= 5%), throughput ${fmt((1 - on.perSecond / off.perSecond) * 100, 1)}% (goal <= 10%)` +
      `, CPU per event in this process ${fmt(off.cpuMs, 2)} -> ${fmt(on.cpuMs, 2)} ms (${fmt((on.cpuMs / off.cpuMs - 1) * 100, 1)}%)`,
  );
}
