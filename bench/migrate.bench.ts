// Bulk migration through `POST /tasks/migrate` against the bare `UPDATE ... RETURNING` on the same
// database, in the same run: rows per second of each and their ratio (target on PostgreSQL: >= 0.8,
// issue 20); the same migration to a version whose agent declared onMigrate (each moved task also
// gets its onMigrate hook, noted on its row by the move's statement), against the same floor; the
// dispatcher's writing of those hooks as `task/migrate` deliveries after the commit is timed apart.
// Then a rollout step (domain/rollouts.ts: the step's move, its migration record and the rollout's
// advance in one transaction) against the bare `UPDATE` of the same rows (target: >= 0.8), and the same step to a
// target that declared onMigrate (its hooks noted in the step's transaction).
import { sql } from 'kysely';
import type { Engine } from '../src/server/store/db.js';
import { advanceRollouts } from '../src/server/domain/rollouts.js';
import { writePendingHooks } from '../src/server/domain/migration-hooks.js';
import { BENCH_DEPLOY, benchEngines, benchService, fmt, median, timed } from './support.js';

// 10,000 is the most one request moves (MIGRATION_MAX_TASKS).
const SIZES = (process.env.BENCH_MIGRATE_SIZES ?? '1000,10000').split(',').map(Number);
const RUNS = Number(process.env.BENCH_RUNS ?? 5);

