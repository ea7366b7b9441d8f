// `GET /status` (domain/status.ts: one statement of nine parts) on a seeded service, per engine:
//  1. EXPLAIN ANALYZE of its statement run plain, planning against execution time: what preparing saves;
//  2. the statement run plain against run through executePrepared (PREPAREd once on PGlite, as
//     getStatus runs it), interleaved in this process;
//  3. over HTTP, `GET /status` with and without an agent against `GET /agents/.../versions` of the
//     same agent (the floor: one simple read through the same stack), interleaved, median of each.
import { unrestricted } from '../src/server/auth/policy.js';
import { statusStatement } from '../src/server/domain/status.js';
import { executePrepared } from '../src/server/store/prepared.js';
import { BENCH_DEPLOY, benchEngines, benchService, fmt, median, timed } from './support.js';

const ROUNDS = Number(process.env.BENCH_RUNS ?? 200);
const VERSIONS = 20;
const TASKS = 200;

for (const engine of await benchEngines()) {
  const svc = await benchService(engine);
  try {
    const { store, call, orgId } = svc;
    let agentId = '';
    for (let i = 0; i < VERSIONS; i++) {
      const deployed = await call('POST', '/agents/deploy', { ...BENCH_DEPLOY, git_hash: (i + 1).toString(16).padStart(8, 'c') });
      await call('POST', '/versions/register', { version_id: deployed.version_id });
      agentId = deployed.agent_id;
    }
    // Tasks with an event each: task counts and open deliveries (no agent process takes them) to count.
    for (let i = 0; i < TASKS; i++) {
      const task = await call('POST', '/tasks', { agent_id: agentId });
      await call('POST', `/tasks/${task.id}/events`, { content: `hello ${i}` });
    }
    const perms = unrestricted({ keyId: '', orgId, name: 'bench' });
    const agent = await store.db.selectFrom('agents').select(['id', 'namespace_id']).where('id', '=', agentId).executeTakeFirstOrThrow();
    console.log(`${engine}: ${VERSIONS} versions, ${TASKS} tasks with an open delivery each, ${ROUNDS} rounds`);

    // 1. Where a plain run's time goes.
    for (const [label, scope] of [
      ['with an agent', agent],
      ['all agents   ', undefined],
    ] as const) {
      const compiled = statusStatement(store.db, perms, scope).compile();
      const planning: number[] = [];
      const execution: number[] = [];
      for (let i = 0; i < 20; i++) {
        const { rows } = await store.db.executeQuery<{ 'QUERY PLAN': unknown }>({ ...compiled, sql: `EXPLAIN (ANALYZE, FORMAT JSON) ${compiled.sql}` });
        const raw = rows[0]['QUERY PLAN'];
        const [plan] = (typeof raw === 'string' ? JSON.parse(raw) : raw) as Array<{ 'Planning Time': number; 'Execution Time': number }>;
        planning.push(plan['Planning Time']);
        execution.push(plan['Execution Time']);
      }
      console.log(`  EXPLAIN ANALYZE ${label}: planning ${fmt(median(planning), 2)} ms, execution ${fmt(median(execution), 2)} ms (medians of 20)`);
    }

    // 2. Plain against prepared, interleaved.
    const direct: Record<string, () => Promise<unknown>> = {
      'statement plain, agent   ': () => statusStatement(store.db, perms, agent).execute(),
      'statement prepared, agent': () => executePrepared(store.db, statusStatement(store.db, perms, agent)),
      'statement plain, all     ': () => statusStatement(store.db, perms, undefined).execute(),
      'statement prepared, all  ': () => executePrepared(store.db, statusStatement(store.db, perms, undefined)),
    };
    // 3. Through HTTP, against the floor.
    const http: Record<string, () => Promise<unknown>> = {
      'GET /agents/default/bench-bot/versions': () => call('GET', '/agents/default/bench-bot/versions'),
      'GET /status?agent=default/bench-bot   ': () => call('GET', '/status?agent=default/bench-bot'),
      'GET /status                           ': () => call('GET', '/status'),
    };
    const all = { ...direct, ...http };
    for (const fn of Object.values(all)) for (let i = 0; i < 5; i++) await fn();
    const samples = new Map(Object.keys(all).map((name) => [name, [] as number[]]));
    for (let r = 0; r < ROUNDS; r++) for (const [name, fn] of Object.entries(all)) samples.get(name)!.push(await timed(fn));
    const m = (name: string) => median(samples.get(name)!);
    for (const name of Object.keys(direct)) console.log(`  ${name}  ${fmt(m(name), 2).padStart(6)} ms`);
    const floor = m(Object.keys(http)[0]);
    for (const name of Object.keys(http)) console.log(`  ${name}  ${fmt(m(name), 2).padStart(6)} ms  ${fmt(m(name) / floor, 2)}x the versions list`);
  } finally {
    await svc.close();
  }
}
