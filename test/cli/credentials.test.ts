import { describe, expect, test } from 'vitest';
import { engines } from '../support/service.js';
import { deploy } from '../support/fixtures.js';
import { scopedKey } from '../support/scoped-key.js';
import { runCli, serviceEnv, useCliService } from './support.js';

describe.each(engines)('agentctl versions credentials (%s)', (engine) => {
  const { svc, env } = useCliService(engine);

  /** A DEPLOYING version: what `versions credentials` is for. */
  const deployed = () => deploy(svc, { agent: 'bot' });

  /** `NAME=value` lines as a record (the values here need no shell quoting). */
  const parseLines = (stdout: string) =>
    Object.fromEntries(
      stdout
        .trim()
        .split('\n')
        .map((line) => line.split(/=(.*)/s).slice(0, 2) as [string, string]),
    );

  test('prints shell-sourceable AGENTCTL_* lines whose token registers the agent once', async () => {
    const v = await deployed();
    const result = await runCli(['versions', 'credentials', v.version_id], { env });
    expect(result.code, result.stderr).toBe(0);
    const lines = parseLines(result.stdout);
    expect(Object.keys(lines)).toEqual([
      'AGENTCTL_VERSION_ID',
      'AGENTCTL_BRANCH_ID',
      'AGENTCTL_REGISTRATION_TOKEN',
      'AGENTCTL_SIGNING_SECRET',
      'AGENTCTL_BASE_URL',
    ]);
    expect(lines).toMatchObject({ AGENTCTL_VERSION_ID: v.version_id, AGENTCTL_BRANCH_ID: v.branch_id, AGENTCTL_BASE_URL: svc.url });
    expect(lines.AGENTCTL_SIGNING_SECRET).toBe((await svc.client().getSigningSecret({ params: { version_id: v.version_id } })).signing_secret);
    expect(result.stderr).toContain('The registration token works once');

    const register = (token: string) =>
      svc.api('POST', '/versions/register', {
        key: null,
        body: { version_id: lines.AGENTCTL_VERSION_ID, branch_id: lines.AGENTCTL_BRANCH_ID, acp_url: 'http://127.0.0.1:9', registration_token: token },
      });
    expect((await register(lines.AGENTCTL_REGISTRATION_TOKEN)).status).toBe(200);
    expect((await register(lines.AGENTCTL_REGISTRATION_TOKEN)).status).toBe(401);
  });

  test('--json prints the same values as one object', async () => {
    const v = await deployed();
    const result = await runCli(['versions', 'credentials', v.version_id, '--json'], { env });
    expect(result.code).toBe(0);
    const body = result.json();
    expect(Object.keys(body).sort()).toEqual(['base_url', 'branch_id', 'expires_at', 'registration_token', 'signing_secret', 'version_id']);
    expect(body).toMatchObject({ version_id: v.version_id, branch_id: v.branch_id, base_url: svc.url });
  });

  test('--debug traces keep the token and the secret out of stderr', async () => {
    const v = await deployed();
    const result = await runCli(['versions', 'credentials', v.version_id, '--debug'], { env });
    expect(result.code).toBe(0);
    const lines = parseLines(result.stdout);
    expect(result.stderr).toContain('[redacted]');
    expect(result.stderr).not.toContain(lines.AGENTCTL_REGISTRATION_TOKEN);
    expect(result.stderr).not.toContain(lines.AGENTCTL_SIGNING_SECRET);
  });

  test('a key that is not admin on the agent gets exit code 4 and nothing on stdout', async () => {
    const v = await deployed();
    const editor = await scopedKey(svc, [{ resource_type: 'agent', resource_id: v.agent_id, role: 'editor' }]);
    const result = await runCli(['versions', 'credentials', v.version_id], { env: serviceEnv(svc, env.AGENTCTL_CONFIG_DIR, editor) });
    expect(result.code).toBe(4);
    expect(result.stdout).toBe('');
    expect(result.stderr).toContain('may not admin');
  });
});
