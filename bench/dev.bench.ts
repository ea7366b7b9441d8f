// `agentctl dev`'s loop, through the built CLI against a `--runtime none` server: save -> new
// process ready -> answer to an event queued during the restart, against `node -e 0` (spawn to
// exit) measured in the same run. Goal: at most 3x.
//
// The event is queued the way issue 23 describes a developer's: sent while the restart is under way
// (once `dev` says it is starting the new process), here through the typed client over HTTP
// (`POST /tasks/{id}/events`) rather than a `tasks send` CLI, whose own Node start is not part of
// the loop. The answer travels the real path: server -> dev stream -> `agentctl dev` -> the new
// agent process -> its messages to the server -> the task's stream -> `dev`'s output, where the bench
// reads it. Each round prints its phases, from the save: the watch noticed it (fs.watch + debounce),
// the new process is ready, the answer is shown.
//
// A developer saves seconds apart: each round saves once `dev --debug` says its spare process (Node
// and the ADK loaded, waiting for a save) is ready, as it is by the time one has edited a line. The
// floor is measured interleaved, one `node -e 0` before each round, so both see the same load.
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { execa } from 'execa';
import { createClient } from '../src/client/index.js';
import { ConfigStore, configDir, resolveCredentials } from '../src/cli/config.js';
import { fmt, median } from './support.js';

const ROUNDS = 9;
const BIN = path.resolve('bin/agentctl.js');
const scratch = mkdtempSync(path.join(os.tmpdir(), 'agentctl-bench-dev-'));
const bot = path.join(scratch, 'bot');
const env = {
  ...process.env,
  AGENTCTL_CONFIG_DIR: path.join(scratch, 'config'),
  AGENTCTL_DATA_DIR: path.join(scratch, 'data'),
  CI: 'true',
  GIT_AUTHOR_NAME: 'Bench',
  GIT_AUTHOR_EMAIL: 'bench@example.com',
  GIT_COMMITTER_NAME: 'Bench',
  GIT_COMMITTER_EMAIL: 'bench@example.com',
  AGENTCTL_API_KEY: '',
  AGENTCTL_BASE_URL: '',
  AGENTCTL_PROFILE: '',
};
const cli = async (args: string[], cwd = bot) => {
  const result = await execa(process.execPath, [BIN, ...args], { env, cwd, reject: false });
  if (result.exitCode !== 0) throw new Error(`agentctl ${args.join(' ')}: ${result.stderr}`);
  return result.stdout;
};
const now = () => performance.now();

const floorTimes: number[] = [];
const nodeFloor = async () => {
  const start = now();
  await new Promise<void>((done) => spawn(process.execPath, ['-e', '0'], { stdio: 'ignore' }).once('exit', () => done()));
  floorTimes.push(now() - start);
};

await cli(['init', 'bot'], scratch);
await cli(['server', 'start', '--detach', '--runtime', 'none', '--port', '0']);
const credentials = resolveCredentials({}, env, new ConfigStore(configDir(env)));
const client = createClient({ baseUrl: credentials.baseUrl, apiKey: credentials.apiKey });

const dev = execa(process.execPath, [BIN, 'dev', '--user', 'bench', '--debug'], { env, cwd: bot, reject: false, all: true });
// Every line `dev` writes, with when the bench read it.
const lines: Array<{ at: number; text: string }> = [];
let partial = '';
dev.all!.on('data', (chunk: Buffer) => {
  const at = now();
  partial += chunk.toString();
  const parts = partial.split('\n');
  partial = parts.pop()!;
  for (const text of parts) lines.push({ at, text });
});
const seen = async (check: (text: string) => boolean, from = 0): Promise<number> => {
  const deadline = Date.now() + 60_000;
  for (;;) {
    for (let i = from; i < lines.length; i++) if (check(lines[i].text)) return lines[i].at;
    if (Date.now() > deadline) throw new Error(`timed out; agentctl dev said:\n${lines.map((l) => l.text).join('\n')}`);
    await new Promise((r) => setTimeout(r, 1));
  }
};
try {
  await seen((t) => t.includes('agent ready in'));
  const task = JSON.parse(await cli(['tasks', 'create', '--name', 'bench', '--json'])) as { id: string };
  await seen((t) => t.includes('Send me anything'));
  const source = path.join(bot, 'src', 'index.ts');
  const original = readFileSync(source, 'utf8');
  const phases = { watch: [] as number[], ready: [] as number[], answer: [] as number[], loop: [] as number[] };
  let spareFrom = 0;
  for (let i = 1; i <= ROUNDS; i++) {
    const marker = `r${i} echo`;
    await seen((t) => t.includes('loaded: the next save starts it'), spareFrom);
    await nodeFloor();
    const from = lines.length;
    spareFrom = from;
    const saved = now();
    writeFileSync(source, original.replace('`echo #', `\`${marker} #`));
    const starting = await seen((t) => t.includes('changed: starting the agent'), from);
    // Queued during the restart: the new process is starting, the old one no longer takes work.
    await client.request('createEvent', { params: { task_id: task.id }, body: { content: { type: 'text', text: `round ${i}` } } });
    const ready = await seen((t) => t.includes('agent ready in'), from);
    const answered = await seen((t) => t.includes(`← ${marker} #${i}: round ${i}`), from);
    phases.watch.push(starting - saved);
    phases.ready.push(ready - starting);
    phases.answer.push(answered - ready);
    phases.loop.push(answered - saved);
    console.log(
      `round ${i}: save -> watch ${fmt(starting - saved, 1)} ms -> ready ${fmt(ready - starting, 1)} ms -> answer ${fmt(answered - ready, 1)} ms = ${fmt(answered - saved, 1)} ms`,
    );
  }
  const loop = median(phases.loop);
  const floor = median(floorTimes);
  console.log(`floor: node -e 0, spawn to exit, one before each round, median of ${ROUNDS}: ${fmt(floor, 1)} ms`);
  console.log(
    `phases, medians: watch (fs.watch + debounce) ${fmt(median(phases.watch), 1)} ms, new process ready ${fmt(median(phases.ready), 1)} ms, answer ${fmt(median(phases.answer), 1)} ms`,
  );
  console.log(`save -> new process ready -> answer to the queued event, median of ${ROUNDS}: ${fmt(loop, 1)} ms`);
  console.log(`ratio to node -e 0: ${fmt(loop / floor, 2)}x (goal <= 3x)`);
  console.log(
    `load: ${os
      .loadavg()
      .map((l) => l.toFixed(2))
      .join(' ')}`,
  );
} finally {
  dev.kill('SIGINT');
  await dev;
  await cli(['server', 'stop']).catch(() => {});
  rmSync(scratch, { recursive: true, force: true });
}
