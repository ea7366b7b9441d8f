import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, describe, expect, test } from 'vitest';
import { processesUnder, until, useE2e } from '../support/e2e.js';
import { engines } from '../support/service.js';

// The README quick start's story through the built binary: init, server start (local runtime), deploy
// from git, a task answered by a real agent process, a sticky second deploy, migration to v2, logs
// of both versions, rollback, and no agent process left once the server stops.
describe.each(engines)('e2e on %s: a deployed agent answers, migrates to v2 and rolls back', (engine) => {
  let agentPids: number[] = [];
  // Registered before the harness, so it runs after its teardown: no agent outlives the server that started it.
  afterAll(() => expect(e2e.killed.filter((pid) => agentPids.includes(pid))).toEqual([]));
  const e2e = useE2e(engine, { scratch: 'agentctl-e2e2', project: 'my-bot' });
  const { agentctl, json } = e2e;
  /** The agent's messages of a task, once one matches. */
  const replyMatching = async (taskId: string, pattern: RegExp): Promise<string> => {
    const agentText = (messages: any[]) =>
      messages.find((m) => m.author === 'agent' && m.content.type === 'text' && pattern.test(m.content.text))?.content.text;
    const messages = await until(
      `an agent message matching ${pattern}`,
      async () => (await json(['tasks', 'messages', taskId])).messages,
      (found) => agentText(found) !== undefined,
    );
    return agentText(messages);
  };

  test('init, deploy, send, migrate, logs, rollback', { timeout: 300_000 }, async () => {
    expect(JSON.parse(readFileSync(path.join(e2e.projectDir, 'agentctl.json'), 'utf8')).agent).toBe('default/my-bot');

    // deploy with no --image: the commit's tree becomes the source; the local runtime runs it.
    const v1 = await json(['deploy']);
    expect(v1).toMatchObject({ status: 'ACTIVE', number: 1 });

    const task = await json(['tasks', 'create', '--params', '{"topic":"x"}']);
    expect(task.current_version_id).toBe(v1.id);
    expect(await replyMatching(task.id, /about x/)).toBe('Hello! Send me anything about x and I will echo it.');

    // tasks watch follows the task through the whole story (migration and rollback included) and
    // exits when it ends; its JSON Lines are read once it has.
    const watch = agentctl(['tasks', 'watch', task.id, '--json']);
    const sent = await agentctl(['tasks', 'send', task.id, 'hello']);
    expect(sent.exitCode, sent.stderr).toBe(0);
    expect(await replyMatching(task.id, /hello/)).toBe('echo #1: hello');

    // A second commit, deployed sticky: the task stays on v1 until it is moved.
    const source = path.join(e2e.projectDir, 'src', 'index.ts');
    writeFileSync(source, readFileSync(source, 'utf8').replace('`echo #${count}: ${text}`', '`v2 echo #${count}: ${text}`'));
    await e2e.git(['commit', '-q', '-am', 'v2: say which version answers']);
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
    await until(
      'v1 back',
      () => json(['versions', 'get', v1.id]),
      (v) => v.status === 'ACTIVE',
    );
    expect((await json(['tasks', 'get', task.id])).current_version_id).toBe(v1.id);
    expect(await agentctl(['tasks', 'send', task.id, 'back'])).toMatchObject({ exitCode: 0 });
    expect(await replyMatching(task.id, /back/)).toMatch(/^echo #3: back$/);

    agentPids = processesUnder(e2e.dir).filter((pid) => pid !== e2e.server.pid);
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
