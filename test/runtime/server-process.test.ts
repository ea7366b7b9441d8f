import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { createTestDatabase, engines } from '../support/service.js';
import { alive, tempDir, waitFor } from './support/agents.js';
import { agentctl, agentPid, api, deployFixture, savedKey, startServerProcess, type ServerPlace, type ServerProcess } from './support/server-process.js';

/** The lines the tally agent (test/fixtures/agents/tally) wrote: which event, handled by which process. */
const handled = (log: string) =>
  existsSync(log)
    ? readFileSync(log, 'utf8')
        .split('\n')
        .filter(Boolean)
        .map((line) => line.split(' ').map(Number) as [number, number])
    : [];

/** Deliveries not done yet, from GET /metrics (the org-admin key may read it). */
async function openDeliveries(url: string, key: string): Promise<number> {
  const response = await fetch(`${url}/metrics`, { headers: { authorization: `Bearer ${key}` } });
  const text = await response.text();
  return [...text.matchAll(/^agentctl_delivery_queue_depth\{status="\w+"\} (\d+)$/gm)].reduce((sum, m) => sum + Number(m[1]), 0);
}

// The real `agentctl server start` with the local runtime and a real ADK agent, stopped the ways a
// server is stopped: SIGKILL (a crash), SIGTERM (`server stop`, a supervisor), SIGINT (Ctrl-C).
describe.each(engines)('agentctl server start stopped and killed, with a running agent (%s)', (engine) => {
  const scratch = tempDir('agentctl-server-process-');
  let databaseUrl: string | undefined;
  let dropDatabase: (() => Promise<void>) | undefined;
  const servers: ServerProcess[] = [];
  const agents: number[] = [];
  beforeAll(async () => {
    if (engine === 'postgres') ({ url: databaseUrl, drop: dropDatabase } = await createTestDatabase());
  });
  afterAll(async () => {
    for (const pid of [...servers.map((s) => s.pid), ...agents]) if (alive(pid)) process.kill(pid, 'SIGKILL');
    await dropDatabase?.();
    scratch.remove();
  });
  const place = (name: string): ServerPlace => {
    const dir = join(scratch.path, name);
    mkdirSync(dir);
    return { configDir: join(dir, 'config'), dataDir: join(dir, 'data'), databaseUrl };
  };
  const start = async (where: ServerPlace) => {
    const server = await startServerProcess(where);
    servers.push(server);
    return server;
  };

  test('killed by SIGKILL after 40 of 200 events were handled and started again: the agent goes with it, and every other event is handled soon after the new agent is ready, once, in order', { timeout: 240_000 }, async () => {
    const where = place('kill');
    const first = await start(where);
    const key = savedKey(where);
    const version = await deployFixture(where, 'tally', join(scratch.path, 'kill', 'repo'));
    const task = await api(first.url, key, 'POST', '/tasks', { agent_name: 'default/tally' });
    expect(task.status).toBe(201);
    const log = join(scratch.path, 'kill', 'handled.log');
    // The first event's handler waits for the gate: all 200 are queued before any is handled.
    const gate = join(scratch.path, 'kill', 'gate');
    for (let n = 1; n <= 200; n++) {
      const sent = await api(first.url, key, 'POST', `/tasks/${task.body.id}/events`, { content: { type: 'data', data: { log, n, ...(n === 1 ? { gate } : {}) } } });
      expect(sent.status).toBe(201);
    }
    const firstAgent = await waitFor('the agent', () => agentPid(where, version.id));
    agents.push(firstAgent);
    writeFileSync(gate, '');
    await waitFor('40 events handled', () => handled(log).length >= 40);

    first.child.kill('SIGKILL');
    expect(await first.exited).toEqual({ code: null, signal: 'SIGKILL' });
    await waitFor(`agent ${firstAgent} to exit after the server died`, () => !alive(firstAgent));
    const handledAtKill = handled(log).length;

    const restartedAt = Date.now();
    const second = await start(where);
    const secondAgent = await waitFor('the agent started again', () => {
      const pid = agentPid(where, version.id);
      return pid !== firstAgent && pid > 0 && alive(pid) ? pid : 0;
    }, 60_000);
    agents.push(secondAgent);
    const readyAt = Date.now();
    // "Soon": well within the completion lease (5 minutes) and the claim of a dead dispatcher (65 s).
    await waitFor('all 200 events handled', () => new Set(handled(log).map(([n]) => n)).size === 200, 30_000);
    const drainedAt = Date.now();
    await waitFor('no delivery open', async () => (await openDeliveries(second.url, key)) === 0, 30_000);

    const lines = handled(log);
    const duplicates = lines.length - new Set(lines.map(([n]) => n)).size;
    console.log(
      `[${engine}] SIGKILL after ${handledAtKill} of 200 handled; after the restart: ${new Set(lines.map(([n]) => n)).size} of 200 handled, ${duplicates} duplicates, ` +
        `drained ${((drainedAt - readyAt) / 1000).toFixed(1)} s after the agent was ready (${((drainedAt - restartedAt) / 1000).toFixed(1)} s after the restart)`,
    );
    expect(lines.map(([n]) => n)).toEqual(Array.from({ length: 200 }, (_, i) => i + 1));
    expect(new Set(lines.slice(handledAtKill).map(([, pid]) => pid))).toEqual(new Set([secondAgent]));

    second.child.kill('SIGTERM');
    expect(await second.exited).toEqual({ code: 0, signal: null });
    expect(alive(secondAgent)).toBe(false);
  });

  test('stopped by `agentctl server stop` (SIGTERM, as a supervisor stops it) or by SIGINT (Ctrl-C), it exits 0 once its agent has exited, and `server stop` reports success', { timeout: 240_000 }, async () => {
    const where = place('stop');
    const newAgent = (versionId: string) =>
      waitFor('the agent', () => {
        const pid = agentPid(where, versionId);
        return pid > 0 && !agents.includes(pid) && alive(pid) ? pid : 0;
      }, 60_000);
    let server = await start(where);
    const version = await deployFixture(where, 'tally', join(scratch.path, 'stop', 'repo'));
    let agent = await newAgent(version.id);
    agents.push(agent);
    const stopped = await agentctl(where, ['server', 'stop', '--json']);
    expect(stopped.exitCode, stopped.stderr).toBe(0);
    expect(JSON.parse(stopped.stdout)).toMatchObject({ pid: server.pid, stopped: true, killed: false });
    expect(await server.exited, server.stderr()).toEqual({ code: 0, signal: null });
    expect(alive(agent)).toBe(false);

    server = await start(where);
    agent = await newAgent(version.id);
    agents.push(agent);
    server.child.kill('SIGINT');
    expect(await server.exited, server.stderr()).toEqual({ code: 0, signal: null });
    expect(alive(agent)).toBe(false);
  });
});
