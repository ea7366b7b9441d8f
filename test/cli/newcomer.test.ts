// Issue 18, "What a new user tripped over", items 3 to 8, through the built CLI (bin/agentctl.js)
// against a real server. Items 1 and 2 (server start/stop/status) are in newcomer-server.test.ts,
// item 5 (logs) in newcomer-logs.test.ts.
import { execa } from 'execa';
import { describe, expect, test } from 'vitest';
import { engines } from '../support/service.js';
import { createTask, deployActive } from '../support/fixtures.js';
import { freePort } from '../support/ports.js';
import { agentctl, BIN, spawnAgentctl } from './built.js';
import { gitRepo, useCliService } from './support.js';
import { hasTmux, Terminal } from './terminal.js';

/** Resolves once `read()` matches `pattern` (polled), with what it read. */
async function until(read: () => string, pattern: RegExp, what: string, seconds = 90): Promise<string> {
  const deadline = Date.now() + seconds * 1000;
  for (;;) {
    const text = read();
    if (pattern.test(text)) return text;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}; got:\n${text}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

describe.each(engines)('newcomer (%s)', (engine) => {
  const { svc, scratch, env } = useCliService(engine);

  describe('item 3: tasks watch while the service is down', () => {
    test('each failed attempt is said on stderr and the watch exits 6; with --retry it keeps trying', async () => {
      await deployActive(svc);
      const task = await createTask(svc);
      const down = { ...env, AGENTCTL_BASE_URL: `http://127.0.0.1:${await freePort()}` };

      const patient = spawnAgentctl(['tasks', 'watch', task.id, '--retry'], { env: down });
      let patientErr = '';
      patient.stderr!.on('data', (chunk) => (patientErr += chunk));
      const bounded = await agentctl(['tasks', 'watch', task.id], { env: down });

      expect(bounded.code).toBe(6);
      expect(bounded.stdout).toBe('');
      const attempts = bounded.stderr.split('\n').filter((l) => l.startsWith('warning: lost the task stream'));
      expect(attempts).toHaveLength(8);
      expect(attempts[0]).toMatch(
        new RegExp(
          `^warning: lost the task stream from ${down.AGENTCTL_BASE_URL} \\(ECONNREFUSED\\); reconnecting in \\d+\\.\\d s \\(attempt 1 of 8; --retry keeps trying\\)$`,
        ),
      );
      expect(attempts[7]).toContain('(attempt 8 of 8; --retry keeps trying)');
      expect(bounded.stderr).toContain(`error: Cannot reach the agentctl service at ${down.AGENTCTL_BASE_URL} (ECONNREFUSED)`);

      // Past the bounded watch's limit, the --retry one is still trying (and says so).
      await until(() => patientErr, /(retrying until it answers; Ctrl-C to stop\)\n[\s\S]*){9}/, 'a ninth attempt of watch --retry');
      // Still running: only Ctrl-C ends it (130); had it given up, it would have exited 6.
      patient.kill('SIGINT');
      expect((await patient).exitCode).toBe(130);
    }, 120_000);
  });

  describe('item 6: rollback without --branch', () => {
    test('an agent with one branch: that branch, said on stderr', async () => {
      await deployActive(svc, { agent: 'default/bot' });
      const second = await deployActive(svc, { agent: 'default/bot' });
      const result = await agentctl(['rollback', '--agent', 'default/bot', '--yes', '--detach'], { env, cwd: scratch.dir });
      expect(result.code, result.stderr).toBe(0);
      expect(result.stderr).toContain('Branch main (the only branch of default/bot)\n');
      expect((await svc.api('GET', `/versions/${second.version_id}`)).body.status).toBe('ROLLED_BACK');
    });

    test('several branches: the one checked out in the directory', async () => {
      await deployActive(svc, { agent: 'default/bot', branch: 'main' });
      await deployActive(svc, { agent: 'default/bot', branch: 'feature/x' });
      const feature = await deployActive(svc, { agent: 'default/bot', branch: 'feature/x' });
      await gitRepo(scratch.dir);
      await execa('git', ['checkout', '-q', '-b', 'feature/x'], { cwd: scratch.dir });
      const result = await agentctl(['rollback', '--agent', 'default/bot', '--yes', '--detach'], { env, cwd: scratch.dir });
      expect(result.code, result.stderr).toBe(0);
      expect(result.stderr).toContain('Branch feature/x (checked out here; --branch to pick another)\n');
      expect((await svc.api('GET', `/versions/${feature.version_id}`)).body.status).toBe('ROLLED_BACK');
    });

    test('several branches and none checked out: exit 2 naming them', async () => {
      await deployActive(svc, { agent: 'default/bot', branch: 'main' });
      await deployActive(svc, { agent: 'default/bot', branch: 'feature/x' });
      const result = await agentctl(['rollback', '--agent', 'default/bot', '--yes'], { env, cwd: scratch.dir });
      expect(result.code).toBe(2);
      expect(result.stderr).toMatch(/^error: Missing --branch: default\/bot has 2 branches \((main, feature\/x|feature\/x, main)\)\n/);
    });
  });

  describe('item 7: names and vN where there are names', () => {
    test.skipIf(!hasTmux)('the rollback plan, its success line and its undo name versions vN', async () => {
      await deployActive(svc, { agent: 'default/bot' });
      const v2 = await deployActive(svc, { agent: 'default/bot' });
      const vars = Object.entries(env)
        .map(([k, v]) => `${k}='${v}'`)
        .join(' ');
      const terminal = await Terminal.start(
        `env -u CI ${vars} NO_COLOR=1 ${process.execPath} ${BIN} rollback --agent default/bot --branch main --detach; echo EXIT=$?; sleep 600`,
      );
      try {
        const plan = await terminal.waitFor('Roll back?');
        expect(plan).toContain(`Plan: branch main goes from v2 back to v1 (`);
        expect(plan).toContain('; 0 running tasks move with it.');
        expect(plan).not.toContain('ver_');
        await terminal.type('y');
        await terminal.keys('Enter');
        const done = await terminal.waitFor('EXIT=');
        expect(done).toContain('✓ Rolled back main: v2 → v1 (0 tasks moved)');
        expect(done).toContain('Undo with: agentctl rollback --agent default/bot --branch main --to v2 --yes');
        expect(done).toContain('EXIT=0');
        expect((await svc.api('GET', `/versions/${v2.version_id}`)).body.status).toBe('ROLLED_BACK');
      } finally {
        await terminal.close();
      }
    });

    test.skipIf(!hasTmux)('the key wizard names the scopes it builds as --scope takes them', async () => {
      await deployActive(svc, { agent: 'default/bot' });
      const vars = Object.entries(env)
        .map(([k, v]) => `${k}='${v}'`)
        .join(' ');
      const terminal = await Terminal.start(`env -u CI ${vars} NO_COLOR=1 ${process.execPath} ${BIN} keys create; echo EXIT=$?; sleep 600`);
      try {
        await terminal.waitFor('Deploy — CI/CD and deployments');
        await terminal.keys('Enter'); // Deploy
        await terminal.waitFor('which namespaces get admin?');
        await terminal.keys('Space', 'Enter'); // default
        await terminal.waitFor('which agents get editor?');
        await terminal.keys('Space', 'Enter'); // default/bot
        const scopes = await terminal.waitFor('? Step 2 of 4 · Scopes: namespace:');
        expect(scopes).toContain('? Step 2 of 4 · Scopes: namespace:default:admin, agent:default/bot:editor\n');
        expect(scopes.slice(scopes.indexOf('? Step 2 of 4 · Scopes: namespace:'))).not.toContain('agt_');
      } finally {
        await terminal.close();
      }
    });

    test('tasks list shows each task’s agent by name and its version as vN; --wide adds the version id', async () => {
      const v1 = await deployActive(svc, { agent: 'default/bot' });
      const task = await createTask(svc, { agent_name: 'default/bot', name: 'nightly' });
      const listed = await agentctl(['tasks', 'list'], { env });
      expect(listed.code, listed.stderr).toBe(0);
      expect(listed.stdout).toMatch(new RegExp(`^${task.id}\tnightly\tdefault/bot\tRUNNING\tv1\t\\S+\n$`));
      const wide = await agentctl(['tasks', 'list', '--wide'], { env });
      expect(wide.stdout).toMatch(new RegExp(`^${task.id}\tnightly\tdefault/bot\tRUNNING\tv1\t${v1.version_id}\t\\S+\n$`));
      const json = await agentctl(['tasks', 'list', '--json'], { env });
      expect(JSON.parse(json.stdout).tasks[0]).toMatchObject({ id: task.id, current_version_id: v1.version_id });
      expect(JSON.parse(json.stdout).tasks[0].agents ?? null).toBe(null);
    });
  });

  describe('item 8: after migrate', () => {
    test('moving a task off a version that then retires: count-aware, and one consistent way back', async () => {
      await deployActive(svc, { agent: 'default/bot' });
      await createTask(svc, { agent_name: 'default/bot' });
      await deployActive(svc, { agent: 'default/bot', are_tasks_sticky: true });
      const result = await agentctl(['tasks', 'migrate', '--agent', 'default/bot', '--from', 'v1', '--to-latest', '--yes'], { env });
      expect(result.code, result.stderr).toBe(0);
      expect(result.stderr).toContain('✓ Moved 1 task to v2 (');
      expect(result.stderr).toContain(
        'v1 is now RETIRED: it takes no tasks, so they cannot be moved back. To serve it again, roll the branch back: agentctl rollback --agent default/bot --branch main --to v1 --yes\n',
      );
      expect(result.stderr).not.toContain('No undo');
      expect(result.stderr).not.toContain('(s)');
    });

    test('migrating from a RETIRED version warns that nothing moved and why', async () => {
      await deployActive(svc, { agent: 'default/bot' });
      await deployActive(svc, { agent: 'default/bot' });
      expect((await svc.api('GET', '/agents/default/bot/versions/v1')).body.status).toBe('RETIRED');
      const result = await agentctl(['tasks', 'migrate', '--agent', 'default/bot', '--from', 'v1', '--to-latest', '--yes'], { env });
      expect(result.code).toBe(0);
      expect(result.stderr).toBe('warning: No task moved: v1 is RETIRED and has no RUNNING or IDLE tasks.\n');
      expect(result.stdout).toBe('');
    });
  });

  describe('item 4: init names the agent it derives, and says when that agent exists', () => {
    test('init "My Bot!" where default/my-bot exists: the derived name and a warning', async () => {
      await deployActive(svc, { agent: 'default/my-bot' });
      const result = await agentctl(['init', 'My Bot!'], { env, cwd: scratch.dir });
      expect(result.code, result.stderr).toBe(0);
      expect(result.stderr).toContain('The agent is named default/my-bot, from the directory name "My Bot!" (--agent ns/name picks another).\n');
      expect(result.stderr).toContain(
        `warning: default/my-bot already exists on ${svc.url} and this project deploys to it: pass --agent ns/<new name> (or edit agentctl.json) for an agent of its own.\n`,
      );
    });

    test('a name no agent has: no warning', async () => {
      await deployActive(svc, { agent: 'default/my-bot' });
      const result = await agentctl(['init', 'other-bot'], { env, cwd: scratch.dir });
      expect(result.code, result.stderr).toBe(0);
      expect(result.stderr).not.toContain('warning:');
      expect(result.stderr).not.toContain('from the directory name');
    });
  });
});
