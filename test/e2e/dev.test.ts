import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { execa, type ResultPromise } from 'execa';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { tempDir } from '../cli/support.js';
import { freePort } from '../support/ports.js';
import { createTestDatabase } from '../support/service.js';

const BIN = path.resolve('bin/agentctl.js');
const GIT_ENV = { GIT_AUTHOR_NAME: 'Ada', GIT_AUTHOR_EMAIL: 'ada@example.com', GIT_COMMITTER_NAME: 'Ada', GIT_COMMITTER_EMAIL: 'ada@example.com' };
const engines = ['pglite', ...(process.env.TEST_DATABASE_URL ? ['postgres'] : [])] as const;
// local: `server start` as a developer runs it; none: stands for a remote server, which runs no
// agents and cannot reach this machine (dev pulls its deliveries either way).
const shapes = engines.flatMap((engine) => (['local', 'none'] as const).map((runtime) => [engine, runtime] as const));

describe.each(shapes)('e2e on %s, runtime %s: agentctl dev', (engine, runtime) => {
  const scratch = tempDir('agentctl-dev-');
  const botDir = path.join(scratch.dir, 'bot');
  let databaseUrl: string | undefined;
  let dropDatabase: (() => Promise<void>) | undefined;
  let dev: ResultPromise | undefined;
  let devOutput = '';
  let port = 0;
  let server: { pid: number; url: string };
  const startServer = async () => {
    const started = await agentctl(['server', 'start', '--detach', '--runtime', runtime, '--port', String(port), '--json']);
    expect(started.exitCode, started.stderr).toBe(0);
    return JSON.parse(started.stdout) as { pid: number; url: string };
  };
  const startDev = (args: string[]) => {
    devOutput = '';
    dev = execa(process.execPath, [BIN, 'dev', ...args], { env: env(), extendEnv: true, cwd: botDir, reject: false, all: true });
    dev.all!.on('data', (chunk: Buffer) => (devOutput += chunk.toString()));
    return dev;
  };
  /** The runtime key dev gave its agent process (from the process's environment). */
  const runtimeKeyOf = (agentPid: number) =>
    readFileSync(`/proc/${agentPid}/environ`, 'utf8')
      .split('\0')
      .find((entry) => entry.startsWith('AGENTCTL_API_KEY='))!
      .slice('AGENTCTL_API_KEY='.length);
  const statusWithKey = async (key: string, taskId: string) =>
    (await fetch(`${server.url}/tasks/${taskId}`, { headers: { authorization: `Bearer ${key}` } })).status;
  const servingPid = () => Number([...devOutput.matchAll(/pid (\d+), port/g)].at(-1)![1]);
  const env = () => ({
    AGENTCTL_CONFIG_DIR: path.join(scratch.dir, 'config'),
    AGENTCTL_DATA_DIR: path.join(scratch.dir, 'data'),
    CI: 'true',
    ...GIT_ENV,
    AGENTCTL_API_KEY: undefined,
    AGENTCTL_BASE_URL: undefined,
    AGENTCTL_PROFILE: undefined,
    DATABASE_URL: databaseUrl,
  });
  const agentctl = (args: string[], cwd = botDir) => execa(process.execPath, [BIN, ...args], { env: env(), extendEnv: true, cwd, reject: false });
  const json = async (args: string[]) => {
    const result = await agentctl([...args, '--json']);
    if (result.exitCode !== 0) throw new Error(`agentctl ${args.join(' ')} exited ${result.exitCode}: ${result.stderr}`);
    return JSON.parse(result.stdout);
  };
  const until = async <T>(what: string, check: () => Promise<T | undefined> | T | undefined): Promise<T> => {
    const deadline = Date.now() + 60_000;
    for (;;) {
      const value = await check();
      if (value !== undefined) return value;
      if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}; dev said:\n${devOutput}`);
      await new Promise((r) => setTimeout(r, 100));
    }
  };
  const agentTexts = async (taskId: string): Promise<string[]> =>
    (await json(['tasks', 'messages', taskId, '--limit', '500'])).messages
      .filter((m: any) => m.author === 'agent' && m.content.type === 'text')
      .map((m: any) => m.content.text);
  const reply = (taskId: string, text: string) => until(`the reply "${text}"`, async () => ((await agentTexts(taskId)).includes(text) ? text : undefined));
  const count = (pattern: RegExp) => devOutput.split('\n').filter((line) => pattern.test(line)).length;
  const source = path.join(botDir, 'src', 'index.ts');
  const edit = (change: (text: string) => string) => writeFileSync(source, change(readFileSync(source, 'utf8')));

  beforeAll(async () => {
    if (engine === 'postgres') {
      const db = await createTestDatabase(process.env.TEST_DATABASE_URL, 'agentctl_dev_e2e');
      databaseUrl = db.url;
      dropDatabase = db.drop;
    }
    expect((await agentctl(['init', 'bot'], scratch.dir)).exitCode).toBe(0);
    port = await freePort();
    server = await startServer();
  });

  afterAll(async () => {
    if (dev?.pid && alive(dev.pid)) process.kill(dev.pid, 'SIGKILL');
    await agentctl(['server', 'stop']);
    await dropDatabase?.();
    scratch.remove();
  });

  test('dev answers, reloads on save, survives a syntax error, answers a delivery sent during a reload once, and retires on Ctrl-C', {
    timeout: 300_000,
  }, async () => {
    const original = readFileSync(source, 'utf8');
    // Without agentctl.json: how to make one, and a non-zero exit.
    const outside = await agentctl(['dev'], scratch.dir);
    expect(outside.exitCode).toBe(2);
    expect(outside.stderr).toContain('No agentctl.json in');
    expect(outside.stderr).toContain('agentctl init');

    dev = startDev(['--user', 'Ada Lovelace']);
    await until('the agent to be ready', () => (count(/agent ready in/) >= 1 ? true : undefined));
    expect(devOutput).toContain('serves dev/ada-lovelace');

    // tasks create in the directory goes to the dev branch while dev runs.
    const created = await agentctl(['tasks', 'create', '--name', 'first']);
    expect(created.stderr).toContain('On dev/ada-lovelace: agentctl dev');
    const task = await json(['tasks', 'get', 'first']);
    const [devVersion] = (await json(['versions', 'list', '--branch', 'dev/ada-lovelace'])).versions;
    expect(task.current_version_id).toBe(devVersion.id);
    expect(devVersion).toMatchObject({ status: 'ACTIVE', image_url: expect.stringMatching(/^dev:\/\/ada-lovelace@/) });
    expect((await agentctl(['tasks', 'send', task.id, 'hello'])).exitCode).toBe(0);
    await reply(task.id, 'echo #1: hello');
    // The conversation is printed beside the agent's logs.
    await until('the conversation in the output', () => (devOutput.includes('← echo #1: hello') ? true : undefined));

    // A save restarts it: the new code answers.
    edit((text) => text.replace('`echo #${count}: ${text}`', '`v2 echo #${count}: ${text}`'));
    await until('the restart', () => (count(/agent ready in/) >= 2 ? true : undefined));
    expect((await agentctl(['tasks', 'send', task.id, 'again'])).exitCode).toBe(0);
    await reply(task.id, 'v2 echo #2: again');

    // A syntax error: the error is shown and the last good process keeps serving.
    const good = readFileSync(source, 'utf8');
    edit((text) => `${text}\nconst broken = (;\n`);
    await until('the failed start', () => (count(/exited \(code 1\) before it was ready; still serving/) >= 1 ? true : undefined));
    // The agent's lines go to dev's stdout and its notes to stderr: two pipes, read here in either order.
    await until('the syntax error shown', () => (devOutput.includes('SyntaxError') ? true : undefined));
    expect((await agentctl(['tasks', 'send', task.id, 'third'])).exitCode).toBe(0);
    await reply(task.id, 'v2 echo #3: third');

    // Fixed, and an event sent while the new process starts: it waits, and is answered once, by the new code.
    const readyBefore = count(/agent ready in/);
    writeFileSync(source, good.replace('`v2 echo #', '`v3 echo #'));
    await until('the reload to start', () => (count(/changed: starting the agent/) >= 3 ? true : undefined));
    expect((await agentctl(['tasks', 'send', task.id, 'during'])).exitCode).toBe(0);
    await until('the reload', () => (count(/agent ready in/) > readyBefore ? true : undefined));
    await reply(task.id, 'v3 echo #4: during');
    expect((await agentctl(['tasks', 'send', task.id, 'after'])).exitCode).toBe(0);
    await reply(task.id, 'v3 echo #5: after');
    expect((await agentTexts(task.id)).filter((text) => text.endsWith(': during'))).toEqual(['v3 echo #4: during']);

    // Ctrl-C: the agent stops, the dev version is retired (its task terminated), and tasks go to main again.
    const agentPids = [...devOutput.matchAll(/pid (\d+), port/g)].map((m) => Number(m[1]));
    process.kill(dev.pid!, 'SIGINT');
    const result = await dev;
    expect(result.exitCode).toBe(0);
    expect(devOutput).toContain('dev/ada-lovelace retired');
    expect((await json(['versions', 'get', devVersion.id])).status).toBe('RETIRED');
    expect((await json(['tasks', 'get', task.id])).status).toBe('TERMINATED');
    await until('the agent processes to exit', () => (agentPids.every((pid) => !alive(pid)) ? true : undefined));
    writeFileSync(source, original);
  });

  test('a server stopped and started again mid-dev: dev reconnects, and an event sent after is answered once', { timeout: 300_000 }, async () => {
    const running = startDev(['--user', 'grace']);
    await until('the agent to be ready', () => (count(/agent ready in/) >= 1 ? true : undefined));
    expect((await agentctl(['tasks', 'create', '--name', 'across-restart'])).exitCode).toBe(0);
    const task = await json(['tasks', 'get', 'across-restart']);
    await reply(task.id, 'Hello! Send me anything and I will echo it.');

    // Stopped by its pid (as a crash or a redeploy would), then started on the same data and port.
    process.kill(server.pid, 'SIGTERM');
    await until('the server to exit', () => (alive(server.pid) ? undefined : true));
    await until('dev to notice', () => (devOutput.includes('lost the dev stream') ? true : undefined));
    server = await startServer();
    await until('dev to reconnect', () => (devOutput.includes('deliveries flow again') ? true : undefined));

    expect((await agentctl(['tasks', 'send', task.id, 'after restart'])).exitCode).toBe(0);
    await reply(task.id, 'echo #1: after restart');
    expect((await agentTexts(task.id)).filter((text) => text.endsWith(': after restart'))).toEqual(['echo #1: after restart']);

    process.kill(running.pid!, 'SIGINT');
    expect((await running).exitCode).toBe(0);
    expect((await json(['tasks', 'get', task.id])).status).toBe('TERMINATED');
  });

  test('the server and dev killed mid-handler (after its message, before its completion): the next dev gets the delivery at once, then the next event', {
    timeout: 300_000,
  }, async () => {
    const original = readFileSync(source, 'utf8');
    const release = path.join(scratch.dir, 'release-hold');
    // An event "hold" keeps its handler running after its message until the test releases it.
    edit(
      (text) =>
        `import { existsSync } from 'node:fs';\n${text.replace(
          'await ctx.messages.send(`echo #${count}: ${text}`);',
          `$&\n    while (text === 'hold' && !existsSync(${JSON.stringify(release)})) await new Promise((r) => setTimeout(r, 20));`,
        )}`,
    );
    const first = startDev(['--user', 'hopper']);
    await until('the agent to be ready', () => (count(/agent ready in/) >= 1 ? true : undefined));
    expect((await agentctl(['tasks', 'create', '--name', 'mid-handler'])).exitCode).toBe(0);
    const task = await json(['tasks', 'get', 'mid-handler']);
    await reply(task.id, 'Hello! Send me anything and I will echo it.');
    const agentPid = servingPid();
    expect((await agentctl(['tasks', 'send', task.id, 'hold'])).exitCode).toBe(0);
    await reply(task.id, 'echo #1: hold');

    // Killed, not stopped: nothing gives back the delivery the dead server's stream held (leased to it).
    process.kill(server.pid, 'SIGKILL');
    process.kill(first.pid!, 'SIGKILL');
    await first;
    await until('the server, dev and its agent to be gone', () => ([server.pid, agentPid].some(alive) ? undefined : true));
    writeFileSync(release, '');
    server = await startServer();
    const second = startDev(['--user', 'hopper']);
    await until('the agent to be ready', () => (count(/agent ready in/) >= 1 ? true : undefined));

    // The held delivery comes again at once (not when its five-minute lease runs out): the new process
    // runs it (at least once: its predecessor never finished it), then the event sent after it.
    expect((await agentctl(['tasks', 'send', task.id, 'next'])).exitCode).toBe(0);
    await reply(task.id, 'echo #3: next');
    expect(await agentTexts(task.id)).toEqual(['Hello! Send me anything and I will echo it.', 'echo #1: hold', 'echo #2: hold', 'echo #3: next']);

    process.kill(second.pid!, 'SIGINT');
    expect((await second).exitCode).toBe(0);
    writeFileSync(source, original);
  });

  test('--keep leaves the task on the dev branch for the next dev, which serves it; each run revokes its runtime key on exit', {
    timeout: 300_000,
  }, async () => {
    const first = startDev(['--user', 'keeper', '--keep']);
    await until('the agent to be ready', () => (count(/agent ready in/) >= 1 ? true : undefined));
    expect((await agentctl(['tasks', 'create', '--name', 'kept'])).exitCode).toBe(0);
    const task = await json(['tasks', 'get', 'kept']);
    await reply(task.id, 'Hello! Send me anything and I will echo it.');
    const firstKey = runtimeKeyOf(servingPid());
    expect(await statusWithKey(firstKey, task.id)).toBe(200);

    process.kill(first.pid!, 'SIGINT');
    expect((await first).exitCode).toBe(0);
    expect(devOutput).toContain('and its tasks stay on dev/keeper for the next agentctl dev');
    expect((await json(['versions', 'get', task.current_version_id])).status).toBe('ACTIVE');
    expect((await json(['tasks', 'get', task.id])).status).toBe('RUNNING');
    expect(await statusWithKey(firstKey, task.id)).toBe(401);

    // The next dev on the same branch takes the task over.
    const second = startDev(['--user', 'keeper']);
    await until('the agent to be ready', () => (count(/agent ready in/) >= 1 ? true : undefined));
    const [newest] = (await json(['versions', 'list', '--branch', 'dev/keeper'])).versions;
    expect(newest.id).not.toBe(task.current_version_id);
    expect((await agentctl(['tasks', 'send', task.id, 'welcome back'])).exitCode).toBe(0);
    await reply(task.id, 'echo #1: welcome back');
    expect((await json(['tasks', 'get', task.id])).current_version_id).toBe(newest.id);
    const secondKey = runtimeKeyOf(servingPid());

    // Without --keep, SIGTERM retires the dev version as Ctrl-C does, and its key is revoked too.
    process.kill(second.pid!, 'SIGTERM');
    expect((await second).exitCode).toBe(0);
    expect((await json(['versions', 'get', newest.id])).status).toBe('RETIRED');
    expect(await statusWithKey(secondKey, task.id)).toBe(401);
  });
});

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}
