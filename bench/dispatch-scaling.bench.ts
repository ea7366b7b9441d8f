// How the dispatcher (README "Delivery to agents, in short") scales with the number of tasks, on each
// engine: events per second through it for 1, 10, 100 and 1000 tasks (about 1000 events in all,
// spread evenly; the outbox filled first, then one dispatcher timed until the agent has every
// delivery; no dispatcher runs while it fills), each against the bare rate of single-row INSERTs with the same pool measured in the
// same run. Every task's deliveries must reach the agent in order, one at a time: the run fails
// otherwise.
// Then, on PGlite, the same 100-task row again and again (BENCH_SCALING_ROUNDS, 10), with the embedded
// autovacuum (store/vacuum.ts) off, as PGlite alone is, and on with its passes every
// BENCH_VACUUM_INTERVAL_MS (2000: the server's is PostgreSQL's naptime, 60 s, against far more
// deliveries): each round's rate against the first round's, and the size of the partial indexes
// of open deliveries the claims read.
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { sql } from 'kysely';
import { verifySignature, SIGNATURE_HEADER } from '../src/contract/acp.js';
import type { Engine, StoreOptions } from '../src/server/store/db.js';
import { startDispatcher } from '../src/server/delivery/dispatcher.js';
import { signingSecretFor } from '../src/server/domain/registration.js';
import { createEvent } from '../src/server/domain/conversation.js';
import { unrestricted } from '../src/server/auth/policy.js';
import { benchEngines, benchService, fmt, median, BENCH_DEPLOY } from './support.js';

const TOTAL_EVENTS = Number(process.env.BENCH_SCALING_EVENTS ?? 1000);
const TASK_COUNTS = (process.env.BENCH_SCALING_TASKS ?? '1,10,100,1000').split(',').map(Number);
const INSERT_CONCURRENCY = 10;
const SUSTAINED_ROUNDS = Number(process.env.BENCH_SCALING_ROUNDS ?? 10);
const VACUUM_INTERVAL_MS = Number(process.env.BENCH_VACUUM_INTERVAL_MS ?? 2000);

const now = () => performance.now();

interface Row {
  tasks: number;
  deliveries: number;
  rate: number;
  floor: number;
  /** The partial indexes of open deliveries (claim order, per task), bytes, before the round. */
  openIndexBytes: number;
}

async function benchEngine(engine: Engine, taskCounts: number[], storeOptions: Pick<StoreOptions, 'vacuum' | 'vacuumIntervalMs'> = {}): Promise<Row[]> {
  const service = await benchService(engine, { store: storeOptions });
  const { store, orgId, call } = service;

  // The agent: verifies each delivery, checks each task's events come in order and one at a time.
  let secret = '';
  let received = 0;
  let onReceived: (() => void) | undefined;
  const nextOfTask = new Map<string, number>();
  const busy = new Set<string>();
  const violations: string[] = [];
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
      const taskId: string = rpc.params.task.id;
      if (busy.has(taskId)) violations.push(`task ${taskId} had two deliveries at once`);
      busy.add(taskId);
      if (rpc.method === 'event/send') {
        const n = Number(String(rpc.params.event.content.text).slice(1));
        const expected = nextOfTask.get(taskId) ?? 0;
        if (n !== expected) violations.push(`task ${taskId} got event ${n}, expected ${expected}`);
        nextOfTask.set(taskId, n + 1);
      }
      res.setHeader('content-type', 'application/json');
      res.end(JSON.stringify({ jsonrpc: '2.0', id: rpc.id, result: { accepted: true } }), () => {
        busy.delete(taskId);
        received++;
        onReceived?.();
      });
    });
  });
  const agentUrl = await new Promise<string>((resolve) =>
    agent.listen(0, '127.0.0.1', () => resolve(`http://127.0.0.1:${(agent.address() as AddressInfo).port}`)),
  );
  const waitFor = (count: number) =>
    new Promise<void>((resolve) => {
      if (received >= count) return resolve();
      onReceived = () => {
        if (received >= count) {
          onReceived = undefined;
          resolve();
        }
      };
    });

  try {
    const deployed = await call('POST', '/agents/deploy', BENCH_DEPLOY);
    await call('POST', '/versions/register', { version_id: deployed.version_id, acp_url: agentUrl });
    secret = await signingSecretFor(store.db, deployed.version_id);
    const perms = unrestricted({ keyId: '', orgId, name: 'bench' });
    await sql`CREATE TABLE bench_floor (id bigserial PRIMARY KEY, task_id text NOT NULL, payload jsonb NOT NULL)`.execute(store.db);

    /** The floor: `count` single-row INSERTs, INSERT_CONCURRENCY at a time. */
    const insertRate = async (count: number) => {
      const start = now();
      let next = 0;
      await Promise.all(
        Array.from({ length: INSERT_CONCURRENCY }, async () => {
          while (next < count) {
            const i = next++;
            await sql`INSERT INTO bench_floor (task_id, payload) VALUES (${`t${i}`}, ${JSON.stringify({ n: i })})`.execute(store.db);
          }
        }),
      );
      return count / ((now() - start) / 1000);
    };

    const rows: Row[] = [];
    for (const taskCount of taskCounts) {
      const eventsPerTask = Math.max(1, Math.round(TOTAL_EVENTS / taskCount));
      const tasks: { id: string }[] = [];
      for (let i = 0; i < taskCount; i += 16) {
        const batch = Math.min(16, taskCount - i);
        tasks.push(...(await Promise.all(Array.from({ length: batch }, () => call('POST', '/tasks', { agent_id: deployed.agent_id })))));
      }
      for (let n = 0; n < eventsPerTask; n++) {
        for (let i = 0; i < tasks.length; i += 16)
          await Promise.all(tasks.slice(i, i + 16).map((t) => createEvent(store.db, perms, t.id, { type: 'text', text: `e${n}` })));
      }
      const pending = await store.db
        .selectFrom('deliveries')
        .select(sql<number>`count(*)::int`.as('n'))
        .where('status', '=', 'pending')
        .executeTakeFirstOrThrow();
      const size = await sql<{
        bytes: string;
      }>`SELECT (pg_relation_size('deliveries_claim_order') + pg_relation_size('deliveries_open'))::text AS bytes`.execute(store.db);
      const before = received;
      const start = now();
      const dispatcher = await startDispatcher(store);
      await waitFor(before + pending.n);
      const rate = pending.n / ((now() - start) / 1000);
      await dispatcher.close();
      // The floor, right after (interleaved with the rows): as many single-row INSERTs.
      const floor = await insertRate(pending.n);
      rows.push({ tasks: taskCount, deliveries: pending.n, rate, floor, openIndexBytes: Number(size.rows[0].bytes) });
    }
    if (violations.length) throw new Error(`ordering broken: ${violations.slice(0, 5).join('; ')}`);
    return rows;
  } finally {
    await new Promise((r) => agent.close(r));
    await service.close();
  }
}

