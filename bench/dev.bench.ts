// `agentctl dev`'s loop, through the built CLI against a `--runtime none` server: save -> new
// process ready -> answer to an event queued during the restart, against `node -e 0` (spawn to
// exit) measured in the same run. Goal: at most 3x.
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { execa } from 'execa';
import { fmt, median, timed } from './support.js';

const ROUNDS = 7;
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

const floorTimes: number[] = [];
for (let i = 0; i < ROUNDS; i++)
  floorTimes.push(await timed(() => new Promise<void>((done) => spawn(process.execPath, ['-e', '0'], { stdio: 'ignore' }).once('exit', () => done()))));
const floor = median(floorTimes);
console.log(`floor: node -e 0, spawn to exit, median of ${ROUNDS}: ${fmt(floor, 1)} ms`);

await cli(['init', 'bot'], scratch);
await cli(['server', 'start', '--detach', '--runtime', 'none', '--port', '0']);
const dev = execa(process.execPath, [BIN, 'dev', '--user', 'bench'], { env, cwd: bot, reject: false, all: true });
let output = '';
dev.all!.on('data', (chunk: Buffer) => (output += chunk.toString()));
const waitFor = async (check: () => boolean) => {
  const deadline = Date.now() + 60_000;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`timed out; agentctl dev said:\n${output}`);
    await new Promise((r) => setTimeout(r, 2));
  }
};
try {
  await waitFor(() => output.includes('agent ready in'));
  await cli(['tasks', 'create', '--name', 'bench']);
  const source = path.join(bot, 'src', 'index.ts');
  const original = readFileSync(source, 'utf8');
  const times: number[] = [];
  for (let i = 1; i <= ROUNDS; i++) {
    const marker = `r${i} echo`;
    times.push(
      await timed(async () => {
        writeFileSync(source, original.replace('`echo #', `\`${marker} #`));
        // The event is queued while the new process starts; the answer must come from the new code.
        await cli(['tasks', 'send', 'bench', `round ${i}`]);
        await waitFor(() => output.includes(`← ${marker} #${i}: round ${i}`));
      }),
    );
  }
  const loop = median(times);
  console.log(`save -> new process ready -> answer to the queued event, median of ${ROUNDS}: ${fmt(loop, 1)} ms`);
  // The loop holds two Node starts (the new agent process and the `tasks send` CLI) and the server's round trips.
  console.log(`ratio to node -e 0: ${fmt(loop / floor, 2)}x (goal <= 3x)`);
} finally {
  dev.kill('SIGINT');
  await dev;
  await cli(['server', 'stop']).catch(() => {});
  rmSync(scratch, { recursive: true, force: true });
}
