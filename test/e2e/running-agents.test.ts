import { readdirSync, readFileSync, readlinkSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { execa } from 'execa';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { tempDir } from '../cli/support.js';
import { freePort } from '../support/ports.js';
import { createTestDatabase } from '../support/service.js';

const BIN = path.resolve('bin/agentctl.js');
const GIT_ENV = { GIT_AUTHOR_NAME: 'Ada', GIT_AUTHOR_EMAIL: 'ada@example.com', GIT_COMMITTER_NAME: 'Ada', GIT_COMMITTER_EMAIL: 'ada@example.com' };

const isAlive = (pid: number) => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

const engines = ['pglite', ...(process.env.TEST_DATABASE_URL ? ['postgres'] : [])] as const;

// The README quick start's story through the built binary: init, server start (local runtime), deploy
// from git, a task answered by a real agent process, a sticky second deploy, migration to v2, logs
// of both versions, rollback, and no agent process left once the server stops.
describe.each(engines)('e2e on %s: a deployed agent answers, migrates to v2 and rolls back', (engine) => {
  const scratch = tempDir('agentctl-e2e2-');
  const botDir = path.join(scratch.dir, 'my-bot');
  let databaseUrl: string | undefined;
  let dropDatabase: (() => Promise<void>) | undefined;
  const env = () => ({
    AGENTCTL_CONFIG_DIR: path.join(scratch.dir, 'config'),
    AGENTCTL_DATA_DIR: path.join(scratch.dir, 'data'),
    AGENTCTL_POLL_INTERVAL_MS: '100',
    CI: 'true',
    ...GIT_ENV,
    AGENTCTL_API_KEY: undefined,
    AGENTCTL_BASE_URL: undefined,
    AGENTCTL_PROFILE: undefined,
    DATABASE_URL: databaseUrl,
  });
  const agentctl = (args: string[], cwd = botDir) => execa(process.execPath, [BIN, ...args], { env: env(), extendEnv: true, cwd, reject: false });
  const json = async (args: string[], cwd = botDir) => {
    const result = await agentctl([...args, '--json'], cwd);
    if (result.exitCode !== 0) throw new Error(`agentctl ${args.join(' ')} exited ${result.exitCode}: ${result.stderr}`);
    return JSON.parse(result.stdout);
  };
  /** The agent's messages of a task, once one matches. */
  const replyMatching = async (taskId: string, pattern: RegExp): Promise<string> => {
    const deadline = Date.now() + 60_000;
    for (;;) {
      const { messages } = await json(['tasks', 'messages', taskId]);
      const found = messages.find((m: any) => m.author === 'agent' && m.content.type === 'text' && pattern.test(m.content.text));
      if (found) return found.content.text;
      if (Date.now() > deadline) throw new Error(`no agent message matching ${pattern}: ${JSON.stringify(messages)}`);
      await new Promise((r) => setTimeout(r, 200));
    }
  };
  let agentPids: number[] = [];

  beforeAll(async () => {
    if (engine === 'postgres') {
      const db = await createTestDatabase(process.env.TEST_DATABASE_URL, 'agentctl_e2e');
      databaseUrl = db.url;
      dropDatabase = db.drop;
    }
    const init = await agentctl(['init', 'my-bot'], scratch.dir);
    expect(init.exitCode, init.stderr).toBe(0);
    const started = await agentctl(['server', 'start', '--detach', '--port', String(await freePort()), '--json']);
    expect(started.exitCode, started.stderr).toBe(0);
  });

  afterAll(async () => {
    await agentctl(['server', 'stop']);
    // No agent outlives the server that started it.
    const deadline = Date.now() + 15_000;
    while (agentPids.some(isAlive) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 100));
    const orphans = agentPids.filter(isAlive);
    for (const pid of orphans) process.kill(pid, 'SIGKILL');
    await dropDatabase?.();
    scratch.remove();
    expect(orphans).toEqual([]);
  });

  test('init, deploy, send, migrate, logs, rollback', { timeout: 300_000 }, async () => {
    expect(JSON.parse(readFileSync(path.join(botDir, 'agentctl.json'), 'utf8')).agent).toBe('default/my-bot');

    // deploy with no --image: the commit's tree becomes the source; the local runtime runs it.
    const v1 = await json(['deploy']);
    expect(v1).toMatchObject({ status: 'ACTIVE', number: 1 });

    const task = await json(['tasks', 'create', '--params', '{"topic":"x"}']);
    expect(task.current_version_id).toBe(v1.id);
    expect(await replyMatching(task.id, /about x/)).toBe('Hello! Send me anything about x and I will echo it.');

    // tasks watch follows the task through the whole story (migration and rollback included) and
    // exits when it ends; its JSON Lines are read once it has.
    const watch = execa(process.execPath, [BIN, 'tasks', 'watch', task.id, '--json'], { env: env(), extendEnv: true, cwd: botDir, reject: false });
    const sent = await agentctl(['tasks', 'send', task.id, 'hello']);
    expect(sent.exitCode, sent.stderr).toBe(0);
    expect(await replyMatching(task.id, /hello/)).toBe('echo #1: hello');

    // A second commit, deployed sticky: the task stays on v1 until it is moved.
    const source = path.join(botDir, 'src', 'index.ts');
    writeFileSync(source, readFileSync(source, 'utf8').replace('`echo #${count}: ${text}`', '`v2 echo #${count}: ${text}`'));
    await execa('git', ['commit', '-q', '-am', 'v2: say which version answers'], { cwd: botDir, env: GIT_ENV });
    const v2 = await json(['deploy', '--sticky']);
    expect(v2).toMatchObject({ status: 'ACTIVE', number: 2 });
    expect((await json(['tasks', 'get', task.id])).current_version_id).toBe(v1.id);

    const migrated = await json(['tasks', 'migrate', '--from', 'v1', '--to-latest', '--yes']);
    expect(migrated.to_version.id).toBe(v2.id);
    expect(migrated.tasks.map((t: any) => t.id)).toEqual([task.id]);
    expect(await agentctl(['tasks', 'send', task.id, 'again'])).toMatchObject({ exitCode: 0 });
    expect(await replyMatching(task.id, /again/)).toBe('v2 echo #2: again');
    // v1's last task left: it retired.
    const versions = await json(['versions', 'list']);
    expect(versions.versions.map((v: any) => [v.number, v.status])).toEqual([
      [2, 'ACTIVE'],
      [1, 'RETIRED'],
    ]);

    // Logs of both versions (each agent prints where it listens, with its pid in the process list).
    const logs = await json(['logs', '--agent', 'default/my-bot']).catch(async () => {
      const out = await agentctl(['logs', '--agent', 'default/my-bot', '--json']);
      return out.stdout
        .trim()
        .split('\n')
        .map((l) => JSON.parse(l));
    });
    const lines: any[] = Array.isArray(logs) ? logs : logs.lines;
    expect(new Set(lines.map((l) => l.version_id))).toEqual(new Set([v1.id, v2.id]));

    // Rollback: v2 is rolled back, v1 runs again and the task follows.
    const rolledBack = await json(['rollback', '--branch', 'main', '--yes']);
    expect(JSON.stringify(rolledBack)).toContain(v1.id);
    const deadline = Date.now() + 60_000;
    while ((await json(['versions', 'get', v1.id])).status !== 'ACTIVE') {
      if (Date.now() > deadline) throw new Error('v1 did not come back');
      await new Promise((r) => setTimeout(r, 200));
    }
    expect((await json(['tasks', 'get', task.id])).current_version_id).toBe(v1.id);
    expect(await agentctl(['tasks', 'send', task.id, 'back'])).toMatchObject({ exitCode: 0 });
    expect(await replyMatching(task.id, /back/)).toMatch(/^echo #3: back$/);

    agentPids = findAgentPids(scratch.dir);
    expect(agentPids.length).toBeGreaterThan(0);

    // Canceling the task ends the watch: exit 1 (the task did not complete), every record in order.
    expect(await agentctl(['tasks', 'cancel', task.id])).toMatchObject({ exitCode: 0 });
    const watched = await watch;
    expect(watched.exitCode, watched.stderr).toBe(1);
    const records = watched.stdout
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line));
    const sequence = records.map((r) => r.sequence_id);
    expect(sequence).toEqual(sequence.map((_, i) => i + 1));
    expect(records.filter((r) => r.kind === 'event').map((r) => r.data.content.text)).toEqual(['hello', 'again', 'back']);
    expect(records.filter((r) => r.kind === 'message').map((r) => r.data.content.text)).toEqual([
      'Hello! Send me anything about x and I will echo it.',
      'echo #1: hello',
      'v2 echo #2: again',
      'echo #3: back',
    ]);
    expect(records.at(-1)).toMatchObject({ kind: 'task', data: { status: 'CANCELED' } });
  });
});

/** Agent processes started for this test's data directory (their cwd is under it). */
function findAgentPids(root: string): number[] {
  const pids: number[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const cwd = readlinkSync(`/proc/${entry}/cwd`);
      if (cwd.startsWith(root) && Number(entry) !== process.pid) pids.push(Number(entry));
    } catch {
      /* gone, or not ours */
    }
  }
  return pids;
}
