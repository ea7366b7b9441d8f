import { afterAll, describe, expect, test } from 'vitest';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { createTestDatabase, engines } from '../support/service.js';
import { alive, tempDir, waitFor } from './support/agents.js';
import { agentctl, agentPid, api, deployFixture, savedKey, startServerProcess, type ServerPlace, type ServerProcess } from './support/server-process.js';

/** The lines the tally agent (test/fixtures/agents/tally) wrote: which event, handled by which process, when. */
const handled = (log: string) =>
  existsSync(log)
    ? readFileSync(log, 'utf8')
        .split('\n')
        .filter(Boolean)
        .map((line) => line.split(' ').map(Number) as [n: number, pid: number, ms: number])
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
  const drops: Array<() => Promise<void>> = [];
  const servers: ServerProcess[] = [];
  const agents: number[] = [];
  afterAll(async () => {
    for (const pid of [...servers.map((s) => s.pid), ...agents]) if (alive(pid)) process.kill(pid, 'SIGKILL');
    for (const drop of drops) await drop();
    scratch.remove();
  });
  /** A directory of its own, and on PostgreSQL an empty database of its own (the first start saves the key). */
  const place = async (name: string): Promise<ServerPlace> => {
    const dir = join(scratch.path, name);
    mkdirSync(dir);
    const database = engine === 'postgres' ? await createTestDatabase() : undefined;
    if (database) drops.push(database.drop);
    return { configDir: join(dir, 'config'), dataDir: join(dir, 'data'), databaseUrl: database?.url };
  };
  const start = async (where: ServerPlace) => {
    const server = await startServerProcess(where);
    servers.push(server);
    return server;
  };

  test('killed by SIGKILL mid-handler after 39 of 200 events were handled and started again: its agent goes with it, and every event is handled soon after the new agent is ready, once, in order', {
    timeout: 240_000,
  }, async () => {
    const where = await place('kill');
    const first = await start(where);
    const key = savedKey(where);
    const version = await deployFixture(where, 'tally', join(scratch.path, 'kill', 'repo'));
    const task = await api(first.url, key, 'POST', '/tasks', { agent_name: 'default/tally' });
    expect(task.status).toBe(201);
    const log = join(scratch.path, 'kill', 'handled.log');
    // Event 1's handler waits for its gate, so all 200 are queued before any is handled; event 40's
    // holds the handler until the server is dead: it finishes during the agent's SIGTERM grace and
    // its completion never reaches the server (the delivery is in doubt after the restart).
    const gate = (n: number) => join(scratch.path, 'kill', `gate-${n}`);
    for (let n = 1; n <= 200; n++) {
      const sent = await api(first.url, key, 'POST', `/tasks/${task.body.id}/events`, {
        content: { type: 'data', data: { log, n, ...(n === 1 || n === 40 ? { gate: gate(n) } : {}) } },
      });
      expect(sent.status).toBe(201);
    }
    const firstAgent = await waitFor('the agent', () => agentPid(where, version.id));
    agents.push(firstAgent);
    writeFileSync(gate(1), '');
    await waitFor('the handler of event 40', () => existsSync(`${gate(40)}.waiting`), 60_000);

    first.child.kill('SIGKILL');
    expect(await first.exited).toEqual({ code: null, signal: 'SIGKILL' });
    writeFileSync(gate(40), '');
    await waitFor(`agent ${firstAgent} to exit after the server died`, () => !alive(firstAgent));
    expect(handled(log).map(([n]) => n)).toEqual(Array.from({ length: 40 }, (_, i) => i + 1));

    const restartedAt = Date.now();
    const second = await start(where);
    const secondAgent = await waitFor(
      'the agent started again',
      () => {
        const pid = agentPid(where, version.id);
        return pid !== firstAgent && pid > 0 && alive(pid) ? pid : 0;
      },
      60_000,
    );
    agents.push(secondAgent);
    const readyAt = Date.now();
    // Not after the completion lease of event 40 runs out (5 minutes): at the agents' pace (the line printed below).
    await waitFor('all 200 events handled', () => new Set(handled(log).map(([n]) => n)).size === 200, 90_000);
    await waitFor('no delivery open', async () => (await openDeliveries(second.url, key)) === 0, 30_000);

    const lines = handled(log);
    const after = lines.slice(40);
    const rate = (entries: typeof lines) => ((entries.length - 1) / ((entries.at(-1)![2] - entries[0]![2]) / 1000)).toFixed(0);
    console.log(
      `[${engine}] server SIGKILLed with 40 of 200 events handled (the 40th finishing as it died); started again: ` +
        `${new Set(lines.map(([n]) => n)).size} of 200 handled, ${lines.length - new Set(lines.map(([n]) => n)).size} twice; ` +
        `first handled ${((after[0]![2] - readyAt) / 1000).toFixed(1)} s after the new agent was ready, all ${((after.at(-1)![2] - readyAt) / 1000).toFixed(1)} s after ` +
        `(${((after.at(-1)![2] - restartedAt) / 1000).toFixed(1)} s after the restart; ${rate(after)} events/s, ${rate(lines.slice(1, 39))} before the kill)`,
    );
    expect(lines.map(([n]) => n)).toEqual(Array.from({ length: 200 }, (_, i) => i + 1));
    expect(new Set(after.map(([, pid]) => pid))).toEqual(new Set([secondAgent]));

    second.child.kill('SIGTERM');
    expect(await second.exited).toEqual({ code: 0, signal: null });
    expect(alive(secondAgent)).toBe(false);
  });

  test('stopped by `agentctl server stop` (SIGTERM, as a supervisor stops it) or by SIGINT (Ctrl-C), it exits 0 once its agent has exited, and `server stop` reports success', {
    timeout: 240_000,
  }, async () => {
    const where = await place('stop');
    const newAgent = (versionId: string) =>
      waitFor(
        'the agent',
        () => {
          const pid = agentPid(where, versionId);
          return pid > 0 && !agents.includes(pid) && alive(pid) ? pid : 0;
        },
        60_000,
      );
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
