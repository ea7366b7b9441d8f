import { afterAll, describe, expect, test } from 'vitest';
import { existsSync, mkdirSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { createTestDatabase } from '../support/service.js';
import { alive, tempDir, waitFor } from './support/agents.js';
import { agentPid, api, deployFixture, savedKey, startServerProcess, type ServerPlace, type ServerProcess } from './support/server-process.js';

const TASKS = 50;
const EVENTS_PER_TASK = 20;

/** The event numbers the tally agent (test/fixtures/agents/tally) wrote down for one task, in order. */
const handled = (log: string) =>
  existsSync(log)
    ? readFileSync(log, 'utf8')
        .split('\n')
        .filter(Boolean)
        .map((line) => Number(line.split(' ')[0]))
    : [];

/** The parent of a process (Linux /proc): which server started an agent. */
const parentOf = (pid: number) =>
  Number(
    readFileSync(`/proc/${pid}/stat`, 'utf8')
      .replace(/^.*\) /s, '')
      .split(' ')[1],
  );

async function openDeliveries(url: string, key: string): Promise<number> {
  const text = await (await fetch(`${url}/metrics`, { headers: { authorization: `Bearer ${key}` } })).text();
  return [...text.matchAll(/^agentctl_delivery_queue_depth\{status="\w+"\} (\d+)$/gm)].reduce((sum, m) => sum + Number(m[1]), 0);
}

// Two `agentctl server start` replicas on one PostgreSQL database and one machine: one holds the
// runtime lease and runs the agents (local runtime). They share the runtime directory and the blob
// store (as replicas on one machine would), so the one that takes over the lease runs the same
// prepared source with the same agent data. PostgreSQL only: PGlite is one process's database.
describe.skipIf(!process.env.TEST_DATABASE_URL)('two server replicas on one PostgreSQL, one local runtime lease (skipped without TEST_DATABASE_URL)', () => {
  const scratch = tempDir('agentctl-server-replicas-');
  let dropDatabase: (() => Promise<void>) | undefined;
  const pids: number[] = [];
  afterAll(async () => {
    for (const pid of pids) if (alive(pid)) process.kill(pid, 'SIGKILL');
    await dropDatabase?.();
    scratch.remove();
  });

  test(`${TASKS * EVENTS_PER_TASK} events over ${TASKS} tasks, the lease holder killed by SIGKILL midway: the other takes the lease and restarts the agent, and every event reaches the handler once, in order per task`, {
    timeout: 300_000,
  }, async () => {
    const database = await createTestDatabase();
    dropDatabase = database.drop;
    const place = (name: string): ServerPlace => ({ configDir: join(scratch.path, 'config'), dataDir: join(scratch.path, name), databaseUrl: database.url });
    const [placeA, placeB] = [place('a'), place('b')];
    const a: ServerProcess = await startServerProcess(placeA);
    pids.push(a.pid);
    mkdirSync(placeB.dataDir);
    for (const shared of ['blobs', 'runtime']) symlinkSync(join(placeA.dataDir, shared), join(placeB.dataDir, shared));
    const b: ServerProcess = await startServerProcess(placeB);
    pids.push(b.pid);
    const key = savedKey(placeA);

    const version = await deployFixture(placeA, 'tally', join(scratch.path, 'repo'));
    const firstAgent = await waitFor('the agent', () => agentPid(placeA, version.id), 60_000);
    pids.push(firstAgent);
    expect(parentOf(firstAgent)).toBe(a.pid);

    // Requests go to either replica. Each task's first event waits for the gate: all are queued first.
    const base = (i: number) => (i % 2 === 0 ? a.url : b.url);
    const gate = join(scratch.path, 'gate');
    const log = (task: number) => join(scratch.path, `handled-${task}.log`);
    const tasks: string[] = [];
    for (let t = 0; t < TASKS; t++) {
      const task = await api(base(t), key, 'POST', '/tasks', { agent_name: 'default/tally' });
      expect(task.status).toBe(201);
      tasks.push(task.body.id);
    }
    await Promise.all(
      tasks.map(async (taskId, t) => {
        for (let n = 1; n <= EVENTS_PER_TASK; n++) {
          const sent = await api(base(t + n), key, 'POST', `/tasks/${taskId}/events`, {
            content: { type: 'data', data: { log: log(t), n, ...(n === 1 ? { gate } : {}) } },
          });
          expect(sent.status).toBe(201);
        }
      }),
    );
    const total = () => tasks.reduce((sum, _, t) => sum + handled(log(t)).length, 0);
    writeFileSync(gate, '');
    await waitFor('half the events handled', () => total() >= (TASKS * EVENTS_PER_TASK) / 2, 120_000);

    a.child.kill('SIGKILL');
    expect(await a.exited).toEqual({ code: null, signal: 'SIGKILL' });
    const killedAt = Date.now();
    const handledAtKill = total();
    await waitFor(`agent ${firstAgent} to exit with its server`, () => !alive(firstAgent));

    const secondAgent = await waitFor(
      'the agent started again by the other replica',
      () => {
        const pid = agentPid(placeA, version.id);
        return pid !== firstAgent && pid > 0 && alive(pid) ? pid : 0;
      },
      60_000,
    );
    pids.push(secondAgent);
    const readyAt = Date.now();
    expect(parentOf(secondAgent)).toBe(b.pid);
    await waitFor('every event handled', () => tasks.every((_, t) => new Set(handled(log(t))).size === EVENTS_PER_TASK), 120_000);
    const drainedAt = Date.now();
    await waitFor('no delivery open', async () => (await openDeliveries(b.url, key)) === 0, 30_000);

    const lines = tasks.map((_, t) => handled(log(t)));
    const count = lines.reduce((sum, l) => sum + l.length, 0);
    const distinct = lines.reduce((sum, l) => sum + new Set(l).size, 0);
    console.log(
      `[two replicas] lease holder SIGKILLed with ${handledAtKill} of ${TASKS * EVENTS_PER_TASK} handled; the other restarted the agent ${((readyAt - killedAt) / 1000).toFixed(1)} s later; ` +
        `${distinct} of ${TASKS * EVENTS_PER_TASK} handled, ${count - distinct} twice, all ${((drainedAt - readyAt) / 1000).toFixed(1)} s after the new agent was ready`,
    );
    for (const l of lines) expect(l).toEqual(Array.from({ length: EVENTS_PER_TASK }, (_, i) => i + 1));

    b.child.kill('SIGTERM');
    expect(await b.exited).toEqual({ code: 0, signal: null });
    expect(alive(secondAgent)).toBe(false);
  });
});
