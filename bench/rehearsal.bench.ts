// Rehearsal (README "Versions and migration"), on each engine: 100 tasks x 10 events handled live on
// v1, then the same tasks rehearsed on v2 (`POST /rehearsals`, shadows replaying every recorded
// event through the outbox behind live work), timed until the report is complete. The ratio is the
// rehearsal's time over the time the same events took live; the goal is at most 2x.
// Live, each task's events are sent one after another as their answers come (the way people and
// clients talk to an agent), 100 tasks at once. The agent is a node:http server in this process that
// does what an ADK handler does per event: it takes the completion lease, writes one message, and
// reports the delivery complete.
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { verifySignature, SIGNATURE_HEADER } from '../src/contract/acp.js';
import type { Engine } from '../src/server/store/db.js';
import { startDispatcher } from '../src/server/delivery/dispatcher.js';
import { startRehearsalDriver } from '../src/server/delivery/rehearsal-driver.js';
import { signingSecretFor } from '../src/server/domain/registration.js';
import { benchEngines, benchService, fmt, BENCH_DEPLOY } from './support.js';

const TASKS = Number(process.env.BENCH_TASKS ?? 100);
const EVENTS_PER_TASK = Number(process.env.BENCH_EVENTS_PER_TASK ?? 10);
const GOAL = 2;

const now = () => performance.now();
const listen = (server: Server) =>
  new Promise<string>((resolve) => server.listen(0, '127.0.0.1', () => resolve(`http://127.0.0.1:${(server.address() as AddressInfo).port}`)));

async function benchEngine(engine: Engine): Promise<number> {
  const service = await benchService(engine, { connections: 64 });
  const { store, call } = service;

  // The agent (both versions, one server): verify, take the lease, write the answer, complete.
  const secrets: string[] = [];
  const handledKeys = new Set<string>();
  const handled = new Map<string, () => void>();
  const agent = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c) => chunks.push(c));
    req.on('end', () => {
      const body = Buffer.concat(chunks).toString('utf8');
      if (!secrets.some((s) => verifySignature(s, body, req.headers[SIGNATURE_HEADER] as string).ok)) {
        res.statusCode = 401;
        return res.end('{}');
      }
      const rpc = JSON.parse(body);
      res.setHeader('content-type', 'application/json');
      res.end(JSON.stringify({ jsonrpc: '2.0', id: rpc.id, result: { accepted: true, deferred: true } }));
      void (async () => {
        const text = rpc.method === 'event/send' ? `answer to ${rpc.params.event.content.text}` : 'ready';
        await call('POST', '/messages', { task_id: rpc.params.task.id, content: text });
        await call('POST', `/deliveries/${rpc.id}/complete`);
        const key = rpc.method === 'event/send' ? rpc.params.event.id : `create:${rpc.params.task.id}`;
        handledKeys.add(key);
        handled.get(key)?.();
      })();
    });
  });
  const agentUrl = await listen(agent);
  const handledOnce = (key: string) => new Promise<void>((resolve) => (handledKeys.has(key) ? resolve() : handled.set(key, resolve)));

  const dispatcher = await startDispatcher(store);
  const driver = await startRehearsalDriver(store);
  try {
    const v1 = await call('POST', '/agents/deploy', BENCH_DEPLOY);
    await call('POST', '/versions/register', { version_id: v1.version_id, acp_url: agentUrl });
    secrets.push(await signingSecretFor(store.db, v1.version_id));

    // Live on v1: the tasks, then each task's events one after another, all tasks at once.
    const tasks: { id: string }[] = [];
    const created: Promise<void>[] = [];
    for (let i = 0; i < TASKS; i++) {
      const task = await call('POST', '/tasks', { agent_id: v1.agent_id });
      tasks.push(task);
      created.push(handledOnce(`create:${task.id}`));
    }
    await Promise.all(created);
    const liveStart = now();
    await Promise.all(
      tasks.map(async (task) => {
        for (let n = 0; n < EVENTS_PER_TASK; n++) {
          const event = await call('POST', `/tasks/${task.id}/events`, { content: `e${n}` });
          await handledOnce(event.id);
        }
      }),
    );
    const liveMs = now() - liveStart;

    // v2, sticky: the tasks stay on v1; the rehearsal replays them on v2.
    const v2 = await call('POST', '/agents/deploy', { ...BENCH_DEPLOY, git_hash: 'c0ffee02', are_tasks_sticky: true });
    await call('POST', '/versions/register', { version_id: v2.version_id, acp_url: agentUrl });
    secrets.push(await signingSecretFor(store.db, v2.version_id));
    const rehearsalStart = now();
    const rehearsal = await call('POST', '/rehearsals', { from_version_id: v1.version_id, to_version_id: v2.version_id });
    let report = rehearsal;
    while (report.status !== 'completed') {
      await new Promise((r) => setTimeout(r, 100));
      report = await call('GET', `/rehearsals/${rehearsal.id}`);
    }
    const rehearsalMs = now() - rehearsalStart;
    if (report.totals.events_replayed !== TASKS * EVENTS_PER_TASK || report.regressions_found)
      throw new Error(`the rehearsal replayed ${report.totals.events_replayed} events, regressions ${report.regressions_found}`);

    const ratio = rehearsalMs / liveMs;
    console.log(`[${engine}] ${TASKS} tasks x ${EVENTS_PER_TASK} events`);
    console.log(
      `  live on v1 ${fmt(liveMs)} ms; rehearsal on v2 (shadows created, onCreate and ${fmt(TASKS * EVENTS_PER_TASK)} events replayed, report complete) ${fmt(rehearsalMs)} ms`,
    );
    console.log(`  ratio ${fmt(ratio, 2)}x the live time (goal <= ${GOAL}x): ${ratio <= GOAL ? 'ok' : 'ABOVE GOAL'}`);
    return ratio;
  } finally {
    await driver.close();
    await dispatcher.close();
    agent.close();
    await service.close();
  }
}

for (const engine of await benchEngines()) await benchEngine(engine);
