import { execa } from 'execa';
import { existsSync, lstatSync, mkdirSync, readFileSync, readlinkSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { runCli, tempDir } from './support.js';

const repoRoot = path.resolve(import.meta.dirname, '../..');

describe('agentctl init', () => {
  let tmp: ReturnType<typeof tempDir>;
  const env = () => ({
    AGENTCTL_CONFIG_DIR: path.join(tmp.dir, 'config'),
    GIT_AUTHOR_NAME: 'Ada Lovelace',
    GIT_AUTHOR_EMAIL: 'ada@example.com',
    GIT_COMMITTER_NAME: 'Ada Lovelace',
    GIT_COMMITTER_EMAIL: 'ada@example.com',
    PATH: process.env.PATH,
  });
  beforeEach(() => (tmp = tempDir('agentctl-init-')));
  afterEach(() => tmp.remove());

  it('writes an agent project named after its directory, links agentctl and commits it', async () => {
    const result = await runCli(['init', 'my-bot', '--json'], { cwd: tmp.dir, env: env() });
    expect(result.stderr).toBe('');
    expect(result.code).toBe(0);
    const dir = path.join(tmp.dir, 'my-bot');
    const out = result.json();
    expect(out).toEqual({
      directory: dir,
      agent: 'default/my-bot',
      acp_type: 'async',
      files: ['package.json', 'tsconfig.json', 'agentctl.json', 'src/index.ts', 'README.md', '.gitignore', 'node_modules/agentctl'],
      git_commit: expect.stringMatching(/^[0-9a-f]{40}$/),
    });
    expect(JSON.parse(readFileSync(path.join(dir, 'agentctl.json'), 'utf8'))).toEqual({
      agent: 'default/my-bot',
      entry: 'src/index.ts',
      acp_type: 'async',
      description: '',
    });
    expect(JSON.parse(readFileSync(path.join(dir, 'package.json'), 'utf8'))).toEqual({
      name: 'my-bot',
      version: '0.1.0',
      private: true,
      type: 'module',
      scripts: { start: 'node src/index.ts', typecheck: 'tsc --noEmit' },
    });
    expect(readFileSync(path.join(dir, 'src/index.ts'), 'utf8')).toContain("import { AgentServer, ConflictError } from 'agentctl/adk';");
    expect(lstatSync(path.join(dir, 'node_modules/agentctl')).isSymbolicLink()).toBe(true);
    expect(readlinkSync(path.join(dir, 'node_modules/agentctl'))).toBe(repoRoot);
    const git = (...args: string[]) => execa('git', args, { cwd: dir });
    expect((await git('log', '--format=%H %s')).stdout).toBe(`${out.git_commit} New agent from agentctl init`);
    expect((await git('ls-files')).stdout.split('\n')).toEqual(['.gitignore', 'README.md', 'agentctl.json', 'package.json', 'src/index.ts', 'tsconfig.json']);
    expect((await git('status', '--porcelain')).stdout).toBe('');
  });

  it('writes a sync agent with --acp-type sync and takes --agent', async () => {
    const result = await runCli(['init', 'answers', '--acp-type', 'sync', '--agent', 'team/answer-bot', '--no-git', '--json'], { cwd: tmp.dir, env: env() });
    expect(result.code).toBe(0);
    const dir = path.join(tmp.dir, 'answers');
    expect(JSON.parse(readFileSync(path.join(dir, 'agentctl.json'), 'utf8'))).toEqual({
      agent: 'team/answer-bot',
      entry: 'src/index.ts',
      acp_type: 'sync',
      description: '',
    });
    expect(readFileSync(path.join(dir, 'src/index.ts'), 'utf8')).toContain('onMessage(_ctx, content)');
    expect(result.json().git_commit).toBeNull();
    expect(existsSync(path.join(dir, '.git'))).toBe(false);
  });

  it('refuses a non-empty directory without --force, and writes into it with --force', async () => {
    const dir = path.join(tmp.dir, 'busy');
    mkdirSync(dir);
    writeFileSync(path.join(dir, 'notes.txt'), 'mine\n');
    const refused = await runCli(['init', 'busy'], { cwd: tmp.dir, env: env() });
    expect(refused.code).toBe(5);
    expect(refused.stdout).toBe('');
    expect(refused.stderr).toContain(`${dir} is not empty`);
    expect(refused.stderr).toContain('--force');
    expect(existsSync(path.join(dir, 'agentctl.json'))).toBe(false);

    const forced = await runCli(['init', 'busy', '--force', '--json'], { cwd: tmp.dir, env: env() });
    expect(forced.code).toBe(0);
    expect(readFileSync(path.join(dir, 'notes.txt'), 'utf8')).toBe('mine\n');
    expect(JSON.parse(readFileSync(path.join(dir, 'agentctl.json'), 'utf8')).agent).toBe('default/busy');
  });

  it('refuses an agent name that is not namespace/name', async () => {
    const result = await runCli(['init', 'x', '--agent', 'Not A Name'], { cwd: tmp.dir, env: env() });
    expect(result.code).toBe(2);
    expect(result.stderr).toContain('Not an agent name: Not A Name');
    expect(existsSync(path.join(tmp.dir, 'x'))).toBe(false);
  });
});
