import { afterAll, describe, expect, test } from 'vitest';
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { createTestDatabase, engines } from '../support/service.js';
import { alive, tempDir, waitFor } from './support/agents.js';

/** A server in its own process (test/runtime/support/server-host.ts), killed and restarted by pid. */
async function startHost(dataDir: string, databaseUrl: string | undefined): Promise<{ child: ChildProcess; url: string; key: string | null }> {
  const child = spawn(process.execPath, ['--import', 'tsx', 'test/runtime/support/server-host.ts', dataDir, databaseUrl ?? ''], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const line = await new Promise<string>((done, fail) => {
    createInterface({ input: child.stdout! }).once('line', done);
    child.once('exit', (code) => fail(new Error(`the server exited with ${code}`)));
  });
  return { child, ...(JSON.parse(line) as { url: string; key: string | null }) };
}

describe.each(engines)('the server and its agents (%s)', (engine) => {
  const data = tempDir('agentctl-server-restart-');
  const started: ChildProcess[] = [];
  afterAll(() => {
    for (const child of started) if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    data.remove();
  });

  test('killed with SIGKILL, the server leaves no agent behind; started again, it runs its versions again', { timeout: 180_000 }, async () => {
    const database = engine === 'postgres' ? await createTestDatabase() : undefined;
    try {
      const first = await startHost(data.path, database?.url);
      started.push(first.child);
      const api = async (url: string, method: string, path: string, body?: unknown) => {
        const response = await fetch(url + path, {
          method,
          headers: { authorization: `Bearer ${first.key}`, 'content-type': 'application/json' },
          body: body === undefined ? undefined : JSON.stringify(body),
        });
        return { status: response.status, body: (await response.json()) as any };
      };
      const deployed = await api(first.url, 'POST', '/agents/deploy', {
        agent_name: 'plain',
        branch: 'main',
        git_hash: 'a'.repeat(40),
        author_name: 'Ada',
        author_email: 'ada@example.com',
        image_url: 'local://plain',
        sdk_type: 'alpha_agent_sdk',
        acp_type: 'async',
        replicas: 2,
      });
      expect(deployed.status).toBe(201);
      const versionId: string = deployed.body.version_id;
      await waitFor('ACTIVE', async () => (await api(first.url, 'GET', `/versions/${versionId}`)).body.status === 'ACTIVE');
      const pidFile = (replica: number) => join(data.path, 'runtime', 'data', versionId, String(replica), 'pid');
      const pidsOf = () => [0, 1].map((r) => (existsSync(pidFile(r)) ? Number(readFileSync(pidFile(r), 'utf8')) : 0));
      await waitFor('both replicas listening', () => pidsOf().every((pid) => pid > 0 && alive(pid)));
      const before = pidsOf();

      first.child.kill('SIGKILL');
      await waitFor(`agents ${before.join(', ')} to exit after the server died`, () => before.every((pid) => !alive(pid)));

      for (const r of [0, 1]) rmSync(pidFile(r));
      const second = await startHost(data.path, database?.url);
      started.push(second.child);
      expect(second.key).toBeNull();
      await waitFor('both replicas running again', () => pidsOf().every((pid) => pid > 0 && alive(pid)));
      const after = pidsOf();
      expect(after.some((pid) => before.includes(pid))).toBe(false);
      expect((await api(second.url, 'GET', `/versions/${versionId}`)).body.status).toBe('ACTIVE');

      second.child.kill('SIGTERM');
      await new Promise((done) => second.child.once('exit', done));
      expect(after.some(alive)).toBe(false);
    } finally {
      await database?.drop();
    }
  });

  test('killed with SIGKILL while an agent handles an event, the server started again delivers that event again and it is answered', {
    timeout: 240_000,
  }, async () => {
    const database = engine === 'postgres' ? await createTestDatabase() : undefined;
    const dir = tempDir('agentctl-server-restart-pending-');
    try {
      const first = await startHost(dir.path, database?.url);
      started.push(first.child);
      const api = async (url: string, method: string, path: string, body?: unknown) => {
        const response = await fetch(url + path, {
          method,
          headers: { authorization: `Bearer ${first.key}`, 'content-type': 'application/json' },
          body: body === undefined ? undefined : JSON.stringify(body),
        });
        return { status: response.status, body: (await response.json()) as any };
      };
      const deployed = await api(first.url, 'POST', '/agents/deploy', {
        agent_name: 'blocking',
        branch: 'main',
        git_hash: 'b'.repeat(40),
        author_name: 'Ada',
        author_email: 'ada@example.com',
        image_url: 'local://blocking',
        sdk_type: 'alpha_agent_sdk',
        acp_type: 'async',
      });
      expect(deployed.status).toBe(201);
      await waitFor('ACTIVE', async () => (await api(first.url, 'GET', `/versions/${deployed.body.version_id}`)).body.status === 'ACTIVE', 60_000);
      const task = await api(first.url, 'POST', '/tasks', { agent_name: 'default/blocking' });
      expect(task.status).toBe(201);
      // The blocking agent (test/fixtures/agents/blocking) appends its pid to `started` and waits for `gate`.
      const startedFile = join(dir.path, 'started');
      const gate = join(dir.path, 'gate');
      const event = await api(first.url, 'POST', `/tasks/${task.body.id}/events`, {
        content: { type: 'data', data: { started: startedFile, gate, text: 'pending at the kill' } },
      });
      expect(event.status).toBe(201);
      const handlerPids = () => (existsSync(startedFile) ? readFileSync(startedFile, 'utf8').split('\n').filter(Boolean).map(Number) : []);
      const [agentPid] = await waitFor('the handler to start', () => (handlerPids().length === 1 ? handlerPids() : null), 60_000);

      first.child.kill('SIGKILL');
      await waitFor(`agent ${agentPid} to exit after the server died`, () => !alive(agentPid!));

      const second = await startHost(dir.path, database?.url);
      started.push(second.child);
      const pids = await waitFor('the handler to run again', () => (handlerPids().length === 2 ? handlerPids() : null), 120_000);
      expect(pids[1]).not.toBe(agentPid);
      writeFileSync(gate, '');
      const messages = async () => (await api(second.url, 'GET', `/messages?task_id=${task.body.id}`)).body.messages as any[];
      await waitFor('the answer', async () => (await messages()).length > 0, 30_000);
      expect((await messages()).map((m) => [m.author, m.content])).toEqual([['agent', { type: 'text', text: `handled pending at the kill in ${pids[1]}` }]]);
      expect((await api(second.url, 'GET', `/events?task_id=${task.body.id}`)).body.events.map((e: any) => e.id)).toEqual([event.body.id]);

      second.child.kill('SIGTERM');
      await new Promise((done) => second.child.once('exit', done));
      expect(alive(pids[1]!)).toBe(false);
    } finally {
      await database?.drop();
      dir.remove();
    }
  });
});
