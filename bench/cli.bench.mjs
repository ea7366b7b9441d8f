// CLI start-up against the floor of a bare `node -e 0`, measured in the same run (median of several
// runs each, interleaved so machine noise hits every command alike). Targets: `--version` at most
// 1.4x the floor; `versions list --json` against a running local server at most 2.5x.
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.dirname(path.dirname(fileURLToPath(import.meta.url)));
const bin = path.join(root, 'bin', 'agentctl.js');
const RUNS = Number(process.env.BENCH_RUNS ?? 15);
if (!existsSync(path.join(root, 'dist', 'agentctl.js'))) {
  console.error('dist/agentctl.js is missing: run `npm run build` first');
  process.exit(1);
}

const scratch = mkdtempSync(path.join(os.tmpdir(), 'agentctl-bench-'));
const env = { ...process.env, AGENTCTL_CONFIG_DIR: path.join(scratch, 'config'), AGENTCTL_DATA_DIR: path.join(scratch, 'data'), CI: 'true' };
delete env.AGENTCTL_API_KEY;
delete env.AGENTCTL_BASE_URL;
delete env.AGENTCTL_PROFILE;
delete env.DATABASE_URL;

const agentctl = (...args) => {
  const result = spawnSync(process.execPath, [bin, ...args], { env, encoding: 'utf8' });
  if (result.status !== 0) throw new Error(`agentctl ${args.join(' ')} exited ${result.status}: ${result.stderr}`);
  return result.stdout;
};

async function freePort() {
  const server = createServer();
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address();
  await new Promise((resolve) => server.close(resolve));
  return port;
}

const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
function time(command, args) {
  const start = process.hrtime.bigint();
  const result = spawnSync(command, args, { env, stdio: ['ignore', 'ignore', 'pipe'] });
  const ms = Number(process.hrtime.bigint() - start) / 1e6;
  if (result.status !== 0) throw new Error(`${args.join(' ')} exited ${result.status}: ${result.stderr}`);
  return ms;
}

const started = JSON.parse(agentctl('server', 'start', '--detach', '--port', String(await freePort()), '--json'));
try {
  const key = agentctl('config', 'get', 'api_key', '--reveal').trim();
  const post = async (p, body) => {
    const res = await fetch(started.url + p, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });
    if (!res.ok) throw new Error(`${p}: ${res.status} ${await res.text()}`);
    return res.json();
  };
  // Twenty versions, so the list has real rows to parse and print.
  for (let i = 0; i < 20; i++) {
    const deployed = await post('/agents/deploy', {
      agent_name: 'bench',
      branch: 'main',
      git_hash: (i + 1).toString(16).padStart(8, 'a'),
      git_message: `version ${i}`,
      author_name: 'Bench',
      author_email: 'bench@example.com',
      image_url: `img:${i}`,
      sdk_type: 'alpha_agent_sdk',
      acp_type: 'async',
    });
    await post('/versions/register', { version_id: deployed.version_id });
  }

  const cases = [
    ['node -e 0 (floor)', [process.execPath, ['-e', '0']]],
    ['agentctl --version', [process.execPath, [bin, '--version']]],
    ['agentctl --help', [process.execPath, [bin, '--help']]],
    ['agentctl versions list --json', [process.execPath, [bin, 'versions', 'list', '--agent', 'default/bench', '--json']]],
    ['agentctl status --json', [process.execPath, [bin, 'status', '--agent', 'default/bench', '--json']]],
  ];
  // Warm-up: fills Node's compile cache, as any second run on a user's machine finds it.
  for (const [, [command, args]] of cases) time(command, args);
  const samples = new Map(cases.map(([name]) => [name, []]));
  for (let run = 0; run < RUNS; run++) for (const [name, [command, args]] of cases) samples.get(name).push(time(command, args));

  const floor = median(samples.get(cases[0][0]));
  const targets = { 'agentctl --version': 1.4, 'agentctl versions list --json': 2.5, 'agentctl status --json': 2.5 };
  console.log(`${RUNS} runs each, median wall time, ratio to the floor measured in this run`);
  for (const [name] of cases) {
    const ms = median(samples.get(name));
    const ratio = ms / floor;
    const target = targets[name];
    console.log(
      `${name.padEnd(32)} ${ms.toFixed(1).padStart(7)} ms  ${ratio.toFixed(2)}x${target ? `  (target <= ${target}x: ${ratio <= target ? 'met' : 'MISSED'})` : ''}`,
    );
  }
} finally {
  agentctl('server', 'stop');
  rmSync(scratch, { recursive: true, force: true });
}
