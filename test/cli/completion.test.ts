import { chmodSync, mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { execa } from 'execa';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { engines, useService } from '../support/service.js';
import { deployActive } from '../support/fixtures.js';
import { tempDir } from './support.js';
import { ENTRY, hasTmux, Terminal } from './terminal.js';

const has = async (shell: string) =>
  execa(shell, ['-c', 'exit 0'], { reject: false }).then(
    (r) => r.exitCode === 0,
    () => false,
  );
const shells = { bash: await has('bash'), zsh: await has('zsh'), fish: await has('fish') };
for (const [shell, present] of Object.entries(shells))
  if (!hasTmux || !present) console.warn(`SKIPPED: completion in ${shell} needs tmux and ${shell} (apt-get install -y tmux ${shell})`);

const TSX = path.resolve('node_modules/tsx/dist/loader.mjs');
const COMPLETIONS = path.resolve('completions');

/** The hidden completion helper, as the generated scripts call it: the real CLI in a process of its own. */
describe('agentctl __complete', () => {
  // One engine and one setup for every case: completion only reads.
  const svc = useService(engines.includes('postgres') ? 'postgres' : 'pglite', {}, { resetBeforeEach: false });
  const scratch = tempDir();
  const configDir = path.join(scratch.dir, 'config');
  beforeAll(async () => {
    await deployActive(svc, { agent: 'default/bot' });
    await svc.client().createNamespace({ body: { name: 'Team', slug: 'team' } });
    await deployActive(svc, { agent: 'team/helper' });
    mkdirSync(configDir, { recursive: true });
    writeFileSync(
      path.join(configDir, 'config.json'),
      JSON.stringify({
        current_profile: 'staging',
        profiles: { staging: { base_url: svc.url, api_key: svc.adminKey }, prod: { base_url: 'http://127.0.0.1:9', api_key: svc.adminKey } },
      }),
      { mode: 0o600 },
    );
  });
  afterAll(() => scratch.remove());

  const complete = (args: string[], env: Record<string, string> = {}) =>
    execa(process.execPath, ['--import', TSX, ENTRY, '__complete', ...args], {
      env: { AGENTCTL_CONFIG_DIR: configDir, AGENTCTL_COMPLETE_TIMEOUT_MS: '20000', ...env },
      extendEnv: false,
      reject: false,
      stdin: 'ignore',
    });

  test('profiles: the names in the config file, from the file alone', async () => {
    const result = await complete(['profiles'], { AGENTCTL_BASE_URL: 'http://127.0.0.1:9' });
    expect([result.exitCode, result.stdout, result.stderr]).toEqual([0, 'prod\nstaging', '']);
  });

  test('agents: namespace/name of every agent the profile’s key can see', async () => {
    const result = await complete(['agents']);
    expect([result.exitCode, result.stdout, result.stderr]).toEqual([0, 'default/bot\nteam/helper', '']);
  });

  test('agents for the --profile on the command line being completed', async () => {
    const result = await complete(['agents', '--profile', 'prod']);
    expect([result.exitCode, result.stdout, result.stderr]).toEqual([0, '', '']);
  });

  test('an unreachable service, a refused key or an unknown kind: nothing on stdout or stderr, exit 0', async () => {
    for (const [args, env] of [
      [['agents'], { AGENTCTL_BASE_URL: 'http://127.0.0.1:9' }],
      [['agents'], { AGENTCTL_API_KEY: 'agk_notakey' }],
      [['agents', '--profile', 'missing'], {}],
      [['versions'], {}],
      [[], {}],
    ] as const) {
      const result = await complete([...args], env);
      expect([args, result.exitCode, result.stdout, result.stderr]).toEqual([args, 0, '', '']);
    }
  });

  test('is hidden from help', async () => {
    const help = await execa(process.execPath, ['--import', TSX, ENTRY, '--help'], { reject: false });
    expect(help.stdout).toContain('completion');
    expect(help.stdout).not.toContain('__complete');
  });

  describe('in a real shell, through the committed completion scripts', () => {
    const bin = path.join(scratch.dir, 'bin');
    let env: string;
    beforeAll(() => {
      mkdirSync(bin, { recursive: true });
      writeFileSync(
        path.join(bin, 'agentctl'),
        `#!/bin/sh\nexec ${JSON.stringify(process.execPath)} --import ${JSON.stringify(TSX)} ${JSON.stringify(ENTRY)} "$@"\n`,
      );
      chmodSync(path.join(bin, 'agentctl'), 0o755);
      // Generous: the CLI runs from source through tsx here, which compiles on the fly on a busy machine.
      env = `env -i HOME=${scratch.dir} TERM=xterm PATH=${bin}:/usr/bin:/bin AGENTCTL_CONFIG_DIR=${configDir} AGENTCTL_COMPLETE_TIMEOUT_MS=20000`;
    });

    const session = async (command: string, run: (terminal: Terminal) => Promise<void>) => {
      const terminal = await Terminal.start(`${env} ${command}`);
      try {
        await run(terminal);
      } finally {
        await terminal.close();
      }
    };

    test.skipIf(!hasTmux || !shells.bash)('bash offers profiles, agent names and enum values', async () => {
      await session(`bash --norc --noprofile`, async (terminal) => {
        await terminal.type(`PS1='$ '; source ${COMPLETIONS}/agentctl.bash; clear`);
        await terminal.keys('Enter');
        await terminal.type('agentctl config use ');
        await terminal.keys('Tab', 'Tab');
        await terminal.waitFor(/prod\s+staging/);
        await terminal.keys('C-c');
        await terminal.type('agentctl tasks ls --agent t');
        await terminal.keys('Tab');
        await terminal.waitFor('agentctl tasks ls --agent team/helper ');
        await terminal.type('--status R');
        await terminal.keys('Tab');
        await terminal.waitFor('agentctl tasks ls --agent team/helper --status RUNNING ');
      });
    });

    test.skipIf(!hasTmux || !shells.zsh)('zsh offers profiles, agent names and enum values', async () => {
      await session(`zsh -f`, async (terminal) => {
        await terminal.type(`PS1='%% '; fpath=(${COMPLETIONS} $fpath); autoload -U compinit; compinit -u; clear`);
        await terminal.keys('Enter');
        await terminal.type('agentctl config use ');
        await terminal.keys('Tab');
        await terminal.waitFor(/prod\s+staging/);
        await terminal.keys('C-c');
        await terminal.type('agentctl agents get t');
        await terminal.keys('Tab');
        await terminal.waitFor('agentctl agents get team/helper');
        await terminal.keys('C-c');
        await terminal.type('agentctl versions list --status DR');
        await terminal.keys('Tab');
        await terminal.waitFor('agentctl versions list --status DRAINING');
      });
    });

    test.skipIf(!hasTmux || !shells.fish)('fish offers profiles, agent names and enum values', async () => {
      await session(`fish --no-config`, async (terminal) => {
        await terminal.type(`function fish_prompt; echo '> '; end; source ${COMPLETIONS}/agentctl.fish; clear`);
        await terminal.keys('Enter');
        await terminal.type('agentctl --profile ');
        await terminal.keys('Tab');
        // fish shows the flag's description beside each value.
        await terminal.waitFor(/prod\b.*staging\b/);
        await terminal.keys('C-c');
        await terminal.type('agentctl tasks list --agent d');
        await terminal.keys('Tab');
        await terminal.waitFor('agentctl tasks list --agent default/bot');
        await terminal.keys('C-c');
        await terminal.type('agentctl tasks list --status TIM');
        await terminal.keys('Tab');
        await terminal.waitFor('agentctl tasks list --status TIMED_OUT');
      });
    });
  });
});
