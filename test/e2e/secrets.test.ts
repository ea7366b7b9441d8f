import { createHash, randomUUID } from 'node:crypto';
import { existsSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { execa } from 'execa';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { tempDir } from '../cli/support.js';
import { freePort } from '../support/ports.js';
import { createTestDatabase } from '../support/service.js';

const BIN = path.resolve('bin/agentctl.js');
const GIT_ENV = { GIT_AUTHOR_NAME: 'Ada', GIT_AUTHOR_EMAIL: 'ada@example.com', GIT_COMMITTER_NAME: 'Ada', GIT_COMMITTER_EMAIL: 'ada@example.com' };
const engines = ['pglite', ...(process.env.TEST_DATABASE_URL ? ['postgres'] : [])] as const;
const sha256 = (text: string) => createHash('sha256').update(text).digest('hex');

/**
 * The agent of this test: it says which of two expected values SERVICE_TOKEN holds, by comparing
 * hashes. Only hashes are in its source, and only a word ("first", "second", "unknown") in its replies.
 */
const agentSource = (first: string, second: string) => `import { createHash } from 'node:crypto';
import { AgentServer } from 'agentctl/adk';

const KNOWN = { ${JSON.stringify(sha256(first))}: 'first', ${JSON.stringify(sha256(second))}: 'second' };

const server = new AgentServer({
  async onCreate(ctx) {
    const token = process.env.SERVICE_TOKEN;
    const hash = token === undefined ? '' : createHash('sha256').update(token).digest('hex');
    await ctx.messages.send(\`SERVICE_TOKEN is \${KNOWN[hash] ?? (token === undefined ? 'missing' : 'unknown')}\`);
  },
  async onEvent() {},
  async onCancel() {},
});

await server.listen();
`;

/** The files under `dir`, not following symbolic links (the agent's node_modules links to this checkout). */
function* filesIn(dir: string): Generator<string> {
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const file = path.join(dir, entry.name);
    if (entry.isDirectory()) yield* filesIn(file);
    else if (entry.isFile()) yield file;
  }
}

/**
 * Every file under `dir` (binary files too: PGlite's pages, logs, the agent's source), read one at a
 * time, with which of `needles` it holds.
 */
function scanFiles(dir: string, needles: string[]): Array<{ file: string; holds: string[] }> {
  const found: Array<{ file: string; holds: string[] }> = [];
  for (const file of filesIn(dir)) {
    if (statSync(file).size > 256 * 1024 * 1024) continue;
    const text = readFileSync(file).toString('latin1');
    found.push({ file, holds: needles.filter((needle) => text.includes(needle)) });
  }
  return found;
}

