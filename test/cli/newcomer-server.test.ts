// Issue 18, "What a new user tripped over", items 1 and 2: server start, stop and status through the
// built CLI, each server a process of its own.
import { existsSync, readFileSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import path from 'node:path';
import pg from 'pg';
import { afterEach, describe, expect, test } from 'vitest';
import { createTestDatabase, engines } from '../support/service.js';
import { freePort } from '../support/ports.js';
import { agentctl } from './built.js';
import { tempDir } from './support.js';

describe.each(engines)('newcomer: server start, stop and status (%s)', (engine) => {
  const cleanups: (() => Promise<unknown> | unknown)[] = [];
  afterEach(async () => {
    for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
  });

  /** A scratch home for one test: config and default data directories, and PostgreSQL's database on that engine. */
  async function home() {
    const scratch = tempDir();
    cleanups.push(scratch.remove);
    const database = engine === 'postgres' ? await createTestDatabase() : undefined;
    if (database) cleanups.push(database.drop);
    const env = {
      AGENTCTL_CONFIG_DIR: path.join(scratch.dir, 'config'),
      XDG_DATA_HOME: path.join(scratch.dir, 'xdg'),
      DATABASE_URL: database?.url,
      AGENTCTL_RUNTIME: 'none',
    };
    const config = () => JSON.parse(readFileSync(path.join(env.AGENTCTL_CONFIG_DIR, 'config.json'), 'utf8'));
    const orgCount = async () => {
      const client = new pg.Client({ connectionString: database!.url });
      await client.connect();
      try {
        // null: not even the schema is there.
        if ((await client.query(`SELECT to_regclass('public.orgs') AS t`)).rows[0].t === null) return null;
        return Number((await client.query('SELECT count(*) FROM orgs')).rows[0].count);
      } finally {
        await client.end();
      }
    };
    return { dir: scratch.dir, env, config, defaultDataDir: path.join(env.XDG_DATA_HOME, 'agentctl'), orgCount };
  }

  /** A port some other process listens on, for the test's duration. */
  async function takenPort(): Promise<number> {
    const blocker: Server = createServer();
    await new Promise<void>((resolve) => blocker.listen(0, '127.0.0.1', resolve));
    cleanups.push(() => new Promise((resolve) => blocker.close(resolve)));
    return (blocker.address() as { port: number }).port;
  }

  /** `server start --detach`, stopped again after the test. */
  async function startDetached(env: Record<string, string | undefined>, args: string[] = []) {
    const started = await agentctl(['server', 'start', '--detach', '--port', String(await freePort()), ...args, '--json'], { env });
    expect(started.code, started.stderr).toBe(0);
    const info = JSON.parse(started.stdout);
    cleanups.push(() => agentctl(['server', 'stop', '--data-dir', info.data_dir], { env }));
    return info;
  }

  test('a start on a port in use exits 5 naming the port, creates nothing, and the next start saves a key that works', async () => {
    const h = await home();
    const port = await takenPort();

    const failed = await agentctl(['server', 'start', '--port', String(port)], { env: h.env });

    expect(failed.code).toBe(5);
    expect(failed.stdout).toBe('');
    expect(failed.stderr).toContain(`error: Port 127.0.0.1:${port} is in use by another process`);
    expect(failed.stderr).toContain('The server did not start and created no key.');
    expect(failed.stderr).toContain('agentctl server start --port 0');
    expect(existsSync(h.defaultDataDir)).toBe(false);
    expect(existsSync(path.join(h.env.AGENTCTL_CONFIG_DIR, 'config.json'))).toBe(false);
    if (engine === 'postgres') expect(await h.orgCount()).toBe(null);

    const info = await startDetached(h.env);
    expect(info.bootstrap_key_saved).toBe(true);
    expect(h.config().current_profile).toBe('local');
    const agents = await agentctl(['agents', 'list', '--json'], { env: h.env });
    expect(agents.code, agents.stderr).toBe(0);
    expect(JSON.parse(agents.stdout).total).toBe(0);
  }, 240_000);

  test('a start that fails after creating its key (--metrics-port in use) takes the key back, so the next start creates one that works', async () => {
    const h = await home();
    const metricsPort = await takenPort();

    const failed = await agentctl(['server', 'start', '--port', '0', '--metrics-port', String(metricsPort)], { env: h.env });

    expect(failed.code).toBe(5);
    expect(failed.stdout).toBe('');
    expect(failed.stderr).toContain(`error: Port 127.0.0.1:${metricsPort} is in use by another process`);
    expect(existsSync(path.join(h.env.AGENTCTL_CONFIG_DIR, 'config.json'))).toBe(false);
    if (engine === 'postgres') expect(await h.orgCount()).toBe(0);

    const info = await startDetached(h.env);
    expect(info.bootstrap_key_saved).toBe(true);
    const agents = await agentctl(['agents', 'list', '--json'], { env: h.env });
    expect(agents.code, agents.stderr).toBe(0);
  }, 240_000);

  test('server status and stop without --data-dir find the server the current profile points at; hints carry the --data-dir they need', async () => {
    const h = await home();
    const dataDir = path.join(h.dir, 'Team Server');
    const info = await startDetached(h.env, ['--data-dir', dataDir]);
    expect(h.config().current_profile).toBe('local-team-server');

    const status = await agentctl(['server', 'status', '--json'], { env: h.env });
    expect(status.code, status.stderr).toBe(0);
    expect(JSON.parse(status.stdout)).toMatchObject({ pid: info.pid, url: info.url, data_dir: dataDir, healthy: true });

    const again = await agentctl(['server', 'start', '--data-dir', dataDir], { env: h.env });
    expect(again.code).toBe(5);
    expect(again.stderr).toContain(`agentctl server stop --data-dir '${dataDir}'`);

    const stopped = await agentctl(['server', 'stop', '--json'], { env: h.env });
    expect(stopped.code, stopped.stderr).toBe(0);
    expect(JSON.parse(stopped.stdout)).toMatchObject({ pid: info.pid, data_dir: dataDir, stopped: true });

    const gone = await agentctl(['server', 'status', '--data-dir', dataDir], { env: h.env });
    expect(gone.code).toBe(3);
    expect(gone.stderr).toContain(`No server is running from ${dataDir}`);
    expect(gone.stderr).toContain(`agentctl server start --detach --data-dir '${dataDir}'`);
  }, 240_000);
});
