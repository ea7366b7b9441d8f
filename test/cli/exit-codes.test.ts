import { createServer } from 'node:net';
import { z } from 'zod';
import { describe, expect, test } from 'vitest';
import { engines } from '../support/service.js';
import { deployActive } from '../support/fixtures.js';
import { gitRepo, runCli, useCliService } from './support.js';

/** The documented `--json` error shape on stderr. */
const JsonError = z.strictObject({
  error: z.strictObject({
    code: z.string(),
    message: z.string(),
    status: z.number().nullable(),
    detail: z.unknown(),
    hint: z.string().nullable(),
    trace_id: z.string().nullable(),
  }),
});

/** A port nothing listens on: bound, then released. */
async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as { port: number }).port;
  await new Promise((resolve) => server.close(resolve));
  return port;
}

describe.each(engines)('agentctl exit codes (%s)', (engine) => {
  const { svc, scratch: config, env } = useCliService(engine);

  test('401: an unknown key exits 4 with a login hint; --json gives the error object', async () => {
    const bad = { ...env, AGENTCTL_API_KEY: `agk_${'A'.repeat(49)}` };
    const human = await runCli(['namespaces', 'list'], { env: bad });
    expect(human.code).toBe(4);
    expect(human.stdout).toBe('');
    expect(human.stderr.split('\n')[0]).toMatch(/^error: .+ \(401 unauthorized\)$/);
    expect(human.stderr).toContain('try:  agentctl auth login');

    const json = await runCli(['namespaces', 'list', '--json'], { env: bad });
    expect(json.code).toBe(4);
    expect(json.stdout).toBe('');
    expect(JsonError.parse(JSON.parse(json.stderr)).error).toMatchObject({ code: 'unauthorized', status: 401 });
  });

  test('403: a key that may see but not change an agent exits 4', async () => {
    const { agent_id: agentId } = await deployActive(svc, { agent: 'default/bot' });
    const viewer = await svc.client().createKey({ body: { name: 'viewer', scopes: [{ resource_type: 'agent', resource_id: agentId, role: 'viewer' }] } });
    const result = await runCli(['agents', 'delete', 'default/bot', '--yes', '--json'], { env: { ...env, AGENTCTL_API_KEY: viewer.secret } });
    expect(result.code).toBe(4);
    expect(JsonError.parse(JSON.parse(result.stderr)).error).toMatchObject({ code: 'forbidden', status: 403 });
  });

  test('404: an unknown task exits 3 and suggests the list command', async () => {
    const result = await runCli(['tasks', 'get', 'task_01NOPE'], { env });
    expect(result.code).toBe(3);
    expect(result.stderr).toContain('(404 not_found)');
    expect(result.stderr).toContain('try:  agentctl tasks list');
  });

  test('409: a duplicate namespace exits 5', async () => {
    const result = await runCli(['namespaces', 'create', 'default', '--json'], { env });
    expect(result.code).toBe(5);
    expect(JsonError.parse(JSON.parse(result.stderr)).error.status).toBe(409);
  });

  test('422: a value the server rejects exits 2 with the field named', async () => {
    const result = await runCli(['namespaces', 'create', 'Not_A_Slug!'], { env });
    expect(result.code).toBe(2);
    expect(result.stderr).toContain('Invalid request: SLUG:');
    expect(result.stderr).toContain('try:  agentctl namespaces create --help');

    const json = await runCli(['namespaces', 'create', 'Not_A_Slug!', '--json'], { env });
    const error = JsonError.parse(JSON.parse(json.stderr)).error;
    expect(error).toMatchObject({ code: 'validation_error', status: 422 });
    expect(error.detail).toEqual([expect.objectContaining({ loc: ['body', 'slug'] })]);
  });

  test('a refused connection exits 6 with a hint to start the server', async () => {
    const result = await runCli(['namespaces', 'list'], { env: { ...env, AGENTCTL_BASE_URL: `http://127.0.0.1:${await closedPort()}` } });
    expect(result.code).toBe(6);
    expect(result.stderr).toContain('ECONNREFUSED');
    expect(result.stderr).toContain('try:  agentctl server start');
  });

  test('an unknown flag or command exits 2', async () => {
    expect((await runCli(['namespaces', 'list', '--bogus'], { env })).code).toBe(2);
    expect((await runCli(['nope'], { env })).code).toBe(2);
    const json = await runCli(['tasks', 'list', '--status', 'SLEEPING', '--json'], { env });
    expect(json.code).toBe(2);
    expect(JsonError.parse(JSON.parse(json.stderr)).error.code).toBe('usage');
  });

  test('--help and --version exit 0 on stdout', async () => {
    const help = await runCli(['tasks', 'migrate', '--help']);
    expect(help.code).toBe(0);
    expect(help.stdout).toContain('Examples:\n  $ agentctl tasks migrate --from');
    const version = await runCli(['--version']);
    expect(version).toMatchObject({ code: 0, stdout: '0.1.0\n' });
  });

  test('interrupted (Ctrl-C) while waiting for a deploy exits 130', async () => {
    await gitRepo(config.dir);
    const controller = new AbortController();
    const running = runCli(['deploy', '--agent', 'default/bot', '--image', 'img:1'], { env, cwd: config.dir, signal: controller.signal });
    for (;;) {
      const versions = await svc.api('GET', '/agents/default/bot/versions');
      if (versions.status === 200 && versions.body.total === 1) break;
      await new Promise((r) => setTimeout(r, 20));
    }
    const { InterruptedError } = await import('../../src/cli/errors.js');
    controller.abort(new InterruptedError('SIGINT'));
    const result = await running;
    expect(result.code).toBe(130);
    expect(result.stderr).toContain('Stopped waiting;');
  });
});
