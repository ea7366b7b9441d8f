import { describe, expect, test } from 'vitest';
import { Schedule, ScheduleList, ScheduleTick } from '../../src/contract/schedules.js';
import { runDueTicks } from '../../src/server/domain/schedules.js';
import { engines, useService } from '../support/service.js';
import { createTask, deploy, deployActive } from '../support/fixtures.js';
import { scopedKey } from '../support/scoped-key.js';

const at = (iso: string) => new Date(iso);
const plus = (iso: string, ms: number) => new Date(new Date(iso).getTime() + ms);

describe.each(engines)('schedules (%s)', (engine) => {
  const svc = useService(engine);

  async function create(body: Record<string, unknown>, key?: string) {
    return svc.api('POST', '/schedules', { body: { agent_name: 'default/support-bot', ...body }, key });
  }
  async function tasksOf(agentId: string) {
    const res = await svc.api('GET', `/tasks?agent_id=${agentId}&order_direction=asc`);
    return res.body.tasks as { id: string; params: unknown; task_metadata: any; current_version_id: string }[];
  }

  test('a schedule is created ACTIVE with its next run time, listed and shown with no runs yet', async () => {
    const v1 = await deployActive(svc);
    const before = Date.now();
    const res = await create({ cron: '*/5 * * * *', timezone: 'Europe/Paris', params: { report: 'daily' }, name: 'five-minutely' });
    expect(res.status).toBe(201);
    const schedule = Schedule.parse(res.body);
    expect(schedule).toMatchObject({
      agent_id: v1.agent_id,
      name: 'five-minutely',
      cron: '*/5 * * * *',
      timezone: 'Europe/Paris',
      params: { report: 'daily' },
      task_name: null,
      event: null,
      missed: 'skip',
      status: 'ACTIVE',
      last_run_at: null,
      last_error: null,
    });
    expect(schedule.id).toMatch(/^sch_/);
    const next = new Date(schedule.next_run_at!).getTime();
    expect(next % 300_000).toBe(0);
    expect(next).toBeGreaterThan(before);
    expect(next - before).toBeLessThanOrEqual(300_000);

    const list = ScheduleList.parse((await svc.api('GET', '/schedules?agent=default/support-bot')).body);
    expect(list).toEqual({ schedules: [schedule], total: 1 });
    const got = await svc.api('GET', `/schedules/${schedule.id}`);
    expect(got.body).toEqual({ ...schedule, recent_ticks: [] });
    expect((await create({ cron: '0 * * * *', name: 'five-minutely' })).body).toEqual({
      detail: 'The agent already has a schedule named five-minutely',
      code: 'schedule_name_taken',
    });
  });

  test('an invalid cron expression or time zone is a 422 naming the field and where it is', async () => {
    await deployActive(svc);
    expect((await create({ cron: '*/5 25 * * *' })).body).toEqual({
      detail: [{ loc: ['body', 'cron', 1], msg: 'Field 2 (hour) "25" at character 5: a value is out of range (0-23)', type: 'cron_syntax' }],
    });
    // Seconds first: every bad field is named.
    expect((await create({ cron: '0 61 * * 13 *' })).body).toEqual({
      detail: [
        { loc: ['body', 'cron', 1], msg: 'Field 2 (minute) "61" at character 3: a value is out of range (0-59)', type: 'cron_syntax' },
        { loc: ['body', 'cron', 4], msg: 'Field 5 (month) "13" at character 10: a value is out of range (1-12 or JAN-DEC)', type: 'cron_syntax' },
      ],
    });
    expect((await create({ cron: '0 9 * * mon-fry' })).body).toEqual({
      detail: [
        {
          loc: ['body', 'cron', 4],
          msg: 'Field 5 (day of week) "mon-fry" at character 9: not a cron field: use numbers or names (JAN, MON), *, ranges (1-5), lists (1,3) and steps (*/5)',
          type: 'cron_syntax',
        },
      ],
    });
    expect((await create({ cron: '* * * *' })).body).toEqual({
      detail: [
        { loc: ['body', 'cron'], msg: 'Expected 5 fields (minute hour day-of-month month day-of-week), or 6 with seconds first; got 4', type: 'cron_syntax' },
      ],
    });
    expect((await create({ cron: '0 0 30 2 *' })).body).toEqual({
      detail: [{ loc: ['body', 'cron'], msg: '"0 0 30 2 *" never runs (no date matches it)', type: 'cron_syntax' }],
    });
    expect((await create({ cron: '* * * * *', timezone: 'Mars/Olympus' })).body).toEqual({
      detail: [
        {
          loc: ['body', 'timezone'],
          msg: 'Unknown time zone "Mars/Olympus": use an IANA name such as UTC, Europe/Paris or America/New_York',
          type: 'timezone',
        },
      ],
    });
    expect((await create({ cron: '* * * * *', task_name: 'inbox' })).body.detail[0].loc).toEqual(['body', 'event']);
    expect((await svc.api('GET', '/schedules')).body).toEqual({ schedules: [], total: 0 });
  });

  test('each tick creates one task with the params on the serving version, however many tickers run it', async () => {
    const v1 = await deployActive(svc);
    const schedule = Schedule.parse((await create({ cron: '* * * * * *', params: { n: 1 } })).body);
    const first = schedule.next_run_at!;
    // Two tickers (two replicas) wake at the tick's time, and again a second later.
    const [a, b] = await Promise.all([runDueTicks(svc.store.db, at(first)), runDueTicks(svc.store.db, at(first))]);
    expect(a.ran.length + b.ran.length).toBe(1);
    const [c, d] = await Promise.all([runDueTicks(svc.store.db, plus(first, 1000)), runDueTicks(svc.store.db, plus(first, 1000))]);
    expect(c.ran.length + d.ran.length).toBe(1);
    expect((await runDueTicks(svc.store.db, plus(first, 1000))).ran).toEqual([]);

    const tasks = await tasksOf(v1.agent_id);
    expect(tasks.map((t) => [t.params, t.current_version_id, t.task_metadata])).toEqual([
      [{ n: 1 }, v1.version_id, { schedule: { id: schedule.id, tick_at: first, kind: 'scheduled' } }],
      [{ n: 1 }, v1.version_id, { schedule: { id: schedule.id, tick_at: plus(first, 1000).toISOString(), kind: 'scheduled' } }],
    ]);
    const got = Schedule.parse((await svc.api('GET', `/schedules/${schedule.id}`)).body);
    expect(got.recent_ticks!.map((t) => [t.tick_at, t.kind, t.task_id, t.error])).toEqual([
      [plus(first, 1000).toISOString(), 'scheduled', tasks[1]!.id, null],
      [first, 'scheduled', tasks[0]!.id, null],
    ]);
    expect(got.next_run_at).toBe(plus(first, 2000).toISOString());
    expect(got.last_run_at).toBe(plus(first, 1000).toISOString());
  });

  test('after downtime, skip runs none of the missed ticks and catch-up-one runs one for them all', async () => {
    const v1 = await deployActive(svc);
    const skip = Schedule.parse((await create({ cron: '0 * * * *', name: 'skip' })).body);
    const catchUp = Schedule.parse((await create({ cron: '0 * * * *', name: 'catch-up', missed: 'catch-up-one' })).body);
    const due = skip.next_run_at!;
    // The server comes back 3 h 30 min after the first of them was due: ticks at +0, +1 h, +2 h, +3 h were missed.
    const back = plus(due, 3.5 * 3600_000);
    const { ran } = await runDueTicks(svc.store.db, back);
    expect(ran.map((t) => [t.schedule_id, t.kind, t.tick_at])).toEqual([[catchUp.id, 'catch_up', plus(due, 3 * 3600_000).toISOString()]]);
    expect((await tasksOf(v1.agent_id)).map((t) => t.task_metadata.schedule.id)).toEqual([catchUp.id]);
    for (const s of [skip, catchUp]) {
      expect((await svc.api('GET', `/schedules/${s.id}`)).body.next_run_at).toBe(plus(due, 4 * 3600_000).toISOString());
    }
    // A tick a few seconds late (a replica that woke late) is on time: it runs, under either policy.
    const late = await runDueTicks(svc.store.db, plus(due, 4 * 3600_000 + 3000));
    expect(late.ran.map((t) => [t.kind, t.tick_at])).toEqual([
      ['scheduled', plus(due, 4 * 3600_000).toISOString()],
      ['scheduled', plus(due, 4 * 3600_000).toISOString()],
    ]);
  });

  test('pause stops the ticks, resume starts from the next one, trigger runs one now (also while paused)', async () => {
    const v1 = await deployActive(svc);
    const schedule = Schedule.parse((await create({ cron: '* * * * * *' })).body);
    const paused = await svc.api('POST', `/schedules/${schedule.id}/pause`);
    expect(paused.status).toBe(200);
    expect(paused.body).toMatchObject({ status: 'PAUSED', next_run_at: null });
    expect((await runDueTicks(svc.store.db, plus(schedule.next_run_at!, 5000))).ran).toEqual([]);

    const triggered = await svc.api('POST', `/schedules/${schedule.id}/trigger`);
    expect(triggered.status).toBe(201);
    const tick = ScheduleTick.parse(triggered.body);
    expect(tick).toMatchObject({ schedule_id: schedule.id, kind: 'manual', event_id: null, error: null });
    expect((await tasksOf(v1.agent_id)).map((t) => t.id)).toEqual([tick.task_id]);

    const before = Date.now();
    const resumed = await svc.api('POST', `/schedules/${schedule.id}/resume`);
    expect(resumed.body.status).toBe('ACTIVE');
    expect(new Date(resumed.body.next_run_at).getTime()).toBeGreaterThan(before);
    expect((await svc.api('POST', `/schedules/${schedule.id}/resume`)).body).toEqual(resumed.body);

    const deleted = await svc.api('DELETE', `/schedules/${schedule.id}`);
    expect(deleted.status).toBe(200);
    expect(deleted.body.id).toBe(schedule.id);
    expect((await svc.api('GET', `/schedules/${schedule.id}`)).body).toEqual({ detail: `Schedule ${schedule.id} was not found`, code: 'not_found' });
    expect(await tasksOf(v1.agent_id)).toHaveLength(1);
  });

  test('a schedule with --task sends its event to the named task on each tick', async () => {
    await deployActive(svc);
    const inbox = await createTask(svc, { name: 'inbox' });
    const schedule = Schedule.parse((await create({ cron: '* * * * * *', task_name: 'inbox', event: { type: 'data', data: { poll: true } } })).body);
    const { ran } = await runDueTicks(svc.store.db, at(schedule.next_run_at!));
    expect(ran.map((t) => [t.task_id, t.error])).toEqual([[null, null]]);
    const events = (await svc.api('GET', `/events?task_id=${inbox.id}`)).body.events;
    expect(events.map((e: any) => [e.id, e.content])).toEqual([[ran[0]!.event_id, { type: 'data', data: { poll: true } }]]);
    expect((await create({ cron: '* * * * *', task_name: 'nobody', event: 'hi', name: 'x' })).body).toEqual({
      detail: 'Task named nobody of the agent was not found',
      code: 'not_found',
    });
  });

  test('a tick that cannot run records why and the schedule moves on', async () => {
    const v1 = await deploy(svc, { branch: 'dev' });
    const schedule = Schedule.parse((await create({ cron: '* * * * * *' })).body);
    const { ran } = await runDueTicks(svc.store.db, at(schedule.next_run_at!));
    expect(ran.map((t) => [t.task_id, t.error])).toEqual([[null, `Branch main of agent support-bot was not found`]]);
    const got = (await svc.api('GET', `/schedules/${schedule.id}`)).body;
    expect(got.last_error).toBe('Branch main of agent support-bot was not found');
    expect(got.next_run_at).toBe(plus(schedule.next_run_at!, 1000).toISOString());
    expect(await tasksOf(v1.agent_id)).toEqual([]);
    // Run by hand, the same refusal is the caller's answer.
    expect((await svc.api('POST', `/schedules/${schedule.id}/trigger`)).body).toEqual({
      detail: 'Branch main of agent support-bot was not found',
      code: 'not_found',
    });
  });

  test('access is that of creating tasks on the agent', async () => {
    const v1 = await deployActive(svc);
    const discoverer = await scopedKey(svc, [{ resource_type: 'agent', resource_id: v1.agent_id, role: 'discoverer' }]);
    const stranger = await scopedKey(svc, []);
    const runner = await scopedKey(svc, [{ resource_type: 'agent', resource_id: v1.agent_id, role: 'viewer' }]);
    expect((await create({ cron: '* * * * *' }, discoverer)).body).toEqual({ detail: 'This API key may not run Agent default/support-bot', code: 'forbidden' });
    expect((await create({ cron: '* * * * *' }, stranger)).status).toBe(404);
    const mine = await create({ cron: '* * * * * *' }, runner);
    expect(mine.status).toBe(201);
    expect((await svc.api('GET', '/schedules', { key: stranger })).body).toEqual({ schedules: [], total: 0 });
    expect((await svc.api('GET', `/schedules/${mine.body.id}`, { key: stranger })).status).toBe(404);
    expect((await svc.api('POST', `/schedules/${mine.body.id}/pause`, { key: discoverer })).status).toBe(403);
    // Its ticks run with its creator's rights: once the key is revoked, they create nothing.
    await svc.store.db.updateTable('api_keys').set({ revoked_at: new Date() }).where('key_prefix', '=', runner.slice(0, 12)).execute();
    const { ran } = await runDueTicks(svc.store.db, at(mine.body.next_run_at));
    expect(ran.map((t) => [t.task_id, t.error])).toEqual([
      [null, `The key that created schedule ${mine.body.id} was revoked or has expired: create the schedule again with a live key`],
    ]);
  });
});