const engines = await benchEngines();
for (const engine of engines) {
  const rows = await benchEngine(engine, TASK_COUNTS);
  console.log(`[${engine}] events/s through the dispatcher by number of tasks (outbox filled first, ~${TOTAL_EVENTS} events in all)`);
  console.log('  tasks  deliveries  events/s  single-row INSERT/s  ratio');
  for (const row of rows)
    console.log(
      `  ${String(row.tasks).padStart(5)}  ${String(row.deliveries).padStart(10)}  ${fmt(row.rate).padStart(8)}  ${fmt(row.floor).padStart(19)}  ${fmt(row.rate / row.floor, 2).padStart(5)}`,
    );
}

if (SUSTAINED_ROUNDS > 0 && engines.includes('pglite')) {
  const rounds = Array.from({ length: SUSTAINED_ROUNDS }, () => 100);
  const off = await benchEngine('pglite', rounds, { vacuum: false });
  const on = await benchEngine('pglite', rounds, { vacuumIntervalMs: VACUUM_INTERVAL_MS });
  const kib = (bytes: number) => `${fmt(bytes / 1024)} KiB`;
  console.log(
    `[pglite] ${SUSTAINED_ROUNDS} rounds of the 100-task row, the embedded autovacuum off and on (every ${fmt(VACUUM_INTERVAL_MS)} ms); open-delivery indexes before each round, the rate, and that against round 1's`,
  );
  console.log('  round  off: indexes  events/s  vs 1  |  on: indexes  events/s  vs 1');
  for (let r = 0; r < SUSTAINED_ROUNDS; r++)
    console.log(
      `  ${String(r + 1).padStart(5)}  ${kib(off[r].openIndexBytes).padStart(12)}  ${fmt(off[r].rate).padStart(8)}  ${fmt(off[r].rate / off[0].rate, 2).padStart(4)}  |  ${kib(on[r].openIndexBytes).padStart(11)}  ${fmt(on[r].rate).padStart(8)}  ${fmt(on[r].rate / on[0].rate, 2).padStart(4)}`,
    );
  // Round 1 is cold (code not yet optimised): rounds 2 to the middle against the rest.
  const middle = Math.floor(SUSTAINED_ROUNDS / 2);
  const change = (rows: Row[]) => {
    const early = median(rows.slice(1, middle).map((row) => row.rate));
    const late = median(rows.slice(middle).map((row) => row.rate));
    return `${fmt(early)} -> ${fmt(late)} (${fmt(late / early, 2)}x)`;
  };
  console.log(`  median events/s, rounds 2-${middle} -> the last ${SUSTAINED_ROUNDS - middle}: off ${change(off)}, on ${change(on)}`);
}
