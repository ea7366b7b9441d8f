import { readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { beforeAll, beforeEach, describe, expect, test } from 'vitest';
import { engines } from '../support/service.js';
import { describeTree, tempDir, writeTree } from '../support/trees.js';
import { execa } from 'execa';
import { runCli, useCliService } from './support.js';

describe.each(engines)('agentctl fs (%s)', (engine) => {
  const { svc, env } = useCliService(engine);
  beforeAll(async () => {
    process.env.XDG_CACHE_HOME = await tempDir('agentctl-cache-');
  });
  beforeEach(() => {
    env.XDG_CACHE_HOME = process.env.XDG_CACHE_HOME!;
  });

  const createFs = async () => {
    const created = await runCli(['fs', 'create', '--json'], { env });
    expect(created.code, created.stderr).toBe(0);
    return created.json().id as string;
  };

  test('create, push, pull round-trips a directory exactly; get, list and files show it', async () => {
    const fsId = await createFs();
    expect(fsId).toMatch(/^fs_/);
    const src = await tempDir();
    await writeTree(src, { 'bin/run': { content: '#!/bin/sh\n', mode: 0o755 }, 'read me.md': '# hi\n', 'empty/': { dir: true } });
    const pushed = await runCli(['fs', 'push', src, '--fs', fsId, '--json'], { env });
    expect(pushed.code, pushed.stderr).toBe(0);
    expect(pushed.json()).toMatchObject({ added: 2, modified: 0, deleted: 0, files_changed: 2 });
    const dest = path.join(await tempDir(), 'copy');
    const pulled = await runCli(['fs', 'pull', dest, '--fs', fsId, '--json'], { env });
    expect(pulled.code, pulled.stderr).toBe(0);
    expect(pulled.json()).toMatchObject({ added: 2, checksum: pushed.json().checksum });
    expect(await describeTree(dest)).toEqual(await describeTree(src));

    const got = await runCli(['fs', 'get', fsId, '--json'], { env });
    expect(got.json()).toMatchObject({ id: fsId, files_count: 2, size_bytes: 15, archive_checksum: pushed.json().checksum });
    const listed = await runCli(['fs', 'list', '--json'], { env });
    expect(listed.json().filesystems.map((f: { id: string }) => f.id)).toEqual([fsId]);
    const files = await runCli(['fs', 'files', fsId], { env });
    expect(files.code).toBe(0);
    expect(files.stdout.trimEnd().split('\n')).toEqual(['d0755\t0\tbin/', '-0755\t10\tbin/run', 'd0755\t0\tempty/', '-0644\t5\tread me.md']);
  });

  test('a second push of an unchanged directory sends nothing', async () => {
    const fsId = await createFs();
    const src = await tempDir();
    await writeTree(src, { 'a.txt': 'a' });
    expect((await runCli(['fs', 'push', src, '--fs', fsId], { env })).code).toBe(0);
    const again = await runCli(['fs', 'push', src, '--fs', fsId], { env });
    expect(again.code).toBe(0);
    expect(again.stderr).toContain('already matches');
    expect(again.stdout).toContain('Sent\t0 B');
  });

  test('a stale push is refused with exit 5 and a clear message; local files stay', async () => {
    const fsId = await createFs();
    const mine = await tempDir();
    const theirs = await tempDir();
    await writeTree(mine, { 'doc.txt': 'v1' });
    await runCli(['fs', 'push', mine, '--fs', fsId], { env });
    await runCli(['fs', 'pull', theirs, '--fs', fsId], { env });
    await writeFile(path.join(theirs, 'doc.txt'), 'theirs');
    expect((await runCli(['fs', 'push', theirs, '--fs', fsId], { env })).code).toBe(0);
    await writeFile(path.join(mine, 'doc.txt'), 'mine');
    const stale = await runCli(['fs', 'push', mine, '--fs', fsId], { env });
    expect(stale.code).toBe(5);
    expect(stale.stdout).toBe('');
    expect(stale.stderr).toContain(`Push refused: filesystem ${fsId} changed since ${mine} was last synced with it`);
    expect(stale.stderr).toContain(`agentctl fs pull ${mine} --fs ${fsId}`);
    expect(await readFile(path.join(mine, 'doc.txt'), 'utf8')).toBe('mine');
    const forced = await runCli(['fs', 'push', mine, '--fs', fsId, '--force', '--json'], { env });
    expect(forced.code, forced.stderr).toBe(0);
    expect(forced.json().modified).toBe(1);
  });

  test('an archive gone from the blob store: 404 archive_missing in words, pull exits 3 saying so, a forced push replaces it', async () => {
    const fsId = await createFs();
    const src = await tempDir();
    await writeTree(src, { 'doc.txt': 'kept' });
    const pushed = await runCli(['fs', 'push', src, '--fs', fsId, '--json'], { env });
    expect(pushed.code, pushed.stderr).toBe(0);
    const checksum = pushed.json().checksum;
    const row = await svc.store.db.selectFrom('filesystems').select('blob_key').where('id', '=', fsId).executeTakeFirstOrThrow();
    await svc.service.blobs.delete(row.blob_key!);

    const detail = `The archive of filesystem ${fsId} (checksum ${checksum}) is gone from the blob store, so its content cannot be read; push the content again with If-Match: * to replace it`;
    const answer = await svc.api('GET', `/filesystems/${fsId}/archive`);
    expect(answer).toMatchObject({ status: 404, body: { code: 'archive_missing', detail } });
    const file = await svc.api('GET', `/filesystems/${fsId}/files/doc.txt`);
    expect(file).toMatchObject({ status: 404, body: { code: 'archive_missing', detail } });

    const dest = path.join(await tempDir(), 'copy');
    const pulled = await runCli(['fs', 'pull', dest, '--fs', fsId], { env });
    expect(pulled.code).toBe(3);
    expect(pulled.stderr).toContain(detail);
    expect(pulled.stderr).toContain('Its content is lost on the server: push a copy you have to replace it (agentctl fs push DIR --fs ID --force).');
    expect(pulled.stderr).toContain(`agentctl fs push <dir> --fs ${fsId} --force`);

    const forced = await runCli(['fs', 'push', src, '--fs', fsId, '--force', '--json'], { env });
    expect(forced.code, forced.stderr).toBe(0);
    expect(forced.json().checksum).toBe(checksum);
    const again = await runCli(['fs', 'pull', dest, '--fs', fsId], { env });
    expect(again.code, again.stderr).toBe(0);
    expect(await describeTree(dest)).toEqual(await describeTree(src));
  });

  test('progress goes to stderr on a terminal only; bad input is a usage error', async () => {
    const fsId = await createFs();
    const src = await tempDir();
    await writeTree(src, { 'big.bin': Buffer.alloc(256 * 1024, 3) });
    const tty = await runCli(['fs', 'push', src, '--fs', fsId], { env, tty: true });
    expect(tty.code, tty.stderr).toBe(0);
    expect(tty.stderr).toContain('upload');
    const missing = await runCli(['fs', 'push', src], { env });
    expect(missing.code).toBe(2);
    expect(missing.stderr).toContain('Missing --fs');
    const notDir = await runCli(['fs', 'push', path.join(src, 'big.bin'), '--fs', fsId], { env });
    expect(notDir.code).toBe(2);
    const unknown = await runCli(['fs', 'pull', src, '--fs', 'fs_nope'], { env });
    expect(unknown.code).toBe(3);
  });

  describe('deploy without --image uploads the source', () => {
    const git = (cwd: string, ...args: string[]) =>
      execa('git', args, {
        cwd,
        env: { GIT_AUTHOR_NAME: 'Ada', GIT_AUTHOR_EMAIL: 'ada@example.com', GIT_COMMITTER_NAME: 'Ada', GIT_COMMITTER_EMAIL: 'ada@example.com' },
      });
    const repo = async () => {
      const dir = await tempDir('agentctl-repo-');
      await writeTree(dir, {
        'agentctl.json': JSON.stringify({ agent: 'default/src-bot', acp_type: 'sync', replicas: 2, description: 'From source', are_tasks_sticky: true }),
        'src/index.ts': 'console.log("hi")\n',
        'run.sh': { content: '#!/bin/sh\n', mode: 0o755 },
      });
      await git(dir, 'init', '-q', '-b', 'main');
      await git(dir, 'add', '-A');
      await git(dir, 'commit', '-q', '-m', 'source');
      return dir;
    };

    test('the commit’s tree becomes the version’s source filesystem; agentctl.json gives the defaults', async () => {
      const dir = await repo();
      const deployed = await runCli(['deploy', '--detach', '--json', '--replicas', '3'], { env, cwd: dir });
      expect(deployed.code, deployed.stderr).toBe(0);
      const version = (await svc.api('GET', `/versions/${deployed.json().version_id}`)).body;
      expect(version.source_filesystem_id).toMatch(/^fs_/);
      expect(version).toMatchObject({ image_url: `local://${version.source_filesystem_id}`, acp_type: 'sync', is_dirty: false });
      expect((await svc.api('GET', '/agents/name/default/src-bot')).body.description).toBe('From source');
      const files = await svc.api('GET', `/filesystems/${version.source_filesystem_id}/files`);
      expect(files.body.files.map((f: { path: string; mode: number }) => `${f.path} ${f.mode.toString(8)}`)).toEqual([
        'agentctl.json 644',
        'run.sh 755',
        'src 755',
        'src/index.ts 644',
      ]);
    });

    test('--allow-dirty uploads the work tree as it is', async () => {
      const dir = await repo();
      await writeTree(dir, { 'notes.txt': 'uncommitted' });
      const refused = await runCli(['deploy', '--detach'], { env, cwd: dir });
      expect(refused.code).toBe(2);
      expect(refused.stderr).toContain('uncommitted changes');
      const deployed = await runCli(['deploy', '--detach', '--json', '--allow-dirty'], { env, cwd: dir });
      expect(deployed.code, deployed.stderr).toBe(0);
      const version = (await svc.api('GET', `/versions/${deployed.json().version_id}`)).body;
      expect(version.is_dirty).toBe(true);
      const files = await svc.api('GET', `/filesystems/${version.source_filesystem_id}/files`);
      expect(files.body.files.map((f: { path: string }) => f.path)).toEqual(['agentctl.json', 'notes.txt', 'run.sh', 'src', 'src/index.ts']);
    });
  });
});