// issue 23, part 2 "done when": a secret set with the CLI is read by the agent and appears in nothing
// else: not in the data directory (logs, database files, the agent's source), not in any answer or
// --debug trace of the CLI calls this test makes.
describe.each(engines)('e2e on %s: a secret set with the CLI reaches the agent and nothing else', (engine) => {
  const scratch = tempDir('agentctl-e2e-secrets-');
  const botDir = path.join(scratch.dir, 'my-bot');
  const dataDir = path.join(scratch.dir, 'data');
  const FIRST = `first-${randomUUID()}`;
  const SECOND = `second-${randomUUID()}`;
  let databaseUrl: string | undefined;
  let dropDatabase: (() => Promise<void>) | undefined;
  /** Everything every CLI call printed (stdout and stderr, with --debug traces of every request and answer). */
  const transcript: string[] = [];
  const env = () => ({
    AGENTCTL_CONFIG_DIR: path.join(scratch.dir, 'config'),
    AGENTCTL_DATA_DIR: dataDir,
    AGENTCTL_POLL_INTERVAL_MS: '100',
    CI: 'true',
    ...GIT_ENV,
    AGENTCTL_API_KEY: undefined,
    AGENTCTL_BASE_URL: undefined,
    AGENTCTL_PROFILE: undefined,
    AGENTCTL_SECRETS_KEY: undefined,
    DATABASE_URL: databaseUrl,
  });
  const agentctl = async (args: string[], options: { input?: string; debug?: boolean } = {}) => {
    const result = await execa(process.execPath, [BIN, ...args, ...(options.debug === false ? [] : ['--debug'])], {
      env: env(),
      extendEnv: true,
      cwd: botDir,
      reject: false,
      ...(options.input !== undefined ? { input: options.input } : {}),
    });
    transcript.push(`$ agentctl ${args.join(' ')}\n${result.stdout}\n${result.stderr}`);
    return result;
  };
  const json = async (args: string[], options: { input?: string } = {}) => {
    const result = await agentctl([...args, '--json'], options);
    if (result.exitCode !== 0) throw new Error(`agentctl ${args.join(' ')} exited ${result.exitCode}: ${result.stderr}`);
    return JSON.parse(result.stdout);
  };
  /** A new task's greeting: which value the agent found in SERVICE_TOKEN. */
  const tokenSeen = async (): Promise<string> => {
    const task = await json(['tasks', 'create']);
    const deadline = Date.now() + 60_000;
    for (;;) {
      const { messages } = await json(['tasks', 'messages', task.id]);
      const found = messages.find((m: any) => m.author === 'agent' && m.content.type === 'text');
      if (found) return found.content.text;
      if (Date.now() > deadline) throw new Error(`the agent did not answer task ${task.id}`);
      await new Promise((r) => setTimeout(r, 200));
    }
  };

  beforeAll(async () => {
    if (engine === 'postgres') {
      const db = await createTestDatabase(process.env.TEST_DATABASE_URL, 'agentctl_e2e');
      databaseUrl = db.url;
      dropDatabase = db.drop;
    }
    const init = await execa(process.execPath, [BIN, 'init', 'my-bot'], { env: env(), extendEnv: true, cwd: scratch.dir, reject: false });
    expect(init.exitCode, init.stderr).toBe(0);
    writeFileSync(path.join(botDir, 'src', 'index.ts'), agentSource(FIRST, SECOND));
    await execa('git', ['commit', '-q', '-am', 'Say which SERVICE_TOKEN the agent got'], { cwd: botDir, env: GIT_ENV });
    const started = await agentctl(['server', 'start', '--detach', '--port', String(await freePort()), '--log-level', 'debug']);
    expect(started.exitCode, started.stderr).toBe(0);
  });

  afterAll(async () => {
    await agentctl(['server', 'stop']);
    // A stop that did not finish (a loaded machine) leaves no server behind: stopped by its pid.
    const pidFile = path.join(dataDir, 'server.pid');
    const pid = existsSync(pidFile) ? Number(readFileSync(pidFile, 'utf8').trim()) : 0;
    if (pid > 0) {
      try {
        process.kill(pid, 'SIGKILL');
      } catch {
        // already gone
      }
    }
    await dropDatabase?.();
    scratch.remove();
  });

  test('set --value-stdin, deploy, the agent reads it; a change restarts it with the new value; the value is nowhere else', { timeout: 300_000 }, async () => {
    // Before the agent exists: a 404 that names it.
    const early = await agentctl(['secrets', 'set', 'SERVICE_TOKEN', '--value-stdin'], { input: FIRST });
    expect(early.exitCode).toBe(3);
    expect(early.stderr).toContain('Agent default/my-bot was not found');

    const v1 = await json(['deploy']);
    expect(v1).toMatchObject({ status: 'ACTIVE', number: 1 });
    expect(await tokenSeen()).toBe('SERVICE_TOKEN is missing');

    const set = await json(['secrets', 'set', 'SERVICE_TOKEN', '--value-stdin'], { input: `${FIRST}\n` });
    expect(set).toMatchObject({ name: 'SERVICE_TOKEN', scope: 'agent', environment: null, revision: 1 });
    // The running version restarts with it (its replica replaced once the new one is ready).
    await expect.poll(tokenSeen, { timeout: 60_000, interval: 500 }).toBe('SERVICE_TOKEN is first');

    const listed = await json(['secrets', 'list']);
    expect(listed.secrets.map((s: any) => [s.name, s.scope, s.environment, s.revision])).toEqual([['SERVICE_TOKEN', 'agent', null, 1]]);
    const table = await agentctl(['secrets', 'list'], { debug: false });
    // Piped: tab-separated rows, no header.
    expect(table.stdout.trim()).toBe(`SERVICE_TOKEN\tagent\t\t1\t${listed.secrets[0].updated_at}`);

    // A value from a file, replacing the first: the agent gets it after its restart.
    const valueFile = path.join(scratch.dir, 'token.txt');
    writeFileSync(valueFile, `${SECOND}\n`, { mode: 0o600 });
    expect((await json(['secrets', 'set', 'SERVICE_TOKEN', '--value-file', valueFile])).revision).toBe(2);
    await expect.poll(tokenSeen, { timeout: 60_000, interval: 500 }).toBe('SERVICE_TOKEN is second');

    // Never from an argument, never without a value.
    const noValue = await agentctl(['secrets', 'set', 'SERVICE_TOKEN']);
    expect(noValue.exitCode).toBe(2);
    expect(noValue.stderr).toContain('Setting SERVICE_TOKEN needs its value: pass --value-stdin');
    const badName = await agentctl(['secrets', 'set', 'SERVICE-TOKEN', '--value-stdin'], { input: FIRST });
    expect(badName.exitCode).toBe(2);
    expect(badName.stderr).toContain('path.secret_name');

    // The --debug traces show the request, with the value redacted.
    const traced = transcript.filter((t) => t.startsWith('$ agentctl secrets set SERVICE_TOKEN --value-stdin'));
    expect(traced.some((t) => t.includes('"value":"[redacted]"'))).toBe(true);

    // Nowhere else: every answer and trace of this test, and every file of the data directory.
    const base64 = (value: string) => Buffer.from(value).toString('base64');
    const needles = [FIRST, SECOND, base64(FIRST), base64(SECOND), '[debug]'];
    const everything = [
      ...transcript.map((text, i) => ({ file: `agentctl call ${i}`, holds: needles.filter((needle) => text.includes(needle)) })),
      ...scanFiles(dataDir, needles),
    ];
    expect(everything.filter(({ holds }) => holds.includes('[debug]')).length).toBeGreaterThan(10);
    expect(everything.some(({ file }) => file.endsWith('server.log'))).toBe(true);
    for (const value of [FIRST, SECOND, base64(FIRST), base64(SECOND)]) {
      expect(everything.filter(({ holds }) => holds.includes(value)).map(({ file }) => file)).toEqual([]);
    }
  });
});
