import { describe, expect, test } from 'vitest';
import { sql } from 'kysely';
import { MigrateTasksResponse } from '../../src/contract/endpoints.js';
import { engines, useService } from '../support/service.js';
import { writePendingHooks } from '../../src/server/domain/migration-hooks.js';
import { createTask, createTasks, deploy, deployActive, register, type Deployed } from '../support/fixtures.js';

describe.each(engines)('POST /tasks/migrate (%s)', (engine) => {
  const svc = useService(engine);

  const migrate = (body: unknown) => svc.api('POST', '/tasks/migrate', { body });
  const getTask = async (id: string) => (await svc.api('GET', `/tasks/${id}`)).body;
  const getVersion = (id: string) => svc.client().getVersion({ params: { version_id: id } });
  const versionStatus = async (id: string) => (await getVersion(id)).status;
  const setStatus = (taskId: string, status: 'IDLE' | 'COMPLETED') => svc.client().updateTask({ params: { task_id: taskId }, body: { status } });

  /** v1 ACTIVE with `count` RUNNING tasks, then v2 deployed sticky (tasks stay on v1) and ACTIVE. */
  async function twoVersions(count: number): Promise<{ v1: Deployed; v2: Deployed; tasks: any[] }> {
    const v1 = await deployActive(svc);
    const tasks = await createTasks(svc, count);
    const v2 = await deployActive(svc, { are_tasks_sticky: true });
    return { v1, v2, tasks };
  }

  describe('the sixteen combinations of the four fields', () => {
    const fields = ['from_version_id', 'task_ids', 'to_latest', 'to_version_id'] as const;
    const combos = Array.from({ length: 16 }, (_, bits) => fields.filter((_, i) => bits & (1 << i)));
    test.each(combos.map((set) => [set.join(' + ') || '(none)', set] as const))('%s', async (_name, set) => {
      const { v1, v2, tasks } = await twoVersions(2);
      const body: Record<string, unknown> = {};
      if (set.includes('from_version_id')) body.from_version_id = v1.version_id;
      if (set.includes('task_ids')) body.task_ids = [tasks[0].id];
      if (set.includes('to_latest')) body.to_latest = true;
      if (set.includes('to_version_id')) body.to_version_id = v2.version_id;
      const oneSource = set.includes('from_version_id') !== set.includes('task_ids');
      const oneTarget = set.includes('to_latest') !== set.includes('to_version_id');
      const res = await migrate(body);
      if (oneSource && oneTarget) {
        expect(res.status).toBe(200);
        const parsed = MigrateTasksResponse.parse(res.body);
        expect(parsed.to_version.id).toBe(v2.version_id);
        expect(parsed.tasks.length).toBe(set.includes('task_ids') ? 1 : 2);
      } else {
        expect(res.status).toBe(422);
        const locs = res.body.detail.map((d: any) => d.loc.join('.'));
        if (!oneSource) expect(locs).toEqual(expect.arrayContaining(['body.from_version_id', 'body.task_ids']));
        if (!oneTarget) expect(locs).toEqual(expect.arrayContaining(['body.to_version_id', 'body.to_latest']));
        // Nothing moved.
        expect((await getTask(tasks[0].id)).current_version_id).toBe(v1.version_id);
      }
    });
  });

  test('bulk mode moves every RUNNING task of the source and leaves IDLE and finished ones', async () => {
    const v1 = await deployActive(svc);
    const [running1, running2, idle, done] = await createTasks(svc, 4);
    await setStatus(idle.id, 'IDLE');
    await setStatus(done.id, 'COMPLETED');
    const v2 = await deployActive(svc, { are_tasks_sticky: true });

    const res = await migrate({ from_version_id: v1.version_id, to_version_id: v2.version_id });

    expect(res.status).toBe(200);
    expect(res.body.branch_id).toBe(v1.branch_id);
    expect(res.body.from_version_id).toBe(v1.version_id);
    expect(res.body.tasks.map((t: any) => t.id).sort()).toEqual([running1.id, running2.id].sort());
    expect(res.body.tasks.every((t: any) => t.current_version_id === v2.version_id)).toBe(true);
    expect((await getTask(idle.id)).current_version_id).toBe(v1.version_id);
    expect((await getTask(done.id)).current_version_id).toBe(v1.version_id);
  });

  test('created_version_id never changes; current_version_id does', async () => {
    const { v1, v2, tasks } = await twoVersions(1);
    await migrate({ task_ids: [tasks[0].id], to_version_id: v2.version_id });
    const after = await getTask(tasks[0].id);
    expect(after.created_version_id).toBe(v1.version_id);
    expect(after.current_version_id).toBe(v2.version_id);
    expect(after.updated_at > tasks[0].updated_at).toBe(true);
  });

  test('the response is the spec’s shape (branch_id, from_version_id, to_version, tasks) and says whether it was a dry run', async () => {
    const { v1, v2, tasks } = await twoVersions(1);
    const res = await migrate({ from_version_id: v1.version_id, to_latest: true });
    expect(Object.keys(res.body).sort()).toEqual(['branch_id', 'dry_run', 'from_version_id', 'tasks', 'to_version']);
    const parsed = MigrateTasksResponse.parse(res.body);
    expect(parsed.to_version.id).toBe(v2.version_id);
    expect(parsed.tasks[0]).toEqual({ ...(await getTask(tasks[0].id)) });
  });

  test('specific mode has no from_version_id in its response', async () => {
    const { v2, tasks } = await twoVersions(1);
    const res = await migrate({ task_ids: [tasks[0].id], to_version_id: v2.version_id });
    expect(res.status).toBe(200);
    expect('from_version_id' in res.body).toBe(false);
  });

  test('to_latest chooses the newest DEPLOYING version over an older ACTIVE one', async () => {
    const { v1, tasks } = await twoVersions(1);
    const v3 = await deploy(svc, { are_tasks_sticky: true });
    const res = await migrate({ task_ids: [tasks[0].id], to_latest: true });
    expect(res.status).toBe(200);
    expect(res.body.to_version.id).toBe(v3.version_id);
    expect(res.body.to_version.status).toBe('DEPLOYING');
    expect((await getTask(tasks[0].id)).current_version_id).not.toBe(v1.version_id);
  });

  test('to_latest skips a newer FAILED version and chooses the newest ACTIVE one', async () => {
    const { v2, tasks } = await twoVersions(1);
    const v3 = await deploy(svc, { are_tasks_sticky: true });
    await register(svc, v3.version_id, undefined, 'FAILED');
    const res = await migrate({ task_ids: [tasks[0].id], to_latest: true });
    expect(res.body.to_version.id).toBe(v2.version_id);
  });

  test('bulk with to_latest when the source is the latest is a 422', async () => {
    const v1 = await deployActive(svc);
    await createTask(svc);
    const res = await migrate({ from_version_id: v1.version_id, to_latest: true });
    expect(res.status).toBe(422);
    expect(res.body.detail[0].loc).toEqual(['body', 'to_latest']);
  });

  test('from == to is a 422', async () => {
    const v1 = await deployActive(svc);
    const res = await migrate({ from_version_id: v1.version_id, to_version_id: v1.version_id });
    expect(res.status).toBe(422);
    expect(res.body).toEqual({ detail: [{ loc: ['body', 'to_version_id'], msg: 'to_version_id is the same as from_version_id', type: 'value_error' }] });
  });

  test('a target on another branch is refused (422) and nothing moves', async () => {
    const { v1, tasks } = await twoVersions(1);
    const other = await deployActive(svc, { branch: 'feature/login' });
    const res = await migrate({ from_version_id: v1.version_id, to_version_id: other.version_id });
    expect(res.status).toBe(422);
    expect(res.body.detail[0].loc).toEqual(['body', 'to_version_id']);
    expect((await getTask(tasks[0].id)).current_version_id).toBe(v1.version_id);
  });

  test('a target on another agent’s branch is refused (422)', async () => {
    const { tasks } = await twoVersions(1);
    const other = await deployActive(svc, { agent: 'other-bot' });
    const res = await migrate({ task_ids: [tasks[0].id], to_version_id: other.version_id });
    expect(res.status).toBe(422);
  });

  test('tasks on two branches are refused (422)', async () => {
    const main = await deployActive(svc);
    const feature = await deployActive(svc, { branch: 'feature/x' });
    const a = await createTask(svc);
    const b = await createTask(svc, { branch: 'feature/x' });
    const res = await migrate({ task_ids: [a.id, b.id], to_version_id: main.version_id });
    expect(res.status).toBe(422);
    expect(res.body.detail[0].loc).toEqual(['body', 'task_ids']);
    expect(feature.branch_id).not.toBe(main.branch_id);
  });

  test('a terminal task is refused (409) and nothing moves', async () => {
    const { v1, v2, tasks } = await twoVersions(2);
    await svc.client().cancelTask({ params: { task_id: tasks[1].id } });
    const res = await migrate({ task_ids: [tasks[0].id, tasks[1].id], to_version_id: v2.version_id });
    expect(res.status).toBe(409);
    expect(res.body).toEqual({ code: 'task_not_migratable', detail: `Only RUNNING or IDLE tasks can migrate: ${tasks[1].id} (CANCELED)` });
    expect((await getTask(tasks[0].id)).current_version_id).toBe(v1.version_id);
  });

  test('an IDLE task can be migrated in specific mode', async () => {
    const { v2, tasks } = await twoVersions(1);
    await setStatus(tasks[0].id, 'IDLE');
    const res = await migrate({ task_ids: [tasks[0].id], to_version_id: v2.version_id });
    expect(res.status).toBe(200);
    expect(res.body.tasks[0].status).toBe('IDLE');
  });

  test('a target that is not ACTIVE or DEPLOYING is refused (409)', async () => {
    const { v1, tasks } = await twoVersions(1);
    const failed = await deploy(svc, { are_tasks_sticky: true });
    await register(svc, failed.version_id, undefined, 'FAILED');
    const res = await migrate({ task_ids: [tasks[0].id], to_version_id: failed.version_id });
    expect(res.status).toBe(409);
    expect(res.body.code).toBe('target_not_routable');
    expect((await getTask(tasks[0].id)).current_version_id).toBe(v1.version_id);
  });

  test('an unknown task id is a 404 naming the first missing id', async () => {
    const { v2, tasks } = await twoVersions(1);
    const res = await migrate({ task_ids: [tasks[0].id, 'task_missing1', 'task_missing2'], to_version_id: v2.version_id });
    expect(res.status).toBe(404);
    expect(res.body).toEqual({ detail: 'Task task_missing1 was not found', code: 'not_found' });
  });

  test('unknown source and target versions are 404s', async () => {
    const { v1 } = await twoVersions(1);
    expect((await migrate({ from_version_id: 'ver_nope', to_latest: true })).body).toEqual({ detail: 'Version ver_nope was not found', code: 'not_found' });
    expect((await migrate({ from_version_id: v1.version_id, to_version_id: 'ver_nope' })).status).toBe(404);
  });

  test('duplicate task ids are folded', async () => {
    const { v2, tasks } = await twoVersions(1);
    const res = await migrate({ task_ids: [tasks[0].id, tasks[0].id], to_version_id: v2.version_id });
    expect(res.status).toBe(200);
    expect(res.body.tasks).toHaveLength(1);
  });

  test('more than 1000 task ids is a 422', async () => {
    const res = await migrate({ task_ids: Array.from({ length: 1001 }, (_, i) => `task_${i}`), to_latest: true });
    expect(res.status).toBe(422);
    expect(res.body.detail[0].loc).toEqual(['body', 'task_ids']);
  });

  test('an empty task_ids list is a 422', async () => {
    const res = await migrate({ task_ids: [], to_latest: true });
    expect(res.status).toBe(422);
    expect(res.body.detail).toEqual([{ loc: ['body', 'task_ids'], msg: 'task_ids must not be empty', type: 'too_small' }]);
  });

  test('dry_run answers the same and changes nothing', async () => {
    const { v1, v2, tasks } = await twoVersions(3);
    const res = await migrate({ from_version_id: v1.version_id, to_latest: true, dry_run: true });
    expect(res.status).toBe(200);
    expect(res.body.dry_run).toBe(true);
    expect(res.body.tasks).toHaveLength(3);
    expect(res.body.tasks.every((t: any) => t.current_version_id === v2.version_id)).toBe(true);
    for (const t of tasks) expect((await getTask(t.id)).current_version_id).toBe(v1.version_id);
    const events = (await svc.api('GET', `/branches/${v1.branch_id}/events`)).body.events;
    expect(events.filter((e: any) => e.type === 'TASKS_MIGRATED')).toHaveLength(0);
  });

  test('a migration records a TASKS_MIGRATED event with source, target, count and ids', async () => {
    const { v1, v2, tasks } = await twoVersions(2);
    expect((await migrate({ from_version_id: v1.version_id, to_latest: true })).body.dry_run).toBe(false);
    const events = (await svc.api('GET', `/branches/${v1.branch_id}/events`)).body.events;
    const moved = events.filter((e: any) => e.type === 'TASKS_MIGRATED');
    expect(moved).toHaveLength(1);
    expect(moved[0].version_id).toBe(v2.version_id);
    expect(moved[0].data).toMatchObject({ from_version_ids: [v1.version_id], to_version_id: v2.version_id, count: 2, mode: 'bulk' });
    expect([...moved[0].data.task_ids].sort()).toEqual(tasks.map((t) => t.id).sort());
  });

  test('a DRAINING version retires in the same request that moves its last task away', async () => {
    const { v1, tasks } = await twoVersions(2);
    expect(await versionStatus(v1.version_id)).toBe('DRAINING');
    await migrate({ task_ids: [tasks[0].id], to_latest: true });
    expect(await versionStatus(v1.version_id)).toBe('DRAINING');
    await migrate({ task_ids: [tasks[1].id], to_latest: true });
    const v1After = await getVersion(v1.version_id);
    expect(v1After.status).toBe('RETIRED');
    expect(v1After.retired_at).not.toBeNull();
  });

  test('a migration that fails part-way (one unknown id among 1,000) changes nothing', async () => {
    const { v1, v2 } = await twoVersions(0);
    // 999 RUNNING tasks on v1, inserted directly for speed.
    await sql`INSERT INTO filesystems (id, namespace_id) SELECT 'fs_bulk' || g, id FROM generate_series(1, 999) g, namespaces WHERE slug = 'default'`.execute(
      svc.store.db,
    );
    const { rows } = await sql<{ id: string }>`
      INSERT INTO tasks (id, agent_id, branch_id, namespace_id, filesystem_id, status, created_version_id, current_version_id)
      SELECT 'task_bulk' || lpad(g::text, 5, '0'), v.agent_id, v.branch_id, a.namespace_id, 'fs_bulk' || g, 'RUNNING', v.id, v.id
      FROM generate_series(1, 999) g, versions v JOIN agents a ON a.id = v.agent_id
      WHERE v.id = ${v1.version_id} RETURNING id`.execute(svc.store.db);
    const ids = rows.map((r) => r.id);
    ids.splice(500, 0, 'task_unknown');
    expect(ids).toHaveLength(1000);

    const res = await migrate({ task_ids: ids, to_version_id: v2.version_id });

    expect(res.status).toBe(404);
    expect(res.body.detail).toBe('Task task_unknown was not found');
    const counts = await sql<{ v: string; n: number }>`SELECT current_version_id AS v, count(*)::int AS n FROM tasks GROUP BY 1`.execute(svc.store.db);
    expect(counts.rows).toEqual([{ v: v1.version_id, n: 999 }]);
  });

  test('two overlapping bulk migrations and a deploy: every task ends on exactly one version, responses agree with the database', async () => {
    const { v1, v2 } = await twoVersions(30);
    const [a, b, d] = await Promise.all([
      migrate({ from_version_id: v1.version_id, to_version_id: v2.version_id }),
      migrate({ from_version_id: v1.version_id, to_latest: true }),
      deploy(svc, { are_tasks_sticky: false }),
    ]);
    expect(a.status).toBe(200);
    // The second finds v1 emptied by the first (moving nothing) or runs first itself.
    expect(b.status).toBe(200);
    const rows = await sql<{ id: string; current_version_id: string }>`SELECT id, current_version_id FROM tasks`.execute(svc.store.db);
    expect(rows.rows).toHaveLength(30);
    const byId = new Map(rows.rows.map((r) => [r.id, r.current_version_id]));
    // Every task moved exactly once off v1, and nothing is left there.
    expect(rows.rows.filter((r) => r.current_version_id === v1.version_id)).toHaveLength(0);
    const movedByA = a.body.tasks.length;
    const movedByB = b.body.tasks.length;
    expect(movedByA + movedByB).toBe(30);
    // Each response's tasks are where the database says, unless the deploy moved them on afterwards.
    for (const t of [...a.body.tasks, ...b.body.tasks]) {
      expect([t.current_version_id, d.version_id]).toContain(byId.get(t.id));
    }
    expect(new Set(rows.rows.map((r) => r.current_version_id)).size).toBeLessThanOrEqual(2);
  });

  test("a move to a version with onMigrate notes each hook in its task's queue: a later event waits behind it; a second move writes the first in its place, the dispatcher the second", async () => {
    const { v1, v2, tasks } = await twoVersions(1);
    const taskId = tasks[0].id;
    const declare = (versionId: string) => sql`UPDATE versions SET handlers = '["onEvent", "onMigrate"]'::jsonb WHERE id = ${versionId}`.execute(svc.store.db);
    const queue = async () =>
      (
        await sql<{ method: string; migration: { from_version_id: string; to_version_id: string } | null }>`
          SELECT method, payload->'migration' AS migration FROM deliveries WHERE task_id = ${taskId} ORDER BY id`.execute(svc.store.db)
      ).rows.map((d) => (d.migration ? `${d.method} ${d.migration.from_version_id} -> ${d.migration.to_version_id}` : d.method));
    await declare(v2.version_id);

    expect((await migrate({ task_ids: [taskId], to_version_id: v2.version_id })).status).toBe(200);
    // Noted on the task's row, not written yet (no dispatcher runs here), and queued all the same.
    expect(await queue()).toEqual(['task/create']);
    expect((await svc.api('GET', `/tasks/${taskId}/turn`)).body).toMatchObject({ busy: true, running_delivery_id: null, queued: 2 });
    await svc.client().createEvent({ params: { task_id: taskId }, body: { content: 'after the move' } });

    const v3 = await deployActive(svc, { are_tasks_sticky: true });
    await declare(v3.version_id);
    expect((await migrate({ task_ids: [taskId], to_version_id: v3.version_id })).status).toBe(200);
    // The second move wrote the first hook, still pending, in its place: before the event sent after it.
    expect(await queue()).toEqual(['task/create', `task/migrate ${v1.version_id} -> ${v2.version_id}`, 'event/send']);

    // The dispatcher writes the second in its place; each move's hooks once.
    expect(await writePendingHooks(svc.store.db)).toBe(1);
    expect(await writePendingHooks(svc.store.db)).toBe(1);
    expect(await writePendingHooks(svc.store.db)).toBe(0);
    expect(await queue()).toEqual([
      'task/create',
      `task/migrate ${v1.version_id} -> ${v2.version_id}`,
      'event/send',
      `task/migrate ${v2.version_id} -> ${v3.version_id}`,
    ]);
  });
});
