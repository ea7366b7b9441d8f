import path from 'node:path';
import { execa } from 'execa';
import { describe, expect, test } from 'vitest';

const launcher = path.resolve(import.meta.dirname, '../../bin/agentctl.js');

/** Runs the launcher as if Node were `version`. */
const runAs = (version: string) =>
  execa(process.execPath, ['--import', `data:text/javascript,Object.defineProperty(process.versions,"node",{value:"${version}"})`, launcher, '--version'], {
    reject: false,
  });

describe('bin/agentctl.js checks the Node version before loading anything', () => {
  test.each(['22.3.0', '22.22.1', '24.14.9', '25.9.0', '20.18.0'])('Node %s: exit 1 saying which Node to install', async (version) => {
    const result = await runAs(version);
    expect(result.exitCode).toBe(1);
    expect(result.stdout).toBe('');
    expect(result.stderr).toBe(
      `agentctl needs Node.js 22.22.2 or a later 22.x, or 24.15.0 or a later 24.x, or 26.0.0 or later; this is Node.js ${version}.\n` +
        'Install Node.js 24 LTS (https://nodejs.org, or: nvm install 24 / fnm install 24 / volta install node@24) and run agentctl again.',
    );
  });
});
