import { afterAll, describe, expect, test } from 'vitest';
import { mkdirSync, symlinkSync } from 'node:fs';
import { join } from 'node:path';
import { createTestDatabase } from '../support/service.js';
import { alive, tempDir, waitFor } from './support/agents.js';
import { agentctl, api, deployFixture, savedKey, startServerProcess, type ServerPlace, type ServerProcess } from './support/server-process.js';

// A schedule ticking every second (six-field cron) on two `agentctl server start` replicas sharing
// one PostgreSQL database, through a restart of one and the death of the other: one task per tick,
// none twice, none missing. PostgreSQL only: PGlite is one process's database.
describe.skipIf(!process.env.TEST_DATABASE_URL)('a schedule on two server replicas (skipped without TEST_DATABASE_URL)', () => {
  const scratch = tempDir('agentctl-schedule-replicas-');
  let dropDatabase: (() => Promise<void>) | undefined;
  const servers: ServerProcess[] = [];
  afterAll(async () => {
    for (const s of servers) if (alive(s.pid)) process.kill(s.pid, 'SIGKILL');
    await dropDatabase?.();
    scratch.remove();
  });

  test('every second one task, through a replica restarted and a replica killed, with unique and gapless tick times', { timeout: 300_000 }, async () => {
    const database = await createTestDatabase();
    dropDatabase = database.drop;
    const place = (name: string): ServerPlace => ({ configDir: join(scratch.path, 'config'), dataDir: join(scratch.path, name), databaseUrl: database.url });
    const [placeA, placeB] = [place('a'), place('b')];
    let a = await startServerProcess(placeA);
    servers.push(a);
    mkdirSync(placeB.dataDir);
    for (const shared of ['blobs', 'runtime']) symlinkSync(join(placeA.dataDir, shared), join(placeB.dataDir, shared));
    const b = await startServerProcess(placeB);
    servers.push(b);
    const key = savedKey(placeA);
    await deployFixture(placeA, 'plain', join(scratch.path, 'repo'));

    const created = await agentctl(placeA, [
      'schedules',
      'create',
      '--agent',
      'default/plain',
      '--cron',
      '* * * * * *',
      '--params',
      '{"from":"schedule"}',
      '--json',
    ]);
    expect(created.exitCode).toBe(0);
    const schedule = JSON.parse(created.stdout) as { id: string };
    const ticks = async (url: string) => {
      const res = await api(url, key, 'GET', '/tasks?agent=default/plain&limit=1000&order_direction=asc');
      return (res.body.tasks as { params: unknown; task_metadata: { schedule?: { id: string; tick_at: string; kind: string } } | null }[])
        .filter((t) => t.task_metadata?.schedule?.id === schedule.id)
        .map((t) => ({ params: t.params, ...t.task_metadata!.schedule! }));
    };
    const grows = async (url: string, by: number) => {
      const start = (await ticks(url)).length;
      await waitFor(`${by} more ticks`, async () => (await ticks(url)).length >= start + by, 60_000);
    };

    await grows(b.url, 4);
    // Replica A stops (SIGTERM) and starts again while B keeps ticking.
    a.child.kill('SIGTERM');
    expect(await a.exited).toEqual({ code: 0, signal: null });
    await grows(b.url, 2);
    a = await startServerProcess(placeA);
    servers.push(a);
    await grows(a.url, 3);
    // Replica B dies without a word: A carries on alone.
    b.child.kill('SIGKILL');
    expect(await b.exited).toEqual({ code: null, signal: 'SIGKILL' });
    await grows(a.url, 4);

    const paused = await agentctl(placeA, ['schedules', 'pause', schedule.id, '--json']);
    expect(paused.exitCode).toBe(0);
    const runs = await ticks(a.url);
    const times = runs.map((r) => Date.parse(r.tick_at)).sort((x, y) => x - y);
    const span = (times.at(-1)! - times[0]!) / 1000 + 1;
    console.log(`[schedule replicas] ${runs.length} tasks for ${span} ticks (${new Set(times).size} distinct tick times)`);
    expect(new Set(times).size).toBe(runs.length);
    expect(times.every((t) => t % 1000 === 0)).toBe(true);
    expect(runs.length).toBe(span);
    expect(new Set(runs.map((r) => `${r.kind} ${JSON.stringify(r.params)}`))).toEqual(new Set(['scheduled {"from":"schedule"}']));
  });
});
