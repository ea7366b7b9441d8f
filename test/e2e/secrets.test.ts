import { createHash, randomUUID } from 'node:crypto';
import { readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, test } from 'vitest';
import { parsedJson, until, useE2e } from '../support/e2e.js';
import { engines } from '../support/service.js';

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
  const FIRST = `first-${randomUUID()}`;
  const SECOND = `second-${randomUUID()}`;
  const e2e = useE2e(engine, {
    scratch: 'agentctl-e2e-secrets',
    project: 'my-bot',
    serverArgs: ['--log-level', 'debug', '--debug'],
    async prepare() {
      writeFileSync(path.join(e2e.projectDir, 'src', 'index.ts'), agentSource(FIRST, SECOND));
      await e2e.git(['commit', '-q', '-am', 'Say which SERVICE_TOKEN the agent got']);
    },
  });
  /** Everything every CLI call printed (stdout and stderr, with --debug traces of every request and answer). */
  const transcript: string[] = [];
  const agentctl = async (args: string[], options: { input?: string; debug?: boolean } = {}) => {
    const result = await e2e.agentctl([...args, ...(options.debug === false ? [] : ['--debug'])], { input: options.input });
    transcript.push(`$ agentctl ${args.join(' ')}\n${result.stdout}\n${result.stderr}`);
    return result;
  };
  const json = async (args: string[], options: { input?: string } = {}) => parsedJson(args, await agentctl([...args, '--json'], options));
  /** A new task's greeting: which value the agent found in SERVICE_TOKEN. */
  const tokenSeen = async (): Promise<string> => {
    const task = await json(['tasks', 'create']);
    const greeting = (messages: any[]) => messages.find((m) => m.author === 'agent' && m.content.type === 'text');
    const messages = await until(
      `the agent's answer to task ${task.id}`,
      async () => (await json(['tasks', 'messages', task.id])).messages,
      (found) => greeting(found) !== undefined,
    );
    return greeting(messages).content.text;
  };

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
    const valueFile = path.join(e2e.dir, 'token.txt');
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
      ...scanFiles(e2e.dataDir, needles),
    ];
    expect(everything.filter(({ holds }) => holds.includes('[debug]')).length).toBeGreaterThan(10);
    expect(everything.some(({ file }) => file.endsWith('server.log'))).toBe(true);
    for (const value of [FIRST, SECOND, base64(FIRST), base64(SECOND)]) {
      expect(everything.filter(({ holds }) => holds.includes(value)).map(({ file }) => file)).toEqual([]);
    }
  });
});
