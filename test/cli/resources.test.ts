import { readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import type { z } from 'zod';
import { afterAll, beforeEach, describe, expect, test } from 'vitest';
import { endpoints } from '../../src/contract/endpoints.js';
import { engines, useService } from '../support/service.js';
import { deployActive } from '../support/fixtures.js';
import { runCli, tempDir, useCliService } from './support.js';

/** stdout parsed and validated with the endpoint’s response schema. */
const parse = <K extends keyof typeof endpoints>(name: K, text: string): any => (endpoints[name].response as z.ZodType).parse(JSON.parse(text));

describe.each(engines)('agentctl resource commands (%s)', (engine) => {
  const { svc, env } = useCliService(engine);

  test('namespaces create prints the new namespace; --json is the server’s Namespace', async () => {
    const created = await runCli(['namespaces', 'create', 'research', '--name', 'Research', '--json'], { env });
    expect(created.code).toBe(0);
    expect(created.stderr).toBe('');
    const namespace = parse('createNamespace', created.stdout);
    expect(namespace).toMatchObject({ slug: 'research', name: 'Research' });

    const listed = await runCli(['namespaces', 'list', '--json'], { env });
    expect(listed.code).toBe(0);
    expect(
      parse('listNamespaces', listed.stdout)
        .namespaces.map((n: { slug: string }) => n.slug)
        .sort(),
    ).toEqual(['default', 'research']);
  });

  test('a piped list is tab-separated rows with ISO times and no header', async () => {
    const listed = await runCli(['namespaces', 'list'], { env });
    expect(listed.code).toBe(0);
    const rows = listed.stdout
      .trimEnd()
      .split('\n')
      .map((line) => line.split('\t'));
    expect(rows).toHaveLength(1);
    expect(rows[0][0]).toMatch(/^ns_/);
    expect(rows[0].slice(1, 3)).toEqual(['default', 'Default']);
    expect(rows[0][3]).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
  });

  test('on a terminal a list is a table with a header and relative times', async () => {
    const listed = await runCli(['namespaces', 'list', '--no-color'], { env, tty: true });
    expect(listed.code).toBe(0);
    const [header, row] = listed.stdout.trimEnd().split('\n');
    expect(
      header
        .split(/\s{2,}/)
        .map((s) => s.trim())
        .filter(Boolean),
    ).toEqual(['ID', 'SLUG', 'NAME', 'CREATED']);
    expect(row).toMatch(/default\s+Default\s+(now|\d+ sec\. ago)/);
  });

  test('an empty list prints nothing on stdout and exits 0', async () => {
    const listed = await runCli(['projects', 'list'], { env });
    expect(listed).toMatchObject({ code: 0, stdout: '', stderr: '' });
  });

  test('projects create and list', async () => {
    const created = await runCli(['projects', 'create', 'docs', '--description', 'Shared files', '--json'], { env });
    expect(created.code).toBe(0);
    const project = parse('createProject', created.stdout);
    expect(project).toMatchObject({ name: 'docs', description: 'Shared files' });
    const listed = await runCli(['projects', 'list', '--namespace', 'default', '--json'], { env });
    expect(parse('listProjects', listed.stdout).projects.map((p: { id: string }) => p.id)).toEqual([project.id]);
  });

  test('agents list, get by name and by id, and delete with --yes', async () => {
    const { agent_id: agentId } = await deployActive(svc, { agent: 'default/bot' });
    const listed = await runCli(['agents', 'list', '--json'], { env });
    expect(parse('listAgents', listed.stdout).agents.map((a: { id: string }) => a.id)).toEqual([agentId]);

    const byName = await runCli(['agents', 'get', 'default/bot', '--json'], { env });
    expect(parse('getAgent', byName.stdout)).toMatchObject({ id: agentId, name: 'bot' });
    const byId = await runCli(['agents', 'get', agentId], { env });
    expect(byId.stdout).toContain(`ID\t${agentId}\n`);
    expect(byId.stdout).toContain('Name\tbot\n');

    const deleted = await runCli(['agents', 'delete', 'default/bot', '--yes', '--json'], { env });
    expect(deleted.code).toBe(0);
    expect(parse('deleteAgentByName', deleted.stdout).id).toBe(agentId);
    expect((await runCli(['agents', 'get', 'default/bot'], { env })).code).toBe(3);
  });

  test('branches list, get by name, and retire with a reason', async () => {
    const { agent_id: agentId, branch_id: branchId } = await deployActive(svc, { agent: 'default/bot', branch: 'feature/search' });
    const listed = await runCli(['branches', 'list', '--agent', 'default/bot', '--json'], { env });
    expect(listed.code).toBe(0);
    const branches = parse('listAgentBranches', listed.stdout).branches;
    expect(branches).toMatchObject([{ id: branchId, agent_id: agentId, git_branch: 'feature/search', git_branch_normalized: 'feature-search' }]);

    const got = await runCli(['branches', 'get', 'feature/search', '--agent', 'default/bot', '--json'], { env });
    expect(parse('getBranch', got.stdout).id).toBe(branchId);

    const retired = await runCli(['branches', 'retire', 'feature/search', '--agent', 'default/bot', '--reason', 'merged', '--yes', '--json'], { env });
    expect(retired.code).toBe(0);
    expect(parse('retireBranch', retired.stdout)).toMatchObject({ id: branchId, retired_reason: 'merged' });
    const after = await runCli(['branches', 'list', '--agent', 'default/bot'], { env });
    expect(after).toMatchObject({ code: 0, stdout: '' });
    const withRetired = await runCli(['branches', 'list', '--agent', 'default/bot', '--include-retired', '--json'], { env });
    expect(parse('listAgentBranches', withRetired.stdout).total).toBe(1);
  });

  test('versions list newest first, filtered by branch and status; get by git-hash prefix', async () => {
    const first = await deployActive(svc, { agent: 'default/bot' });
    const second = await deployActive(svc, { agent: 'default/bot' });
    const listed = await runCli(['versions', 'list', '--agent', 'default/bot', '--json'], { env });
    expect(listed.code).toBe(0);
    expect(parse('listAgentVersions', listed.stdout).versions.map((v: { id: string }) => v.id)).toEqual([second.version_id, first.version_id]);

    const active = await runCli(['versions', 'list', '--agent', 'default/bot', '--branch', 'main', '--status', 'ACTIVE', '--json'], { env });
    expect(parse('listAgentVersions', active.stdout).versions.map((v: { id: string }) => v.id)).toEqual([second.version_id]);

    const byHash = await runCli(['versions', 'get', first.git_hash.slice(0, 8), '--agent', 'default/bot', '--json'], { env });
    expect(byHash.code).toBe(0);
    expect(parse('getVersion', byHash.stdout)).toMatchObject({ id: first.version_id, git_hash: first.git_hash });

    const events = await runCli(['versions', 'get', second.version_id, '--events', '--json'], { env });
    expect(parse('listVersionEvents', events.stdout).events.map((e: { type: string }) => e.type)).toContain('VERSION_ACTIVATED');
  });

  test('a git-hash reference without --agent is a usage error naming --agent', async () => {
    const result = await runCli(['versions', 'get', 'abc1234'], { env });
    expect(result.code).toBe(2);
    expect(result.stdout).toBe('');
    expect(result.stderr).toContain('add --agent namespace/name');
  });

  test('envs create, get, update, resolve, list and delete', async () => {
    await deployActive(svc, { agent: 'default/bot' });
    const created = await runCli(['envs', 'create', 'staging', '--agent', 'default/bot', '--rule', 'staging', '--rule', 'release/*', '--json'], { env });
    expect(created.code).toBe(0);
    expect(parse('createEnvironment', created.stdout)).toMatchObject({ name: 'staging', branch_rules: ['staging', 'release/*'], is_prod: false });

    const updated = await runCli(
      ['envs', 'update', 'staging', '--agent', 'default/bot', '--rule', 'release/*', '--description', 'Release candidates', '--json'],
      { env },
    );
    expect(parse('updateEnvironment', updated.stdout)).toMatchObject({ branch_rules: ['release/*'], description: 'Release candidates' });

    const resolved = await runCli(['envs', 'resolve', '--agent', 'default/bot', '--branch', 'release/2.0', '--json'], { env });
    expect(parse('resolveEnvironment', resolved.stdout).environment.name).toBe('staging');

    const got = await runCli(['envs', 'get', 'production', '--agent', 'default/bot'], { env });
    expect(got.stdout).toContain('Production\ttrue\n');

    const listed = await runCli(['envs', 'list', '--agent', 'default/bot', '--json'], { env });
    expect(
      parse('listEnvironments', listed.stdout)
        .environments.map((e: { name: string }) => e.name)
        .sort(),
    ).toEqual(['preview', 'production', 'staging']);

    const deleted = await runCli(['envs', 'delete', 'staging', '--agent', 'default/bot', '--yes', '--json'], { env });
    expect(deleted.code).toBe(0);
    parse('deleteEnvironment', deleted.stdout);
    expect((await runCli(['envs', 'get', 'staging', '--agent', 'default/bot'], { env })).code).toBe(3);
  });

  test('envs create without --rule is a usage error', async () => {
    const result = await runCli(['envs', 'create', 'staging', '--agent', 'default/bot'], { env });
    expect(result.code).toBe(2);
    expect(result.stderr).toContain('Missing --rule');
  });

  test('groups create and list', async () => {
    const created = await runCli(['groups', 'create', 'platform', '--description', 'Platform team', '--json'], { env });
    expect(created.code).toBe(0);
    const group = parse('createGroup', created.stdout);
    const listed = await runCli(['groups', 'list', '--json'], { env });
    expect(parse('listGroups', listed.stdout).groups.map((g: { id: string }) => g.id)).toEqual([group.id]);
  });

  test('keys create with --preset fills the role of a role-less --scope; the secret is on stdout only', async () => {
    await deployActive(svc, { agent: 'default/bot' });
    const result = await runCli(
      ['keys', 'create', '--preset', 'deploy', '--scope', 'namespace:default', '--scope', 'agent:default/bot', '--name', 'ci', '--expires', '90d'],
      { env },
    );
    expect(result.code).toBe(0);
    expect(result.stdout).toMatch(/^agk_[0-9A-Za-z]{49}\n$/);
    expect(result.stderr).not.toContain(result.stdout.trim());
    expect(result.stderr).toContain('store it now');
    expect(result.stderr).toContain('No sharing group chosen');

    const whoami = await svc.api('GET', '/whoami', { key: result.stdout.trim() });
    expect(whoami.status).toBe(200);
    expect(whoami.body.scopes.map((s: { resource_type: string; role: string }) => `${s.resource_type}:${s.role}`).sort()).toEqual([
      'agent:editor',
      'namespace:admin',
    ]);
    expect(Date.parse(whoami.body.expires_at) - Date.now()).toBeGreaterThan(89 * 24 * 3600 * 1000);
  });

  test('keys create --json prints the server’s response with the secret', async () => {
    const group = await svc.client().createGroup({ body: { name: 'platform' } });
    const result = await runCli(['keys', 'create', '--name', 'reader', '--scope', 'namespace:default:admin', '--group', 'platform', '--json'], { env });
    expect(result.code).toBe(0);
    expect(result.stderr).toBe('');
    const created = parse('createKey', result.stdout);
    expect(created.api_key).toMatchObject({ name: 'reader', sharing_group_ids: [group.id] });
    expect(created.secret).toMatch(/^agk_/);
    // No --expires: the wizard's default, 90 days.
    expect(Math.round((Date.parse(created.api_key.expires_at) - Date.now()) / 86_400_000)).toBe(90);
  });

  test('keys list, get, rotate and revoke', async () => {
    const client = svc.client();
    const made = await client.createKey({
      body: { name: 'temp', scopes: [{ resource_type: 'namespace', resource_id: (await client.listNamespaces()).namespaces[0].id, role: 'admin' }] },
    });
    const id = made.api_key.id;
    const listed = await runCli(['keys', 'list', '--json'], { env });
    expect(
      parse('listKeys', listed.stdout)
        .api_keys.map((k: { name: string }) => k.name)
        .sort(),
    ).toEqual(['bootstrap', 'temp']);
    expect(listed.stdout).not.toContain(made.secret);

    const got = await runCli(['keys', 'get', id, '--json'], { env });
    expect(parse('getKey', got.stdout).id).toBe(id);

    const rotated = await runCli(['keys', 'rotate', id, '--yes'], { env });
    expect(rotated.code).toBe(0);
    const secret = rotated.stdout.trim();
    expect(secret).toMatch(/^agk_/);
    expect((await svc.api('GET', '/whoami', { key: made.secret })).status).toBe(401);
    expect((await svc.api('GET', '/whoami', { key: secret })).status).toBe(200);

    const revoked = await runCli(['keys', 'revoke', id, '--yes', '--json'], { env });
    expect(parse('revokeKey', revoked.stdout).revoked_at).not.toBeNull();
    expect((await svc.api('GET', '/whoami', { key: secret })).status).toBe(401);
  });

  test('--debug traces requests on stderr with the key redacted', async () => {
    const made = await runCli(['keys', 'create', '--name', 'traced', '--scope', 'namespace:default:admin', '--json', '--debug'], { env });
    expect(made.code).toBe(0);
    const secret = made.json().secret;
    expect(made.stderr).toContain(`→ POST ${svc.url}/api_keys`);
    expect(made.stderr).toContain('"authorization":"Bearer [redacted]"');
    expect(made.stderr).toContain('"secret":"[redacted]"');
    expect(made.stderr).not.toContain(svc.adminKey);
    expect(made.stderr).not.toContain(secret);
    expect(made.stderr).not.toContain(svc.adminKey.slice(4, 20));
  });
});

describe.each(engines)('agentctl auth and config (%s)', (engine) => {
  const svc = useService(engine, {}, { resetBeforeEach: false });
  let config: ReturnType<typeof tempDir>;
  afterAll(() => config?.remove());
  beforeEach(() => {
    config?.remove();
    config = tempDir();
  });
  const bare = () => ({ AGENTCTL_CONFIG_DIR: config.dir, AGENTCTL_RETRIES: '0' });

  test('auth login checks the key, saves the profile with mode 0600 and makes it current', async () => {
    const login = await runCli(['auth', 'login', '--api-key', svc.adminKey, '--base-url', svc.url, '--profile', 'dev'], { env: bare() });
    expect(login.code).toBe(0);
    expect(login.stderr).toContain('Logged in to');
    const file = path.join(config.dir, 'config.json');
    expect(statSync(file).mode & 0o777).toBe(0o600);
    expect(JSON.parse(readFileSync(file, 'utf8'))).toEqual({ profiles: { dev: { base_url: svc.url, api_key: svc.adminKey } }, current_profile: 'dev' });

    const status = await runCli(['auth', 'status', '--json'], { env: bare() });
    expect(status.code).toBe(0);
    expect(status.json()).toMatchObject({ profile: 'dev', base_url: svc.url, base_url_source: 'profile', api_key_source: 'profile', env_overrides: [] });
    expect(endpoints.whoami.response.parse(status.json().whoami).name).toBe('bootstrap');
  });

  test('auth login refuses a wrong key and saves nothing', async () => {
    const login = await runCli(['auth', 'login', '--api-key', 'agk_wrong', '--base-url', svc.url], { env: bare() });
    expect(login.code).toBe(4);
    expect((await runCli(['config', 'list', '--json'], { env: bare() })).json().profiles).toEqual([]);
  });

  test('auth status says which source is active and warns when the environment overrides the profile', async () => {
    await runCli(['auth', 'login', '--api-key', svc.adminKey, '--base-url', svc.url], { env: bare() });
    const client = svc.client();
    const made = await client.createKey({
      body: { name: 'other', scopes: [{ resource_type: 'namespace', resource_id: (await client.listNamespaces()).namespaces[0].id, role: 'admin' }] },
    });
    const status = await runCli(['auth', 'status'], { env: { ...bare(), AGENTCTL_API_KEY: made.secret } });
    expect(status.code).toBe(0);
    expect(status.stderr).toContain('warning: AGENTCTL_API_KEY overrides the value saved in profile "default"');
    expect(status.stdout).toContain(`API key\t${made.secret.slice(0, 12)}… (from AGENTCTL_API_KEY)`);
    expect(status.stdout).toContain(`Base URL\t${svc.url} (from profile "default")`);
  });

  test('a flag beats the environment, which beats the profile', async () => {
    await runCli(['config', 'set', 'base_url', 'http://127.0.0.1:9', '--profile', 'p'], { env: bare() });
    await runCli(['config', 'set', 'api_key', svc.adminKey, '--profile', 'p'], { env: bare() });
    const viaEnv = await runCli(['auth', 'status', '--json', '--profile', 'p'], { env: { ...bare(), AGENTCTL_BASE_URL: svc.url } });
    expect(viaEnv.json()).toMatchObject({ base_url: svc.url, base_url_source: 'env', env_overrides: ['AGENTCTL_BASE_URL'] });
    const viaFlag = await runCli(['auth', 'status', '--json', '--profile', 'p', '--base-url', svc.url], {
      env: { ...bare(), AGENTCTL_BASE_URL: 'http://127.0.0.1:9' },
    });
    expect(viaFlag.json()).toMatchObject({ base_url: svc.url, base_url_source: 'flag' });
  });

  test('auth status without any key exits 4 and says how to log in', async () => {
    const status = await runCli(['auth', 'status'], { env: bare() });
    expect(status.code).toBe(4);
    expect(status.stderr).toContain('Not logged in');
    expect(status.stderr).toContain('try:  agentctl auth login');
  });

  test('auth logout removes the key from the profile', async () => {
    await runCli(['auth', 'login', '--api-key', svc.adminKey, '--base-url', svc.url], { env: bare() });
    const logout = await runCli(['auth', 'logout'], { env: bare() });
    expect(logout.code).toBe(0);
    expect((await runCli(['config', 'get', 'api_key'], { env: bare() })).code).toBe(3);
    expect((await runCli(['namespaces', 'list'], { env: bare() })).code).toBe(4);
  });

  test('config set, get, list and use', async () => {
    expect((await runCli(['config', 'set', 'base_url', 'https://a.example.com', '--profile', 'a'], { env: bare() })).code).toBe(0);
    expect((await runCli(['config', 'set', 'base_url', 'https://b.example.com', '--profile', 'b'], { env: bare() })).code).toBe(0);
    expect((await runCli(['config', 'get', 'current_profile'], { env: bare() })).stdout).toBe('a\n');
    expect((await runCli(['config', 'use', 'b'], { env: bare() })).code).toBe(0);
    expect((await runCli(['config', 'get', 'base_url'], { env: bare() })).stdout).toBe('https://b.example.com\n');
    const listed = await runCli(['config', 'list'], { env: bare() });
    expect(listed.stdout).toBe('\ta\thttps://a.example.com\t\n*\tb\thttps://b.example.com\t\n');
    const missing = await runCli(['config', 'use', 'nope'], { env: bare() });
    expect(missing.code).toBe(3);
    expect(missing.stderr).toContain('error: No profile named "nope"; the profiles are: a, b\n');
    expect(missing.stderr).toContain('try:  agentctl auth login --profile nope');
  });

  test('config get api_key shows a prefix unless --reveal', async () => {
    await runCli(['config', 'set', 'api_key', svc.adminKey], { env: bare() });
    expect((await runCli(['config', 'get', 'api_key'], { env: bare() })).stdout).toBe(`${svc.adminKey.slice(0, 12)}…\n`);
    expect((await runCli(['config', 'get', 'api_key', '--reveal'], { env: bare() })).stdout).toBe(`${svc.adminKey}\n`);
  });

  test('a config file readable by others is set back to 0600 with a warning', async () => {
    await runCli(['config', 'set', 'base_url', svc.url], { env: bare() });
    const file = path.join(config.dir, 'config.json');
    (await import('node:fs')).chmodSync(file, 0o644);
    const listed = await runCli(['config', 'list'], { env: bare() });
    expect(listed.stderr).toContain('was readable by others (mode 644); set it to 600');
    expect(statSync(file).mode & 0o777).toBe(0o600);
  });

  test('AGENTCTL_PROFILE chooses the profile', async () => {
    await runCli(['config', 'set', 'base_url', 'https://x.example.com', '--profile', 'x'], { env: bare() });
    await runCli(['config', 'set', 'base_url', 'https://y.example.com', '--profile', 'y'], { env: bare() });
    expect((await runCli(['config', 'get', 'base_url'], { env: { ...bare(), AGENTCTL_PROFILE: 'y' } })).stdout).toBe('https://y.example.com\n');
  });

  test('completion prints the committed script', async () => {
    for (const [shell, file] of [
      ['bash', 'agentctl.bash'],
      ['zsh', '_agentctl'],
      ['fish', 'agentctl.fish'],
    ]) {
      const result = await runCli(['completion', shell], { env: bare() });
      expect(result.code).toBe(0);
      expect(result.stdout).toBe(readFileSync(path.join('completions', file), 'utf8'));
    }
  });

  test('server status with no server running exits 3', async () => {
    const result = await runCli(['server', 'status', '--data-dir', path.join(config.dir, 'data')], { env: bare() });
    expect(result.code).toBe(3);
    expect(result.stderr).toContain('No server is running from');
  });
});
