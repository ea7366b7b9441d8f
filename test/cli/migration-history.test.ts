import path from 'node:path';
import { describe, expect, test } from 'vitest';
import { engines } from '../support/service.js';
import { createTasks, deployActive } from '../support/fixtures.js';
import { runCli, useCliService } from './support.js';
import { advanceRollouts } from '../../src/server/domain/rollouts.js';

// `migrations list` and `rollouts list` page like every other list, and an empty one says how to fill it.
describe.each(engines)('agentctl migrations and rollouts lists (%s)', (engine) => {
  const { svc, env } = useCliService(engine, (dir) => path.join(dir, 'config'));

  /** Three migrations of one task each from v1 to v2 (the newest first in the list). */
  async function threeMigrations(): Promise<string[]> {
    await deployActive(svc, { agent: 'default/bot' });
    const tasks = await createTasks(svc, 3, { agent_name: 'default/bot' });
    const v2 = await deployActive(svc, { agent: 'default/bot', are_tasks_sticky: true });
    for (const task of tasks) {
      const moved = await svc.api('POST', '/tasks/migrate', { body: { task_ids: [task.id], to_version_id: v2.version_id } });
      expect(moved.status).toBe(200);
    }
    const all = await svc.api('GET', '/migrations');
    return all.body.migrations.map((m: { id: string }) => m.id);
  }

  test('an empty migrations list says how to move tasks; --json is an empty page', async () => {
    const tty = await runCli(['migrations', 'list'], { env, tty: true });
    expect(tty.code).toBe(0);
    expect(tty.stdout).toBe('');
    expect(tty.stderr).toBe('No migrations yet. Move tasks with: agentctl tasks migrate --from v1 --to-latest (add --steps 10,50,100 for a rollout)\n');
    const json = await runCli(['migrations', 'list', '--json'], { env });
    expect(json.code).toBe(0);
    expect(json.json()).toEqual({ migrations: [], total: 0 });
  });

  test('an empty rollouts list says how to start one; --json is an empty page', async () => {
    const tty = await runCli(['rollouts', 'list'], { env, tty: true });
    expect(tty.code).toBe(0);
    expect(tty.stdout).toBe('');
    expect(tty.stderr).toBe('No rollouts yet. Start one with: agentctl tasks migrate --from v1 --to-latest --steps 10,50,100\n');
    const json = await runCli(['rollouts', 'list', '--json'], { env });
    expect(json.json()).toEqual({ rollouts: [], total: 0 });
  });

  test('GET /migrations pages with limit and page_number and counts the whole list', async () => {
    const ids = await threeMigrations();
    expect(ids).toHaveLength(3);
    const second = await svc.api('GET', '/migrations?limit=1&page_number=2');
    expect(second.status).toBe(200);
    expect(second.body.total).toBe(3);
    expect(second.body.migrations.map((m: { id: string }) => m.id)).toEqual([ids[1]]);
    const past = await svc.api('GET', '/migrations?limit=2&page_number=3');
    expect(past.body).toEqual({ migrations: [], total: 3 });
  });

  test('migrations list --limit says what was cut on a terminal; --all --json has every record', async () => {
    const ids = await threeMigrations();
    const cut = await runCli(['migrations', 'list', '--limit', '2'], { env, tty: true });
    expect(cut.code).toBe(0);
    expect(cut.stderr).toBe('showing 2 of 3; --page 2 or --all\n');
    const all = await runCli(['migrations', 'list', '--limit', '2', '--all', '--json'], { env });
    expect(all.code).toBe(0);
    expect(all.json().total).toBe(3);
    expect(all.json().migrations.map((m: { id: string }) => m.id)).toEqual(ids);
  });

  test('GET /rollouts pages with limit and page_number', async () => {
    const v1 = await deployActive(svc, { agent: 'default/bot' });
    await createTasks(svc, 2, { agent_name: 'default/bot' });
    await deployActive(svc, { agent: 'default/bot', are_tasks_sticky: true });
    const started = await svc.api('POST', '/rollouts', { body: { from_version_id: v1.version_id, to_latest: true, steps: [50, 100], watch: '1m' } });
    expect(started.status).toBe(201);
    const page = await svc.api('GET', '/rollouts?limit=1&page_number=1');
    expect(page.body.total).toBe(1);
    expect(page.body.rollouts.map((r: { id: string }) => r.id)).toEqual([started.body.id]);
    expect((await svc.api('GET', '/rollouts?limit=1&page_number=2')).body).toEqual({ rollouts: [], total: 1 });
    const cli = await runCli(['rollouts', 'list', '--limit', '1', '--page', '2', '--json'], { env });
    expect(cli.stderr).toBe('');
    expect(cli.json()).toEqual({ rollouts: [], total: 1 });
  });

  test('rollouts get names each moved task whose onMigrate failed, with its error', async () => {
    const v1 = await deployActive(svc, { agent: 'default/bot' });
    const [task] = await createTasks(svc, 1, { agent_name: 'default/bot' });
    const v2 = await deployActive(svc, { agent: 'default/bot', are_tasks_sticky: true });
    // As an ADK agent declares at registration: v2 has an onMigrate, so the step enqueues task/migrate.
    await svc.store.db
      .updateTable('versions')
      .set({ handlers: JSON.stringify(['onCreate', 'onEvent', 'onMigrate']) })
      .where('id', '=', v2.version_id)
      .execute();
    const created = await svc.api('POST', '/rollouts', { body: { from_version_id: v1.version_id, to_latest: true, steps: [100], watch: '5m' } });
    expect(created.status).toBe(201);
    await advanceRollouts(svc.store.db);
    // The agent's onMigrate threw, and it says so as the ADK does.
    const reported = await svc.api('POST', `/tasks/${task.id}/handler-errors`, {
      body: { handler: 'onMigrate', message: 'cannot read the state of v1', event_id: null },
    });
    expect(reported.status).toBe(201);

    const got = await runCli(['rollouts', 'get', created.body.id], { env });
    expect(got.code).toBe(0);
    const lines = got.stdout.split('\n');
    // Not dispatched here (no dispatcher runs), so no deliveries yet: the failed hook alone makes the rate.
    expect(lines.filter((l) => l.startsWith('Step 1'))).toEqual([
      'Step 1\tstep 1/1 (100%): moved 1 — WATCHING; v2 100% errors: 0 handler errors, 0 failed deliveries, 1 failed onMigrate in 0 deliveries (0 tasks); v1 0% errors: 0 handler errors, 0 failed deliveries in 0 deliveries (1 tasks)',
      `Step 1 onMigrate\tonMigrate failed on ${task.id} (moved back): cannot read the state of v1`,
    ]);
  });
});
