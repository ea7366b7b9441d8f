import path from 'node:path';
import { execa } from 'execa';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { openTestService, type TestService } from '../support/service.js';
import { deployActive, tempDir } from './support.js';

const hasTmux = await execa('tmux', ['-V'], { reject: false }).then((r) => r.exitCode === 0, () => false);
if (!hasTmux) console.warn('SKIPPED: the key wizard pseudo-terminal test needs tmux (apt-get install -y tmux)');

const ENTRY = path.resolve('src/cli/main.ts');

/** One tmux session running a command in a real pseudo-terminal. */
class Terminal {
  constructor(readonly session: string) {}

  static async start(command: string): Promise<Terminal> {
    const session = `agentctl-wizard-${process.pid}-${Date.now()}`;
    await execa('tmux', ['new-session', '-d', '-s', session, '-x', '160', '-y', '50', command]);
    // Keep the pane after the command exits, so its last output can still be read.
    await execa('tmux', ['set-option', '-t', session, 'remain-on-exit', 'on']);
    return new Terminal(session);
  }

  async screen(): Promise<string> {
    return (await execa('tmux', ['capture-pane', '-p', '-J', '-S', '-', '-t', this.session])).stdout;
  }

  /** Waits until the screen shows `text`, then returns the screen. */
  async waitFor(text: string | RegExp, seconds = 30): Promise<string> {
    const deadline = Date.now() + seconds * 1000;
    for (;;) {
      const screen = await this.screen();
      if (typeof text === 'string' ? screen.includes(text) : text.test(screen)) return screen;
      if (Date.now() > deadline) throw new Error(`timed out waiting for ${text}; screen:\n${screen}`);
      await new Promise((r) => setTimeout(r, 100));
    }
  }

  async keys(...keys: string[]): Promise<void> {
    for (const key of keys) {
      await execa('tmux', ['send-keys', '-t', this.session, key]);
      await new Promise((r) => setTimeout(r, 80));
    }
  }

  async type(text: string): Promise<void> {
    await execa('tmux', ['send-keys', '-t', this.session, '-l', text]);
  }

  async close(): Promise<void> {
    await execa('tmux', ['kill-session', '-t', this.session], { reject: false });
  }
}

describe.skipIf(!hasTmux)('agentctl keys create: the wizard in a pseudo-terminal', () => {
  let svc: TestService;
  const scratch = tempDir();
  beforeAll(async () => {
    svc = await openTestService('pglite');
  });
  afterAll(async () => {
    await svc?.close();
    scratch.remove();
  });

  test('preset, scopes, groups and review create a key whose secret is printed once', async () => {
    const { agentId } = await deployActive(svc, 'default/bot');
    const group = (await svc.api('POST', '/groups', { body: { name: 'platform' } })).body;
    const namespaceId = (await svc.api('GET', '/namespaces')).body.namespaces[0].id;
    const env = [`AGENTCTL_CONFIG_DIR=${scratch.dir}`, `AGENTCTL_BASE_URL=${svc.url}`, `AGENTCTL_API_KEY=${svc.adminKey}`, 'NO_COLOR=1'].join(' ');
    const terminal = await Terminal.start(`env -u CI ${env} ${process.execPath} --import tsx ${ENTRY} keys create; echo "EXIT=$?"`);
    try {
      await terminal.waitFor('Step 1 of 4 · Preset');
      await terminal.waitFor('Deploy — CI/CD and deployments');
      await terminal.keys('Enter'); // Deploy is the first preset
      await terminal.waitFor('which namespaces get admin?');
      await terminal.keys('Space', 'Enter'); // default
      await terminal.waitFor('which agents get editor?');
      await terminal.keys('Space', 'Enter'); // default/bot
      await terminal.waitFor(`Scopes: namespace:${namespaceId}:admin, agent:${agentId}:editor`);
      await terminal.keys('Enter'); // Done
      await terminal.waitFor('Step 3 of 4 · Sharing groups');
      await terminal.keys('Space', 'Enter'); // platform
      await terminal.waitFor('Step 4 of 4 · Key name');
      await terminal.type('wizard-key');
      await terminal.keys('Enter');
      await terminal.waitFor('Description (optional)');
      await terminal.keys('Enter');
      await terminal.waitFor('Expires');
      await terminal.keys('Enter'); // the default, 90 days
      const review = await terminal.waitFor('Create this key?');
      expect(review).toMatch(/Name\s+wizard-key/);
      // The review names what the pick lists named: the namespace by slug, the agent as ns/name, the group by name.
      expect(review).toMatch(/Sharing groups\s+platform\n/);
      expect(review).toMatch(/namespace\s+default\s+admin/);
      expect(review).toMatch(/agent\s+default\/bot\s+editor/);
      expect(review.slice(review.indexOf('Review'))).not.toContain(agentId);
      // Answered prompts carry the CLI's one success mark.
      expect(review).toContain('✓ Step 1 of 4 · Preset');
      expect(review).not.toContain('✔');
      await terminal.keys('Enter');
      const done = await terminal.waitFor('EXIT=');
      expect(done).toContain('EXIT=0');
      const secrets = done.match(/agk_[0-9A-Za-z]{49}/g) ?? [];
      expect(secrets).toHaveLength(1);

      const whoami = await svc.api('GET', '/whoami', { key: secrets[0] });
      expect(whoami.status).toBe(200);
      expect(whoami.body).toMatchObject({ name: 'wizard-key', sharing_group_ids: [group.id] });
      expect(whoami.body.scopes).toEqual([
        { resource_type: 'namespace', resource_id: namespaceId, role: 'admin' },
        { resource_type: 'agent', resource_id: agentId, role: 'editor' },
      ]);
    } finally {
      await terminal.close();
    }
  });

  test('tasks migrate on a terminal shows the plan, asks, then moves the tasks', async () => {
    const v1 = await deployActive(svc, 'default/planner');
    const task = (await svc.api('POST', '/tasks', { body: { agent_name: 'default/planner' } })).body.id;
    const v2 = await deployActive(svc, 'default/planner', 'main', undefined, { are_tasks_sticky: true });
    const env = [`AGENTCTL_CONFIG_DIR=${scratch.dir}`, `AGENTCTL_BASE_URL=${svc.url}`, `AGENTCTL_API_KEY=${svc.adminKey}`, 'NO_COLOR=1'].join(' ');
    const terminal = await Terminal.start(`env -u CI ${env} ${process.execPath} --import tsx ${ENTRY} tasks migrate --from ${v1.versionId} --to-latest; echo "EXIT=$?"`);
    try {
      const plan = await terminal.waitFor('Move 1 task(s)?');
      expect(plan).toContain(`Plan: move 1 task(s) on branch main from v1 to v2`);
      expect((await svc.api('GET', `/tasks/${task}`)).body.current_version_id).toBe(v1.versionId);
      await terminal.type('y');
      await terminal.keys('Enter');
      const done = await terminal.waitFor('EXIT=');
      expect(done).toContain('EXIT=0');
      expect(done).toContain(`No undo: ${v1.versionId} is now RETIRED`);
      expect((await svc.api('GET', `/tasks/${task}`)).body.current_version_id).toBe(v2.versionId);
    } finally {
      await terminal.close();
    }
  });
});
