import { sql } from 'kysely';
import { describe, expect, test } from 'vitest';
import { sweepRehearsals } from '../../src/server/domain/rehearsals.js';
import { createTask, deploy } from '../support/fixtures.js';
import { engines, useService } from '../support/service.js';

// A delivery never outlives its task (schema 040: the delete cascades to it, in place of the
// foreign key a hooked migration paid for on every row it wrote).
describe.each(engines)('deliveries go with their task (%s)', (engine) => {
  const svc = useService(engine);

  const deliveriesOf = async (taskId: string) =>
    (await sql<{ id: string; status: string }>`SELECT id::text, status FROM deliveries WHERE task_id = ${taskId} ORDER BY id`.execute(svc.store.db)).rows;

  test('the rehearsal sweep deletes an expired shadow task with its open and finished deliveries, and nothing of the task it shadowed', async () => {
    const v = await deploy(svc);
    const task = await createTask(svc);
    const shadow = await createTask(svc);
    const db = svc.store.db;
    await sql`
      INSERT INTO rehearsals (id, org_id, agent_id, from_version_id, to_version_id, status, max_events, event_timeout_ms, completed_at, expires_at)
      SELECT 'rh_gone', org_id, agent_id, ${v.version_id}, ${v.version_id}, 'completed', 10, 1000, now() - interval '2 days', now() - interval '1 day'
      FROM tasks WHERE id = ${task.id}`.execute(db);
    await sql`UPDATE tasks SET shadow_of = ${task.id}, rehearsal_id = 'rh_gone' WHERE id = ${shadow.id}`.execute(db);
    await sql`INSERT INTO rehearsal_tasks (rehearsal_id, task_id, shadow_task_id, status) VALUES ('rh_gone', ${task.id}, ${shadow.id}, 'done')`.execute(db);
    // One of the shadow's deliveries finished, one is still open.
    await sql`UPDATE deliveries SET status = 'done' WHERE task_id = ${shadow.id}`.execute(db);
    await sql`INSERT INTO deliveries (task_id, method, payload) VALUES (${shadow.id}, 'task/cancel', '{}')`.execute(db);
    expect((await deliveriesOf(shadow.id)).map((d) => d.status)).toEqual(['done', 'pending']);
    const kept = await deliveriesOf(task.id);
    expect(kept.length).toBeGreaterThan(0);

    expect(await sweepRehearsals(db)).toBe(1);

    expect((await sql`SELECT id FROM tasks WHERE id = ${shadow.id}`.execute(db)).rows).toEqual([]);
    expect(await deliveriesOf(shadow.id)).toEqual([]);
    expect(await deliveriesOf(task.id)).toEqual(kept);
    expect((await sql<{ shadow_task_id: string | null }>`SELECT shadow_task_id FROM rehearsal_tasks WHERE rehearsal_id = 'rh_gone'`.execute(db)).rows).toEqual([
      { shadow_task_id: null },
    ]);
  });

  test('any statement that deletes tasks deletes their deliveries with them, and only theirs', async () => {
    await deploy(svc);
    const [a, b, c] = [await createTask(svc), await createTask(svc), await createTask(svc)];
    const db = svc.store.db;
    const kept = await deliveriesOf(c.id);
    expect(kept.length).toBeGreaterThan(0);
    const gone = [a.id, b.id];
    // What else refers to the tasks still refuses their deletion (those keys stay); clear it first.
    const referring = await sql<{ table: string }>`
      SELECT DISTINCT c.conrelid::regclass::text AS table FROM pg_constraint c
      WHERE c.contype = 'f' AND c.confrelid = 'tasks'::regclass AND c.conrelid <> 'tasks'::regclass`.execute(db);
    expect(referring.rows.map((r) => r.table)).not.toContain('deliveries');
    await db.transaction().execute(async (trx) => {
      for (const { table } of referring.rows) await sql`DELETE FROM ${sql.table(table)} WHERE task_id = ANY(${gone}::text[])`.execute(trx);
      await sql`DELETE FROM tasks WHERE id = ANY(${gone}::text[])`.execute(trx);
    });
    for (const id of gone) expect(await deliveriesOf(id)).toEqual([]);
    expect(await deliveriesOf(c.id)).toEqual(kept);
  });
});
