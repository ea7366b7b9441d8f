#!/usr/bin/env node
// The user story of the README quick start, end to end, through the built CLI against a real server on
// embedded PGlite with the local runtime: a new agent from `agentctl init`, deployed from git and run
// as a real process, a task it answers, a sticky second deploy, the task migrated to it (and answered
// by it) after a rehearsal of the migration, the logs of both versions, a rollback, the web console's
// link to the task, and the server stopped with its agents.
// Everything lives in a scratch directory, so your own agentctl profile is left alone.
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.dirname(path.dirname(fileURLToPath(import.meta.url)));
const bin = path.join(root, 'bin', 'agentctl.js');
const scratch = mkdtempSync(path.join(tmpdir(), 'agentctl-demo-'));
const repo = path.join(scratch, 'my-bot');
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
function agentctl(args, { capture = false, cwd = repo } = {}) {
  // Printed shell-quoted, so each line pastes as it ran.
  process.stderr.write(`$ agentctl ${args.map(shellQuote).join(' ')}\n`);
  const result = spawnSync(process.execPath, [bin, ...args], { cwd, env, encoding: 'utf8', stdio: ['ignore', capture ? 'pipe' : 'inherit', 'inherit'] });
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

/** Waits for the agent's reply that matches, then prints the transcript. */
async function awaitReply(task, pattern) {
  const deadline = Date.now() + 60_000;
  for (;;) {
    const result = spawnSync(process.execPath, [bin, 'tasks', 'messages', task, '--json'], { cwd: repo, env, encoding: 'utf8' });
    const messages = result.status === 0 ? JSON.parse(result.stdout).messages : [];
    if (messages.some((m) => m.author === 'agent' && m.content.type === 'text' && pattern.test(m.content.text))) break;
    if (Date.now() > deadline) throw new Error(`the agent did not answer ${pattern}`);
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
  agentctl(['tasks', 'messages', task]);
}

let started = false;
try {
  say('A new agent project on the ADK: package.json, agentctl.json, src/index.ts, a git repository');
  agentctl(['init', 'my-bot'], { cwd: scratch });

  say('Start the service on embedded PGlite with the local runtime; its admin key lands in the `local` profile');
  agentctl(['server', 'start', '--detach', '--port', String(await freePort())]);
  started = true;

  say('Deploy the commit: its tree is uploaded as the source, the runtime starts the agent, the version turns ACTIVE');
  agentctl(['deploy']);

  say('A task (the agent greets it), then an event: the agent answers');
  const task = JSON.parse(agentctl(['tasks', 'create', '--agent', 'default/my-bot', '--params', '{"topic": "x"}', '--json'], { capture: true })).id;
  agentctl(['tasks', 'send', task, 'hello']);
  await awaitReply(task, /hello/);

  say('Edit, commit, deploy again (sticky): the task stays on v1 while v2 starts');
  const source = path.join(repo, 'src', 'index.ts');
  writeFileSync(source, readFileSync(source, 'utf8').replace('`echo #${count}: ${text}`', '`v2 echo #${count}: ${text}`'));
  git('commit', '-q', '-am', 'v2: say which version answers');
  agentctl(['deploy', '--sticky']);
  agentctl(['versions', 'list']);

  say("Rehearse first: the task's recorded events replayed on v2 in a shadow task, compared message by message");
  agentctl(['tasks', 'migrate', '--from', 'v1', '--to-latest', '--rehearse']);

  say('Migrate the running tasks of v1 to the latest: the next event is handled by v2, and v1 retires');
  agentctl(['tasks', 'migrate', '--from', 'v1', '--to-latest', '--yes']);
  agentctl(['tasks', 'send', task, 'again']);
  await awaitReply(task, /v2 echo #2: again/);
  agentctl(['versions', 'list']);

  say('The output of both versions');
  agentctl(['logs', '--agent', 'default/my-bot']);

  say('Roll back: v1 runs again and the task follows it');
  agentctl(['rollback', '--branch', 'main', '--yes']);
  agentctl(['tasks', 'send', task, 'back']);
  await awaitReply(task, /^echo #3: back$/);

  say('Done. Run your own: agentctl init, agentctl server start, agentctl deploy (see README.md)');

  // Last: the web console at the demo's task, signed in by a one-time link made with the profile's key.
  const { url } = JSON.parse(agentctl(['open', task, '--print', '--json'], { capture: true }));
  process.stderr.write('\nThe web console, at the demo’s task (the link signs you in once, within two minutes):\n');
  process.stdout.write(`${url}\n`);
  if (process.stdin.isTTY) {
    process.stderr.write('Open it now; press Enter to stop the server and end the demo.\n');
    await new Promise((resolve) => process.stdin.once('data', resolve));
    process.stdin.pause();
  }
} catch (error) {
  process.stderr.write(`\ndemo failed: ${error.message}\n`);
  process.exitCode = 1;
} finally {
  // Its record stays off stdout, so the console link is the last line there.
  if (started) agentctl(['server', 'stop'], { capture: true });
  rmSync(scratch, { recursive: true, force: true });
}

/** The quoting of src/cli/shell.ts (this script runs without a build step). */
function shellQuote(arg) {
  return arg !== '' && /^[A-Za-z0-9_@%+=:,./-]+$/.test(arg) ? arg : `'${arg.replace(/'/g, `'\\''`)}'`;
}