async function benchEngine(engine: Engine) {
  // One request at a time: one socket.
  const { store, call, callText, close } = await benchService(engine, { connections: 1 });
  const deployBody = (hash: string) => ({ ...BENCH_DEPLOY, git_hash: hash, are_tasks_sticky: true });
  const v1 = (await call('POST', '/agents/deploy', deployBody('a1a1a1a1'))).version_id as string;
  await call('POST', '/versions/register', { version_id: v1 });
  const v2 = (await call('POST', '/agents/deploy', deployBody('b2b2b2b2'))).version_id as string;
  await call('POST', '/versions/register', { version_id: v2 });

  try {
    for (const size of SIZES) {
      await sql`DELETE FROM tasks`.execute(store.db);
      await sql`DELETE FROM filesystems`.execute(store.db);
      await sql`INSERT INTO filesystems (id, namespace_id) SELECT 'fs_b' || g, id FROM generate_series(1, ${size}) g, namespaces WHERE slug = 'default'`.execute(
        store.db,
      );
      await sql`
        INSERT INTO tasks (id, agent_id, branch_id, namespace_id, filesystem_id, status, params, created_version_id, current_version_id)
        SELECT 'task_b' || lpad(g::text, 7, '0'), v.agent_id, v.branch_id, a.namespace_id, 'fs_b' || g, 'RUNNING', '{"step": 1}'::jsonb, v.id, v.id
        FROM generate_series(1, ${size}) g, versions v JOIN agents a ON a.id = v.agent_id WHERE v.id = ${v1}`.execute(store.db);
      if (engine === 'postgres') await sql`VACUUM ANALYZE tasks`.execute(store.db);
      const reset = () => sql`UPDATE tasks SET current_version_id = ${v1}`.execute(store.db);
      // As with live tasks, the source is DRAINING while they move (it had none when v2 came, so it retired):
      // the migration then also settles it (retired once empty, held while onMigrate hooks are open).
      const draining = () => sql`UPDATE versions SET status = 'DRAINING', retired_at = NULL WHERE id = ${v1}`.execute(store.db);

      const service: number[] = [];
      const hooked: number[] = [];
      const bare: number[] = [];
      const declare = (handlers: string[] | null) =>
        sql`UPDATE versions SET handlers = ${handlers ? JSON.stringify(handlers) : null}::jsonb WHERE id = ${v2}`.execute(store.db);
      // After a hooked move: its hooks as the dispatcher writes them (timed apart), one task/migrate delivery per moved task.
      const written: number[] = [];
      const writeHooks = async (what: string) => {
        written.push(await timed(async () => await writePendingHooks(store.db)));
        const hooks = await sql<{ n: number }>`SELECT count(*)::int AS n FROM deliveries WHERE method = 'task/migrate'`.execute(store.db);
        if (hooks.rows[0].n !== size) throw new Error(`${what}: ${hooks.rows[0].n} hooks`);
      };
      for (let run = 0; run < RUNS; run++) {
        await reset();
        bare.push(
          await timed(async () => {
            const result =
              await sql`UPDATE tasks SET current_version_id = ${v2}, updated_at = now() WHERE current_version_id = ${v1} AND status = 'RUNNING' RETURNING *`.execute(
                store.db,
              );
            if (result.rows.length !== size) throw new Error(`bare moved ${result.rows.length}`);
          }),
        );
        await reset();
        await draining();
        let text = '';
        // Timed: the request until its whole body has arrived (parsing it is the client's business).
        service.push(await timed(async () => (text = await callText('POST', '/tasks/migrate', { from_version_id: v1, to_version_id: v2 }))));
        const moved = JSON.parse(text).tasks.length;
        if (moved !== size) throw new Error(`service moved ${moved}`);
        // The target declares onMigrate: a task/migrate delivery per moved task.
        await reset();
        await draining();
        await declare(['onEvent', 'onMigrate']);
        hooked.push(await timed(async () => (text = await callText('POST', '/tasks/migrate', { from_version_id: v1, to_version_id: v2 }))));
        if (JSON.parse(text).tasks.length !== size) throw new Error(`hooked moved ${JSON.parse(text).tasks.length}`);
        await writeHooks('hooked migrate');
        await declare(null);
        await sql`DELETE FROM deliveries`.execute(store.db);
      }
      // A rollout step moving every task (steps [100]) against the bare UPDATE of the same rows.
      const step: number[] = [];
      const hookedStep: number[] = [];
      const bareStep: number[] = [];
      const rolloutStep = async (hooks: boolean) => {
        await reset();
        await sql`DELETE FROM migrations`.execute(store.db);
        await sql`DELETE FROM rollouts`.execute(store.db);
        await draining();
        if (hooks) await declare(['onEvent', 'onMigrate']);
        await call('POST', '/rollouts', { from_version_id: v1, to_version_id: v2, steps: [100], watch: '1h' });
        const ms = await timed(() => advanceRollouts(store.db));
        const moved = await sql<{ n: number }>`SELECT count(*)::int AS n FROM tasks WHERE current_version_id = ${v2}`.execute(store.db);
        if (moved.rows[0].n !== size) throw new Error(`rollout step moved ${moved.rows[0].n}`);
        if (hooks) await writeHooks('hooked rollout step');
        await declare(null);
        await sql`DELETE FROM deliveries`.execute(store.db);
        return ms;
      };
      for (let run = 0; run < RUNS; run++) {
        await reset();
        bareStep.push(
          await timed(async () => {
            const result =
              await sql`UPDATE tasks SET current_version_id = ${v2}, updated_at = now() WHERE current_version_id = ${v1} AND status = 'RUNNING'`.execute(
                store.db,
              );
            if (Number(result.numAffectedRows) !== size) throw new Error(`bare step moved ${result.numAffectedRows}`);
          }),
        );
        step.push(await rolloutStep(false));
        // The target declares onMigrate: the step also enqueues a task/migrate delivery per moved task.
        hookedStep.push(await rolloutStep(true));
      }
      const stepRate = size / (median(step) / 1000);
      const bareStepRate = size / (median(bareStep) / 1000);
      console.log(
        `${engine.padEnd(8)} ${fmt(size).padStart(7)} tasks: rollout step ${fmt(stepRate).padStart(9)} rows/s (${fmt(median(step))} ms)` +
          ` | bare UPDATE ${fmt(bareStepRate).padStart(9)} rows/s (${fmt(median(bareStep))} ms)` +
          ` | ratio ${fmt(stepRate / bareStepRate, 2)} (target >= 0.8)`,
      );
      const hookedStepRate = size / (median(hookedStep) / 1000);
      console.log(
        `${engine.padEnd(8)} ${fmt(size).padStart(7)} tasks: rollout step, target declares onMigrate ${fmt(hookedStepRate).padStart(9)} rows/s (${fmt(median(hookedStep))} ms)` +
          ` | ratio to the bare UPDATE ${fmt(hookedStepRate / bareStepRate, 2)} (target >= 0.8)`,
      );
      await sql`DELETE FROM migrations`.execute(store.db);
      await sql`DELETE FROM rollouts`.execute(store.db);
      console.log(
        `${engine.padEnd(8)} ${fmt(size).padStart(7)} tasks: after a hooked move, the dispatcher writes its hooks as deliveries in ${fmt(median(written))} ms (after the commit, not in the move)`,
      );

      const bareRate = size / (median(bare) / 1000);
      const serviceRate = size / (median(service) / 1000);
      console.log(
        `${engine.padEnd(8)} ${fmt(size).padStart(7)} tasks: POST /tasks/migrate ${fmt(serviceRate).padStart(9)} rows/s (${fmt(median(service))} ms)` +
          ` | bare UPDATE ... RETURNING ${fmt(bareRate).padStart(9)} rows/s (${fmt(median(bare))} ms)` +
          ` | ratio ${fmt(serviceRate / bareRate, 2)} (target >= 0.8)`,
      );
      const hookedRate = size / (median(hooked) / 1000);
      console.log(
        `${engine.padEnd(8)} ${fmt(size).padStart(7)} tasks: POST /tasks/migrate, target declares onMigrate ${fmt(hookedRate).padStart(9)} rows/s (${fmt(median(hooked))} ms)` +
          ` | ratio to the bare UPDATE ... RETURNING ${fmt(hookedRate / bareRate, 2)}`,
      );
    }
  } finally {
    await close();
  }
}

for (const engine of await benchEngines()) await benchEngine(engine);
