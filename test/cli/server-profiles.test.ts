import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, test } from 'vitest';
import { InterruptedError } from '../../src/cli/errors.js';
import { createTestDatabase, engines } from '../support/service.js';
import { runCli, tempDir, type CliResult } from './support.js';

describe.each(engines)('agentctl server start: one profile per server (%s)', (engine) => {
  const cleanups: (() => Promise<void> | void)[] = [];
  afterEach(async () => {
    for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
  });

  /** Runs `server start` in the foreground until it has written server.json, then stops it as `server stop` would. */
  async function startAndStop(
    env: Record<string, string>,
    dataDir: string,
    args: string[],
  ): Promise<{ result: CliResult; info: { profile: string; url: string } }> {
    const database = engine === 'postgres' ? await createTestDatabase() : undefined;
    if (database) cleanups.push(database.drop);
    const controller = new AbortController();
    const running = runCli(['server', 'start', '--port', '0', ...args, ...(database ? ['--database-url', database.url] : [])], {
      env,
      signal: controller.signal,
    });
    const infoFile = path.join(dataDir, 'server.json');
    while (!existsSync(infoFile)) await new Promise((resolve) => setTimeout(resolve, 50));
    const info = JSON.parse(readFileSync(infoFile, 'utf8'));
    controller.abort(new InterruptedError('SIGTERM'));
    return { result: await running, info };
  }

  test('a second server with another data dir saves its key in a profile of its own and says which', async () => {
    const scratch = tempDir();
    cleanups.push(scratch.remove);
    const defaultDir = path.join(scratch.dir, 'data');
    const secondDir = path.join(scratch.dir, 'Second Server');
    const env = { AGENTCTL_CONFIG_DIR: path.join(scratch.dir, 'config'), AGENTCTL_DATA_DIR: defaultDir };

    const first = await startAndStop(env, defaultDir, []);
    const second = await startAndStop(env, secondDir, ['--data-dir', secondDir]);

    expect(first.info.profile).toBe('local');
    expect(second.info.profile).toBe('local-second-server');
    const config = JSON.parse(readFileSync(path.join(scratch.dir, 'config', 'config.json'), 'utf8'));
    expect(config.current_profile).toBe('local');
    expect(config.profiles.local).toEqual({ base_url: first.info.url, api_key: first.result.stdout.trim(), data_dir: defaultDir });
    expect(config.profiles['local-second-server']).toEqual({ base_url: second.info.url, api_key: second.result.stdout.trim(), data_dir: secondDir });
    expect(first.result.stdout.trim()).not.toBe(second.result.stdout.trim());
    expect(second.result.stderr).toContain(
      'Created the org-admin key and saved it in profile "local-second-server": use it with --profile local-second-server or agentctl config use local-second-server',
    );
    // Two first starts of embedded PGlite (initdb each) take a while on a busy machine.
  }, 240_000);
});
