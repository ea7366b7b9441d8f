import { describe, expect, test } from 'vitest';
import { unrestricted } from '../../src/server/auth/policy.js';
import { recordRuntimeHappening } from '../../src/server/domain/lifecycle.js';
import { advanceRollouts } from '../../src/server/domain/rollouts.js';
import { engines, useService } from '../support/service.js';
import { createTask, createTasks, deployActive, type Deployed } from '../support/fixtures.js';
import { expectError } from '../support/bad-input.js';

describe.each(engines)('rollouts and the migration history (%s)', (engine) => {
  const svc = useService(engine);

  const api: typeof svc.api = (...args) => svc.api(...args);
  const getTask = async (id: string) => (await api('GET', `/tasks/${id}`)).body;
  const versionStatus = async (id: string) => (await api('GET', `/versions/${id}`)).body.status;
  const onVersion = async (ids: string[], versionId: string) => (await Promise.all(ids.map(getTask))).filter((t) => t.current_version_id === versionId).length;
  const rollout = async (id: string) => (await api('GET', `/rollouts/${id}`)).body;
  /** One reconciler pass at the instant `at` (the windows are judged against it). */
  const pass = (at: number) => advanceRollouts(svc.store.db, new Date(at));
  const later = (r: { step_started_at: string; watch_ms: number }) => new Date(r.step_started_at).getTime() + r.watch_ms + 1;

  /** v1 ACTIVE with `count` RUNNING tasks, then v2 deployed sticky (the tasks stay on v1, now DRAINING) and ACTIVE. */
  async function twoVersions(count: number): Promise<{ v1: Deployed; v2: Deployed; ids: string[] }> {
    const v1 = await deployActive(svc);
    const tasks = await createTasks(svc, count);
    const v2 = await deployActive(svc, { are_tasks_sticky: true });
    return { v1, v2, ids: tasks.map((t) => t.id) };
  }

  const start = async (v1: Deployed, body: Record<string, unknown> = {}) => {
    const res = await api('POST', '/rollouts', { body: { from_version_id: v1.version_id, to_latest: true, steps: [10, 50, 100], watch: '1s', ...body } });
    expect(res.status).toBe(201);
    return res.body;
  };

  describe('history', () => {
    test('tasks migrate is a record with exactly the tasks it moved, and undo moves exactly those back', async () => {
      const { v1, v2, ids } = await twoVersions(3);
      const moved = await api('POST', '/tasks/migrate', { body: { task_ids: [ids[0], ids[1]], to_version_id: v2.version_id } });
      expect(moved.status).toBe(200);

      const list = await api('GET', `/migrations?agent_id=${v1.agent_id}`);
      expect(list.status).toBe(200);
      expect(list.body.total).toBe(1);
      const [record] = list.body.migrations;
      expect(record).toMatchObject({ kind: 'migrate', from_version_ids: [v1.version_id], to_version_id: v2.version_id, count: 2, undone_by_id: null });
      expect(record.moves).toBeUndefined();
      const got = await api('GET', `/migrations/${record.id}`);
      expect(got.body.moves).toEqual([ids[0], ids[1]].sort().map((task_id) => ({ task_id, from_version_id: v1.version_id })));

      const undo = await api('POST', `/migrations/${record.id}/undo`);
      expect(undo.status).toBe(200);
      expect(undo.body).toMatchObject({ kind: 'undo', undoes_id: record.id, from_version_ids: [v2.version_id], to_version_id: v1.version_id, count: 2 });
      expect(await onVersion(ids, v1.version_id)).toBe(3);
      expect((await api('GET', `/migrations/${record.id}`)).body.undone_by_id).toBe(undo.body.id);

      expectError(
        await api('POST', `/migrations/${record.id}/undo`),
        409,
        'migration_moved_on',
        `Migration ${record.id} was undone already (by ${undo.body.id})`,
      );
    });

    test('undo is refused, with the reason, once the tasks moved on', async () => {
      const { v2, ids } = await twoVersions(3);
      const first = (await api('POST', '/tasks/migrate', { body: { task_ids: [ids[0]], to_version_id: v2.version_id } })).body;
      expect(first.tasks).toHaveLength(1);
      const [record] = (await api('GET', '/migrations')).body.migrations;
      await svc.client().updateTask({ params: { task_id: ids[0] }, body: { status: 'COMPLETED' } });
      const res = await api('POST', `/migrations/${record.id}/undo`);
      expectError(res, 409, 'migration_moved_on', `The tasks of migration ${record.id} have moved on since, so it cannot be undone: ${ids[0]} is COMPLETED`);
      expect((await getTask(ids[0])).current_version_id).toBe(v2.version_id);
    });

    test('an unknown migration is 404', async () => {
      expectError(await api('GET', '/migrations/mig_nope'), 404, 'not_found', 'Migration mig_nope was not found');
      expectError(await api('POST', '/migrations/mig_nope/undo'), 404, 'not_found', 'Migration mig_nope was not found');
    });
  });

  describe('rollouts', () => {
    test('a good target rolls out step by step to 100%, new tasks follow the ramp, and the source retires', async () => {
      const { v1, v2, ids } = await twoVersions(10);
      const created = await start(v1);
      expect(created).toMatchObject({ status: 'RUNNING', step: 0, percent: 0, steps: [10, 50, 100], watch_ms: 1000, max_error_rate_percent: 2 });

      // Two passes at once (two replicas, or a restart racing the old pass): the step moves its tasks once.
      await Promise.all([pass(Date.now()), pass(Date.now())]);
      let r = await rollout(created.id);
      expect(r).toMatchObject({ step: 1, percent: 10 });
      expect(r.report).toHaveLength(1);
      expect(r.report[0]).toMatchObject({ step: 1, percent: 10, moved: 1, decision: 'watching' });
      expect(await onVersion(ids, v2.version_id)).toBe(1);
      expect(await versionStatus(v1.version_id)).toBe('DRAINING');

      // Within the window nothing more happens.
      await pass(new Date(r.step_started_at).getTime() + 10);
      expect((await rollout(created.id)).step).toBe(1);

      await pass(later(r));
      r = await rollout(created.id);
      expect(r).toMatchObject({ step: 2, percent: 50 });
      expect(r.report[0]).toMatchObject({ decision: 'passed', target: { version_id: v2.version_id, tasks: 1, handler_errors: 0, error_rate_percent: 0 } });
      expect(r.report[1]).toMatchObject({ moved: 4, decision: 'watching' });
      expect(await onVersion(ids, v2.version_id)).toBe(5);

      // New tasks of the branch: half of them to v2 at 50%.
      const fresh = await createTasks(svc, 4);
      expect(fresh.filter((t) => t.current_version_id === v2.version_id)).toHaveLength(2);
      r = await rollout(created.id);
      expect(r).toMatchObject({ new_tasks: 4, new_tasks_to_target: 2 });

      await pass(later(r));
      r = await rollout(created.id);
      expect(r).toMatchObject({ step: 3, percent: 100 });
      expect(r.report[2].moved).toBe(7);
      expect(await onVersion([...ids, ...fresh.map((t) => t.id)], v2.version_id)).toBe(14);
      // Held by the rollout while its last step is watched.
      expect(await versionStatus(v1.version_id)).toBe('DRAINING');

      await pass(later(r));
      r = await rollout(created.id);
      expect(r.status).toBe('SUCCEEDED');
      expect(r.reason).toBe('every task moved to v2; each step stayed within 2%');
      expect(await versionStatus(v1.version_id)).toBe('RETIRED');

      const steps = (await api('GET', `/migrations?rollout_id=${created.id}`)).body.migrations;
      expect(steps.map((m: any) => [m.kind, m.step, m.count])).toEqual([
        ['rollout_step', 3, 7],
        ['rollout_step', 2, 4],
        ['rollout_step', 1, 1],
      ]);
    });

    test('handler errors on the moved tasks past the threshold move them back and stop, saying why', async () => {
      const { v1, v2, ids } = await twoVersions(10);
      const created = await start(v1, { steps: [20, 100], watch: '5m' });
      await pass(Date.now());
      const movedIds = (await api('GET', `/migrations?rollout_id=${created.id}`)).body.migrations[0];
      const moved = (await api('GET', `/migrations/${movedIds.id}`)).body.moves.map((m: any) => m.task_id);
      expect(moved).toHaveLength(2);
      for (const taskId of moved) {
        const res = await api('POST', `/tasks/${taskId}/handler-errors`, { body: { handler: 'onEvent', message: 'boom on refund', event_id: null } });
        expect(res.status).toBe(201);
      }
      // Past the threshold: reverted at once, before the 5-minute window ends.
      await pass(Date.now());
      const r = await rollout(created.id);
      expect(r.status).toBe('REVERTED');
      expect(r.reason).toBe(
        "step 1 (20%): the moved tasks' error rate 100% (2 handler errors and 0 failed deliveries in 0 deliveries) exceeds the source's 0% by more than 2%; 2 tasks moved back to v1",
      );
      expect(r.report[0]).toMatchObject({ decision: 'failed', target: { handler_errors: 2 }, source: { handler_errors: 0 } });
      expect(await onVersion(ids, v1.version_id)).toBe(10);
      expect(await versionStatus(v1.version_id)).toBe('DRAINING');
      const history = (await api('GET', `/migrations?rollout_id=${created.id}`)).body.migrations;
      expect(history.map((m: any) => [m.kind, m.count, m.to_version_id])).toEqual([
        ['revert', 2, v1.version_id],
        ['rollout_step', 2, v2.version_id],
      ]);
      // New tasks stay on the source after a revert.
      expect((await createTask(svc)).current_version_id).toBe(v1.version_id);
    });

    test('a target in a crash loop reverts by itself', async () => {
      const { v1, v2, ids } = await twoVersions(4);
      const created = await start(v1, { steps: [50, 100], watch: '5m' });
      await pass(Date.now());
      expect(await onVersion(ids, v2.version_id)).toBe(2);
      const { org_id } = await svc.store.db.selectFrom('namespaces').select('org_id').executeTakeFirstOrThrow();
      const actor = { keyId: '', orgId: org_id, name: 'agentctl runtime' };
      await recordRuntimeHappening(svc.store.db, unrestricted(actor), v2.version_id, 'runtime_failed', {
        failure_reason: 'crash_loop',
        failure_diagnostics: { title: 'The agent exits at start (crash loop)', description: 'exit 1', action: 'Fix it' },
      });
      await pass(Date.now());
      const r = await rollout(created.id);
      expect(r.status).toBe('REVERTED');
      expect(r.reason).toBe('v2 is in a crash loop; 2 tasks moved back to v1');
      expect(await onVersion(ids, v1.version_id)).toBe(4);
    });

    test('one rollout per source: a second one is 409 rollout_in_progress', async () => {
      const { v1 } = await twoVersions(2);
      const first = await start(v1);
      const res = await api('POST', '/rollouts', { body: { from_version_id: v1.version_id, to_latest: true } });
      expectError(res, 409, 'rollout_in_progress', `A rollout from v1 is already in progress (${first.id}, RUNNING): pause, resume or abort it`);
    });

    test('pause holds a rollout, resume watches the step again, abort moves the tasks back', async () => {
      const { v1, ids } = await twoVersions(10);
      const created = await start(v1);
      await pass(Date.now());
      const paused = await api('POST', `/rollouts/${created.id}/pause`);
      expect(paused.body.status).toBe('PAUSED');
      expect((await api('GET', `/status?agent=${v1.agent_id}`)).body.rollouts).toEqual([
        {
          id: created.id,
          branch_id: paused.body.branch_id,
          from_version_id: v1.version_id,
          to_version_id: paused.body.to_version_id,
          step: `paused at step 1 of ${paused.body.steps.length} (${paused.body.percent}%)`,
          started_at: paused.body.created_at,
        },
      ]);
      await pass(Date.now() + 60_000);
      expect((await rollout(created.id)).step).toBe(1);
      const resumed = await api('POST', `/rollouts/${created.id}/resume`);
      expect(resumed.body).toMatchObject({ status: 'RUNNING', step: 1 });
      const aborted = await api('POST', `/rollouts/${created.id}/abort`);
      expect(aborted.body.status).toBe('ABORTED');
      expect((await api('GET', `/status?agent=${v1.agent_id}`)).body.rollouts).toEqual([]);
      expect(aborted.body.reason).toMatch(/^aborted by .+; 1 task moved back to v1$/);
      expect(await onVersion(ids, v1.version_id)).toBe(10);
      expectError(
        await api('POST', `/rollouts/${created.id}/pause`),
        409,
        'rollout_finished',
        `Rollout ${created.id} is ABORTED (${aborted.body.reason}): it cannot pause`,
      );
      expect((await api('GET', `/rollouts?agent_id=${v1.agent_id}`)).body).toMatchObject({ total: 1, rollouts: [{ id: created.id, status: 'ABORTED' }] });
    });

    test('bad input is 422 naming the field', async () => {
      const { v1 } = await twoVersions(1);
      const bad = async (body: Record<string, unknown>, loc: string) => {
        const res = await api('POST', '/rollouts', { body: { from_version_id: v1.version_id, to_latest: true, ...body } });
        expect(res.status).toBe(422);
        expect(res.body.detail.map((d: any) => d.loc.join('.'))).toContain(loc);
      };
      await bad({ steps: [50, 10] }, 'body.steps');
      await bad({ steps: [10, 50] }, 'body.steps');
      await bad({ watch: 'soon' }, 'body.watch');
      await bad({ max_error_rate_percent: 101 }, 'body.max_error_rate_percent');
    });
  });
});
