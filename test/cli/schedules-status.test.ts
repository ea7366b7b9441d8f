// `agentctl schedules ...` and `agentctl status` through the built CLI (bin/agentctl.js) against a test service.
import { describe, expect, test } from 'vitest';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { agentctl } from './built.js';
import { useCliService } from './support.js';
import { createTask, deployActive } from '../support/fixtures.js';
import { engines } from '../support/service.js';

describe.each(engines)('schedules and status through the built CLI (%s)', (engine) => {
  const { svc, scratch, env } = useCliService(engine);
  const cli = (...args: string[]) => agentctl(args, { env, cwd: scratch.dir });

  test('create, list, trigger, pause, resume, get and delete a schedule', async () => {
    const v1 = await deployActive(svc);
    const created = await cli(
      'schedules',
      'create',
      '--agent',
      'default/support-bot',
      '--cron',
      '0 9 * * 1-5',
      '--tz',
      'Europe/Paris',
      '--params',
      '{"report":"daily"}',
      '--name',
      'weekday-report',
      '--json',
    );
    expect(created.code).toBe(0);
    const schedule = JSON.parse(created.stdout);
    expect(schedule).toMatchObject({
      name: 'weekday-report',
      cron: '0 9 * * 1-5',
      timezone: 'Europe/Paris',
      params: { report: 'daily' },
      status: 'ACTIVE',
      missed: 'skip',
    });
    // 09:00 in Paris is 07:00 or 08:00 UTC, on a weekday.
    const next = new Date(schedule.next_run_at);
    expect([7, 8]).toContain(next.getUTCHours());
    expect([1, 2, 3, 4, 5]).toContain(next.getUTCDay());

    const listed = await cli('schedules', 'list', '--agent', 'default/support-bot');
    expect(listed.code).toBe(0);
    expect(listed.stdout).toBe(`${schedule.id}\tweekday-report\t0 9 * * 1-5\tEurope/Paris\tACTIVE\t${schedule.next_run_at}\t\tnew task\n`);

    const triggered = await cli('schedules', 'trigger', schedule.id, '--json');
    expect(triggered.code).toBe(0);
    const tick = JSON.parse(triggered.stdout);
    expect(tick).toMatchObject({ schedule_id: schedule.id, kind: 'manual', event_id: null, error: null });
    const task = (await svc.api('GET', `/tasks/${tick.task_id}`)).body;
    expect([task.params, task.current_version_id, task.task_metadata]).toEqual([
      { report: 'daily' },
      v1.version_id,
      { schedule: { id: schedule.id, tick_at: tick.tick_at, kind: 'manual' } },
    ]);

    expect(JSON.parse((await cli('schedules', 'pause', schedule.id, '--json')).stdout)).toMatchObject({ status: 'PAUSED', next_run_at: null });
    expect(JSON.parse((await cli('schedules', 'resume', schedule.id, '--json')).stdout)).toMatchObject({ status: 'ACTIVE', next_run_at: schedule.next_run_at });
    const got = JSON.parse((await cli('schedules', 'get', schedule.id, '--json')).stdout);
    expect(got.recent_ticks).toEqual([tick]);
    expect(got.last_run_at).toBe(tick.tick_at);

    const deleted = await cli('schedules', 'delete', schedule.id);
    expect(deleted.code).toBe(0);
    expect(deleted.stderr).toContain(`Deleted schedule ${schedule.id}`);
    const gone = await cli('schedules', 'get', schedule.id);
    expect([gone.code, gone.stdout]).toEqual([3, '']);
    expect(gone.stderr).toContain(`Schedule ${schedule.id} was not found`);
  });

  test('a bad cron expression names the field and its place; exit 2', async () => {
    await deployActive(svc);
    const bad = await cli('schedules', 'create', '--agent', 'default/support-bot', '--cron', '*/5 25 * * *');
    expect([bad.code, bad.stdout]).toEqual([2, '']);
    expect(bad.stderr).toContain('Field 2 (hour) "25" at character 5: a value is out of range (0-23)');
    const zone = await cli('schedules', 'create', '--agent', 'default/support-bot', '--cron', '* * * * *', '--tz', 'Mars/Olympus');
    expect(zone.code).toBe(2);
    expect(zone.stderr).toContain('Unknown time zone "Mars/Olympus"');
  });

  test('status shows the linked agent, its serving version, tasks by status, open deliveries and failures', async () => {
    const v1 = await deployActive(svc);
    await createTask(svc);
    await createTask(svc);
    const failedTask = await createTask(svc, { name: 'broken' });
    await svc.api('PATCH', `/tasks/${failedTask.id}`, { body: { status: 'FAILED', status_reason: 'the model timed out' } });
    writeFileSync(join(scratch.dir, 'agentctl.json'), JSON.stringify({ agent: 'default/support-bot', entry: 'src/index.ts' }));

    const json = await cli('status', '--json');
    expect(json.code).toBe(0);
    const report = JSON.parse(json.stdout);
    const hash = (await svc.api('GET', `/versions/${v1.version_id}`)).body.git_hash;
    expect(report).toEqual({
      profile: 'default',
      base_url: svc.url,
      reachable: true,
      server: { version: '0.1.0', engine, time: expect.any(String) },
      agent: {
        id: v1.agent_id,
        name: 'support-bot',
        namespace_slug: 'default',
        branches: [
          {
            id: v1.branch_id,
            git_branch: 'main',
            serving: { id: v1.version_id, number: 1, status: 'ACTIVE', git_hash: hash, deployed_at: expect.any(String), replicas: 1, live_replicas: 0 },
            in_progress: [],
          },
        ],
      },
      tasks: { IDLE: 0, CANCELED: 0, COMPLETED: 0, FAILED: 1, RUNNING: 2, TERMINATED: 0, TIMED_OUT: 0 },
      rollouts: [],
      deliveries: { pending: 3, leased: 0, oldest_created_at: expect.any(String), oldest_age_ms: expect.any(Number) },
      failures: {
        versions: [],
        handler_errors: [],
        tasks: [{ id: failedTask.id, name: 'broken', status_reason: 'the model timed out', updated_at: expect.any(String) }],
      },
    });

    const screen = await cli('status');
    expect(screen.code).toBe(0);
    expect(screen.stdout.replace(/oldest .* old \(.*\)/, 'oldest AGE old (TIME)')).toBe(
      [
        `Server    ${svc.url} (reachable, agentctl 0.1.0, ${engine})`,
        'Profile   default',
        '',
        `Agent     default/support-bot (${v1.agent_id})`,
        `  main: serving v1 ACTIVE 0/1 replicas (${hash.slice(0, 7)})`,
        '',
        'Tasks     FAILED 1, RUNNING 2',
        'Rollouts  none in progress',
        'Delivery  3 pending, 0 being handled; oldest AGE old (TIME)',
        '',
        'Failures',
        '  task broken FAILED: the model timed out',
        '',
      ].join('\n'),
    );
  });
});
