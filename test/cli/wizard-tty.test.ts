import { afterAll, describe, expect, test } from 'vitest';
import { useService } from '../support/service.js';
import { versionSecretEnv } from '../../src/server/domain/secrets.js';
import { createTask, deployActive } from '../support/fixtures.js';
import { tempDir } from './support.js';
import { ENTRY, hasTmux, Terminal } from './terminal.js';

if (!hasTmux) console.warn('SKIPPED: the key wizard pseudo-terminal test needs tmux (apt-get install -y tmux)');

describe.skipIf(!hasTmux)('agentctl in a pseudo-terminal: the key wizard and the confirmations', () => {
  const svc = useService('pglite', {}, { resetBeforeEach: false });
  const scratch = tempDir();
  afterAll(() => scratch.remove());

  test('preset, scopes, groups and review create a key whose secret is printed once', async () => {
    const { agent_id: agentId } = await deployActive(svc, { agent: 'default/bot' });
    const client = svc.client();
    const group = await client.createGroup({ body: { name: 'platform' } });
    await client.addGroupMember({ params: { group_id: group.id, member_id: (await client.whoami()).id } });
    const namespaceId = (await client.listNamespaces()).namespaces[0].id;
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
      const scopes = await terminal.waitFor(`Scopes: namespace:default:admin, agent:default/bot:editor`);
      // Nothing of the preset's third type is visible: the step says why it did not ask.
      expect(scopes).toContain("Step 2 of 4 · Scopes: no project is visible to this key, so the preset's project:editor is left out");
      await terminal.keys('Enter'); // Done
      await terminal.waitFor('Step 3 of 4 · Sharing groups');
      await terminal.waitFor('platform (1 member)');
      await terminal.keys('Space', 'Enter'); // platform
      await terminal.waitFor('Step 4 of 4 · Key name');
      await terminal.type('wizard-key');
      await terminal.keys('Enter');
      await terminal.waitFor('Description (optional)');
      await terminal.keys('Enter');
      await terminal.waitFor('In 90d (the default)');
      await terminal.keys('Enter'); // the default, 90 days
      const review = await terminal.waitFor('Create this key?');
      expect(review).toMatch(/Name\s+wizard-key/);
      expect(review).toMatch(/Expires\s+\d{4}-\d\d-\d\d \d\d:\d\d UTC \(in 90 days\)/);
      // The review names what the pick lists named: the namespace by slug, the agent as ns/name, the group by name.
      expect(review).toMatch(/Sharing groups\s+platform\n/);
      expect(review).toMatch(/namespace\s+default\s+admin/);
      expect(review).toMatch(/agent\s+default\/bot\s+editor/);
      expect(review.slice(review.indexOf('Review'))).not.toContain(agentId);
      // Answered prompts carry the CLI's one success mark.
      expect(review).toContain('✓ Step 1 of 4 · Preset');
      expect(review).not.toContain('✔');
      // Back to step 4 from the review: the name typed before is the default.
      await terminal.keys('Down', 'Enter');
      await terminal.waitFor(/Step 4 of 4 · Key name \(wizard-key\)/);
      await terminal.keys('Enter');
      await terminal.keys('Enter'); // description
      await terminal.keys('Up', 'Enter'); // 30 days instead
      await terminal.waitFor(/Expires\s+\d{4}-\d\d-\d\d \d\d:\d\d UTC \(in 30 days\)/);
      await terminal.keys('Enter'); // Yes, create it
      const done = await terminal.waitFor('EXIT=');
      expect(done).toContain('EXIT=0');
      const secrets = done.match(/agk_[0-9A-Za-z]{49}/g) ?? [];
      expect(secrets).toHaveLength(1);

      const whoami = await svc.api('GET', '/whoami', { key: secrets[0] });
      expect(whoami.status).toBe(200);
      expect(whoami.body).toMatchObject({ name: 'wizard-key', sharing_group_ids: [group.id] });
      expect(Math.round((Date.parse(whoami.body.expires_at) - Date.now()) / 86_400_000)).toBe(30);
      expect(done).toMatch(/Created key wizard-key \(key_\w+\); it expires \d{4}-\d\d-\d\d \d\d:\d\d UTC \(in 30 days\)/);
      expect(whoami.body.scopes).toEqual([
        { resource_type: 'namespace', resource_id: namespaceId, role: 'admin' },
        { resource_type: 'agent', resource_id: agentId, role: 'editor' },
      ]);
    } finally {
      await terminal.close();
    }
  });

  test('tasks migrate on a terminal shows the plan, asks, then moves the tasks', async () => {
    const v1 = await deployActive(svc, { agent: 'default/planner' });
    const task = (await createTask(svc, { agent_name: 'default/planner' })).id;
    const v2 = await deployActive(svc, { agent: 'default/planner', are_tasks_sticky: true });
    const env = [`AGENTCTL_CONFIG_DIR=${scratch.dir}`, `AGENTCTL_BASE_URL=${svc.url}`, `AGENTCTL_API_KEY=${svc.adminKey}`, 'NO_COLOR=1'].join(' ');
    const terminal = await Terminal.start(
      `env -u CI ${env} ${process.execPath} --import tsx ${ENTRY} tasks migrate --from ${v1.version_id} --to-latest; echo "EXIT=$?"`,
    );
    try {
      const plan = await terminal.waitFor('Move 1 task?');
      expect(plan).toContain(`Plan: move 1 task on branch main from v1 to v2`);
      expect((await svc.client().getTask({ params: { task_id: task } })).current_version_id).toBe(v1.version_id);
      await terminal.type('y');
      await terminal.keys('Enter');
      const done = await terminal.waitFor('EXIT=');
      expect(done).toContain('EXIT=0');
      expect(done).toContain(`v1 is now RETIRED: it takes no tasks, so they cannot be moved back.`);
      expect((await svc.client().getTask({ params: { task_id: task } })).current_version_id).toBe(v2.version_id);
    } finally {
      await terminal.close();
    }
  });

  test('agents delete on a terminal: answering no changes nothing and exits 1', async () => {
    const deployed = await deployActive(svc, { agent: 'default/keeper' });
    const env = [`AGENTCTL_CONFIG_DIR=${scratch.dir}`, `AGENTCTL_BASE_URL=${svc.url}`, `AGENTCTL_API_KEY=${svc.adminKey}`, 'NO_COLOR=1'].join(' ');
    const terminal = await Terminal.start(`env -u CI ${env} ${process.execPath} --import tsx ${ENTRY} agents delete default/keeper; echo "EXIT=$?"`);
    try {
      await terminal.waitFor('Delete agent default/keeper, its branches, versions and environments?');
      await terminal.type('n');
      await terminal.keys('Enter');
      const done = await terminal.waitFor('EXIT=');
      // Answering no is an outcome, not an error: one plain line, and the exit code of a declined confirmation.
      expect(done).toContain('✓ Delete agent default/keeper, its branches, versions and environments? No\nAnswered no: nothing changed.\nEXIT=1');
      expect(done).not.toContain('error:');
      expect((await svc.client().getAgent({ params: { agent_id: deployed.agent_id } })).id).toBe(deployed.agent_id);
    } finally {
      await terminal.close();
    }
  });

  test('secrets set on a terminal asks for the value without showing it', async () => {
    await deployActive(svc, { agent: 'default/vault' });
    const env = [`AGENTCTL_CONFIG_DIR=${scratch.dir}`, `AGENTCTL_BASE_URL=${svc.url}`, `AGENTCTL_API_KEY=${svc.adminKey}`, 'NO_COLOR=1'].join(' ');
    const terminal = await Terminal.start(
      `env -u CI ${env} ${process.execPath} --import tsx ${ENTRY} secrets set API_TOKEN --agent default/vault; echo "EXIT=$?"`,
    );
    try {
      await terminal.waitFor('Value of API_TOKEN (hidden)');
      await terminal.type('typed-9f31-value');
      await terminal.keys('Enter');
      const done = await terminal.waitFor('EXIT=');
      expect(done).toContain('Created secret API_TOKEN of default/vault; running versions restart one replica at a time');
      expect(done).toContain('EXIT=0');
      expect(done).not.toContain('typed-9f31-value');
      const { secrets } = await svc.client().listSecrets({ params: { namespace_slug: 'default', agent_name: 'vault' } });
      expect(secrets.map((s) => [s.name, s.revision])).toEqual([['API_TOKEN', 1]]);
      const version = (await svc.client().listAgentVersions({ params: { namespace_slug: 'default', agent_name: 'vault' } })).versions[0]!;
      expect((await versionSecretEnv(svc.store.db, svc.service.secretsKey, version.id)).env).toEqual({ API_TOKEN: 'typed-9f31-value' });
    } finally {
      await terminal.close();
    }
  });
});
