import { mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { sql } from 'kysely';
import { describe, expect, test } from 'vitest';
import { openDatabase } from '../../src/server/store/db.js';
import { isAlive, processesUnder, until, useE2e } from '../support/e2e.js';
import { engines } from '../support/service.js';

const TASKS = 6;
/** How long a step (its hooks, a restart) may take on a loaded machine. */
const STEP_MS = 120_000;

// The agent of this test: FLAVOR picks the version. v1 has no onMigrate; v2's onMigrate says it
// started (a file in HOLD_DIR) and waits for HOLD_DIR/release before it upgrades the state, so a
// step can be caught with its hooks in flight; v3's upgrades at once. Each upgrade counts itself in
// the state, so a hook that ran twice shows.
const AGENT = `import { existsSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { AgentServer, type AgentHandlers } from 'agentctl/adk';

const flavor = process.env.FLAVOR ?? 'v1';
const hold = process.env.HOLD_DIR ?? '';
const handlers: AgentHandlers = {
  async onCreate(ctx) {
    await ctx.state.update({ schema: 1, upgrades: [] });
    await ctx.messages.send('ready');
  },
  async onEvent(ctx) {
    await ctx.messages.send(flavor);
  },
};
if (flavor !== 'v1') {
  handlers.onMigrate = async (ctx, { from, to }) => {
    if (flavor === 'v2') {
      writeFileSync(path.join(hold, 'hook-' + ctx.task.id + '-' + process.pid + '-' + Date.now()), '');
      while (!existsSync(path.join(hold, 'release'))) await new Promise((r) => setTimeout(r, 50));
    }
    const state = ((await ctx.state.get())?.state ?? { upgrades: [] }) as { upgrades: string[] };
    await ctx.state.update({ schema: to.number, upgrades: [...state.upgrades, 'v' + from.number + '->v' + to.number] });
  };
}
await new AgentServer(handlers).listen();
`;

// "A server killed mid-step resumes the step without moving any task twice or losing one" (issue 22):
// a real `agentctl server start` is SIGKILLed in the middle of a rollout step, started again on the
// same data, and the rollout finishes with every task moved exactly once: one migration record per
// task and step, one task/migrate delivery per move, one state upgrade per task.
describe.each(engines)('e2e on %s: a server killed mid-step resumes the rollout', (engine) => {
  const e2e = useE2e(engine, {
    scratch: 'agentctl-e2e-rollout-crash',
    project: 'bot',
    prepare: () => {
      mkdirSync(holdDir);
      writeFileSync(path.join(e2e.projectDir, 'src', 'index.ts'), AGENT);
    },
  });
  const { agentctl, json } = e2e;
  const holdDir = path.join(e2e.dir, 'hold');
  /** SIGKILL: no shutdown of any kind; its agents end by their lifeline (or here, once it is plain they outlived it). */
  async function killServer() {
    const serverPid = e2e.server.pid;
    const agents = processesUnder(e2e.dir).filter((pid) => pid !== serverPid);
    process.kill(serverPid, 'SIGKILL');
    await until(
      'the server gone',
      async () => isAlive(serverPid),
      (alive) => !alive,
      10_000,
    );
    await until(
      'its agents gone',
      async () => agents.filter(isAlive),
      (left) => left.length === 0,
      30_000,
    );
  }
  async function deployFlavor(flavor: string) {
    const file = path.join(e2e.projectDir, 'agentctl.json');
    writeFileSync(file, `${JSON.stringify({ ...JSON.parse(readFileSync(file, 'utf8')), env: { FLAVOR: flavor, HOLD_DIR: holdDir } }, null, 2)}\n`);
    await e2e.git(['commit', '-q', '-am', flavor]);
    return json(['deploy', '--sticky']);
  }
  /** The rollout's step records, and every task each moved. */
  async function movesOf(rolloutId: string) {
    const records = (await json(['migrations', 'list', '--rollout', rolloutId])).migrations;
    const full = await Promise.all(records.map((m: { id: string }) => json(['migrations', 'get', m.id])));
    return {
      kinds: full.map((m) => [m.kind, m.step, m.count]),
      tasks: full.flatMap((m) => m.moves.map((move: { task_id: string }) => move.task_id)).sort(),
    };
  }
  /** task/migrate deliveries per task to `versionId`, read from the database itself (the server stopped). */
  async function hookDeliveries(versionId: string): Promise<Record<string, number>> {
    const databaseUrl = e2e.env().DATABASE_URL;
    const store = await openDatabase(databaseUrl ? { databaseUrl } : { dataDir: path.join(e2e.dataDir, 'pglite') });
    try {
      const rows = await sql<{ task_id: string; n: number }>`
        SELECT task_id, count(*)::int AS n FROM deliveries
        WHERE method = 'task/migrate' AND payload->'migration'->>'to_version_id' = ${versionId} GROUP BY task_id`.execute(store.db);
      return Object.fromEntries(rows.rows.map((r) => [r.task_id, r.n]));
    } finally {
      await store.close();
    }
  }
  const upgradesOf = async (taskId: string) => (await json(['states', 'list', '--task', taskId])).states[0].state.upgrades;

  test('killed while the step’s onMigrate hooks run: after a restart every task moved once and upgraded once', { timeout: 400_000 }, async () => {
    const v1 = await deployFlavor('v1');
    expect(v1).toMatchObject({ status: 'ACTIVE', number: 1 });
    const ids: string[] = [];
    for (let i = 0; i < TASKS; i++) ids.push((await json(['tasks', 'create', '--name', `t${i}`])).id);
    const v2 = await deployFlavor('v2');
    expect(v2).toMatchObject({ status: 'ACTIVE', number: 2 });

    const rollout = await json(['tasks', 'migrate', '--from', 'v1', '--to', 'v2', '--steps', '50,100', '--watch', '3s', '--yes']);
    // The step has moved its tasks and v2's onMigrate is running on one of them: kill the server there.
    await until(
      'an onMigrate hook in flight',
      async () => readdirSync(holdDir).filter((f) => f.startsWith('hook-')),
      (hooks) => hooks.length > 0,
      STEP_MS,
    );
    await killServer();
    const inFlight = readdirSync(holdDir).filter((f) => f.startsWith('hook-')).length;
    expect(inFlight).toBeGreaterThan(0);

    await e2e.startServer();
    writeFileSync(path.join(holdDir, 'release'), '');
    const done = await until(
      'the rollout finished',
      () => json(['rollouts', 'get', rollout.id]),
      (r) => r.status !== 'RUNNING',
      STEP_MS,
    );
    expect(done, done.reason).toMatchObject({ status: 'SUCCEEDED', step: 2, percent: 100 });
    expect(done.report.map((s: { step: number; moved: number; decision: string }) => [s.step, s.moved, s.decision])).toEqual([
      [1, 3, 'passed'],
      [2, 3, 'passed'],
    ]);
    const moves = await movesOf(rollout.id);
    expect(moves.kinds).toEqual([
      ['rollout_step', 2, 3],
      ['rollout_step', 1, 3],
    ]);
    expect(moves.tasks).toEqual([...ids].sort());
    for (const id of ids) expect((await json(['tasks', 'get', id])).current_version_id).toBe(v2.id);
    // Each task's state was upgraded exactly once, the interrupted hooks included.
    await until(
      'every task upgraded',
      () => Promise.all(ids.map(upgradesOf)),
      (all) => all.every((u) => u.length > 0),
      STEP_MS,
    );
    expect(await Promise.all(ids.map(upgradesOf))).toEqual(ids.map(() => ['v1->v2']));

    await agentctl(['server', 'stop']);
    expect(await hookDeliveries(v2.id)).toEqual(Object.fromEntries(ids.map((id) => [id, 1])));
    await e2e.startServer();
  });
});
