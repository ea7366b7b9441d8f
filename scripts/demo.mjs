#!/usr/bin/env node
// The user story, end to end, through the built CLI against a real server on embedded PGlite:
// start the service, deploy two versions of an agent from git, run tasks on the first, migrate
// them to the latest, look at versions and tasks, create a read-only key, stop the service.
// Everything lives in a scratch directory, so your own agentctl profile is left alone.
import { spawnSync } from 'node:child_process';
import { mkdtempSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.dirname(path.dirname(fileURLToPath(import.meta.url)));
const bin = path.join(root, 'bin', 'agentctl.js');
const scratch = mkdtempSync(path.join(tmpdir(), 'agentctl-demo-'));
const repo = path.join(scratch, 'demo-bot');
const env = {
  ...process.env,
  AGENTCTL_CONFIG_DIR: path.join(scratch, 'config'),
  AGENTCTL_DATA_DIR: path.join(scratch, 'data'),
  AGENTCTL_API_KEY: '',
  AGENTCTL_BASE_URL: '',
  AGENTCTL_PROFILE: '',
  DATABASE_URL: '',
  GIT_AUTHOR_NAME: 'Ada Lovelace',
  GIT_AUTHOR_EMAIL: 'ada@example.com',
  GIT_COMMITTER_NAME: 'Ada Lovelace',
  GIT_COMMITTER_EMAIL: 'ada@example.com',
};
for (const name of ['AGENTCTL_API_KEY', 'AGENTCTL_BASE_URL', 'AGENTCTL_PROFILE', 'DATABASE_URL']) delete env[name];

const say = (text) => process.stderr.write(`\n\x1b[1m# ${text}\x1b[0m\n`);

/** Runs agentctl, showing the command and its output; returns stdout when asked to capture it. */
function agentctl(args, { capture = false } = {}) {
  // Printed shell-quoted, so each line pastes as it ran.
  process.stderr.write(`$ agentctl ${args.map(shellQuote).join(' ')}\n`);
  const result = spawnSync(process.execPath, [bin, ...args], { cwd: repo, env, encoding: 'utf8', stdio: ['ignore', capture ? 'pipe' : 'inherit', 'inherit'] });
  if (result.status !== 0) throw new Error(`agentctl ${args.join(' ')} exited ${result.status}`);
  return capture ? result.stdout : '';
}

function git(...args) {
  const result = spawnSync('git', args, { cwd: repo, env, encoding: 'utf8' });
  if (result.status !== 0) throw new Error(`git ${args.join(' ')}: ${result.stderr}`);
}

async function freePort() {
  const server = createServer();
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address();
  await new Promise((resolve) => server.close(resolve));
  return port;
}

let started = false;
try {
  mkdirSync(repo);
  git('init', '-q', '-b', 'main');
  writeFileSync(path.join(repo, 'agent.py'), 'print("hello from demo-bot v1")\n');
  git('add', '.');
  git('commit', '-q', '-m', 'First version of the demo bot');

  say('Start the service on embedded PGlite (no PostgreSQL needed); its admin key lands in the `local` profile');
  agentctl(['server', 'start', '--detach', '--port', String(await freePort())]);
  started = true;

  say('Deploy the current commit, then report it ready, as its container would on start');
  const v1 = JSON.parse(agentctl(['deploy', '--agent', 'default/demo-bot', '--image', 'registry.local/demo-bot:1', '--detach', '--json'], { capture: true })).version_id;
  agentctl(['versions', 'register', v1]);

  say('Three tasks run on the first version');
  for (let i = 1; i <= 3; i++) agentctl(['tasks', 'create', '--agent', 'default/demo-bot', '--name', `demo-task-${i}`, '--params', `{"n": ${i}}`]);

  say('A second commit, deployed sticky: its tasks stay where they are until moved');
  writeFileSync(path.join(repo, 'agent.py'), 'print("hello from demo-bot v2")\n');
  git('commit', '-q', '-am', 'Second version: a friendlier greeting');
  const v2 = JSON.parse(agentctl(['deploy', '--agent', 'default/demo-bot', '--image', 'registry.local/demo-bot:2', '--sticky', '--detach', '--json'], { capture: true })).version_id;
  agentctl(['versions', 'register', v2]);
  agentctl(['versions', 'list', '--agent', 'default/demo-bot']);

  say('Migrate every running task of the first version to the latest');
  agentctl(['tasks', 'migrate', '--from', 'v1', '--to-latest', '--agent', 'default/demo-bot', '--yes']);
  agentctl(['versions', 'list', '--agent', 'default/demo-bot']);
  agentctl(['tasks', 'list', '--agent', 'default/demo-bot']);

  say('A read-only key for a dashboard (the secret is shown once)');
  agentctl(['keys', 'create', '--preset', 'read-only', '--scope', 'agent:default/demo-bot', '--name', 'dashboard', '--expires', '90d']);

  say('Done. Run your own: agentctl server start (see README.md)');
} catch (error) {
  process.stderr.write(`\ndemo failed: ${error.message}\n`);
  process.exitCode = 1;
} finally {
  if (started) agentctl(['server', 'stop']);
  rmSync(scratch, { recursive: true, force: true });
}

/** The quoting of src/cli/shell.ts (this script runs without a build step). */
function shellQuote(arg) {
  return arg !== '' && /^[A-Za-z0-9_@%+=:,./-]+$/.test(arg) ? arg : `'${arg.replace(/'/g, `'\\''`)}'`;
}
