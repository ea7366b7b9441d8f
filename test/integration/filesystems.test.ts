import { mkdir, readdir, readFile, rm, stat, utimes, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { createHash, randomBytes } from 'node:crypto';
import { once } from 'node:events';
import { PassThrough, Readable } from 'node:stream';
import zlib from 'node:zlib';
import { afterAll, beforeAll, beforeEach, describe, expect, test, vi } from 'vitest';
import { openBlobStore, type BlobStore } from '../../src/server/blobs/index.js';
import { archiveBlobKey, uploadArchive } from '../../src/server/domain/filesystems.js';
import {
  syncDown,
  syncDownSystemFolder,
  syncUp,
  syncUpSystemFolder,
  SyncConflictError,
  EMPTY_TREE_CHECKSUM,
  type SyncTransport,
} from '../../src/sync/index.js';
import type { EndpointInput } from '../../src/contract/endpoints.js';
import type { Scope } from '../../src/contract/resources.js';
import { engines, useService } from '../support/service.js';
import { createTask, deployActive } from '../support/fixtures.js';
import { describeTree, rawTar, tempDir, writeTree, zstd } from '../support/trees.js';
import { loadState } from '../../src/sync/state.js';
import { treeChecksum } from '../../src/sync/tree.js';

const MiB = 1024 * 1024;

describe.each(engines)('filesystems (%s)', (engine) => {
  let blobs: BlobStore;
  let blobDir: string;
  let transport: SyncTransport;

  beforeAll(async () => {
    process.env.XDG_CACHE_HOME = await tempDir('agentctl-cache-');
    blobDir = await tempDir('agentctl-blobs-');
    blobs = await openBlobStore({ dir: blobDir });
  });
  afterAll(async () => {
    await blobs?.close();
    await rm(blobDir, { recursive: true, force: true });
  });
  // Opens after the blob store above and closes before it (after-hooks run in reverse).
  const svc = useService(engine, { archiveMaxBytes: 8 * MiB, archiveMaxFiles: 200 }, { blobs: () => blobs });
  beforeEach(async () => {
    transport = { baseUrl: svc.url, apiKey: svc.adminKey };
  });

  const createFs = (body: EndpointInput<'createFilesystem'>['body'] = { namespace: 'default' }, key?: string) => svc.client(key).createFilesystem({ body });
  const getFs = (id: string) => svc.client().getFilesystem({ params: { filesystem_id: id } });
  const put = (fsId: string, body: Buffer, headers: Record<string, string> = {}, key?: string) =>
    fetch(`${svc.url}/filesystems/${fsId}/archive`, {
      method: 'PUT',
      headers: { authorization: `Bearer ${key ?? svc.adminKey}`, 'content-type': 'application/zstd', ...headers },
      body: new Uint8Array(body),
    }).then(async (r) => ({ status: r.status, body: await r.json(), etag: r.headers.get('etag') }));
  const stagingEmpty = async () => expect(await readdir(path.join(blobDir, '.staging'))).toEqual([]);

  test('a new filesystem is empty: no checksum, an empty archive with the empty-tree ETag', async () => {
    const fs = await createFs();
    expect(fs).toMatchObject({ archive_checksum: null, size_bytes: 0, files_count: 0, project_id: null });
    const res = await fetch(`${svc.url}/filesystems/${fs.id}/archive`, { headers: { authorization: `Bearer ${svc.adminKey}` } });
    expect(res.status).toBe(200);
    expect(res.headers.get('etag')).toBe(`"${EMPTY_TREE_CHECKSUM}"`);
    expect(res.headers.get('content-type')).toBe('application/zstd');
  });

  test('round trip byte for byte: executable bits, empty directories, unicode and space names, symlinks inside', async () => {
    const fs = await createFs();
    const src = await tempDir();
    await writeTree(src, {
      'run.sh': { content: '#!/bin/sh\necho hi\n', mode: 0o755 },
      'notes with spaces.txt': 'hello',
      'ünïcödé/日本語.md': '# 見出し\n',
      'empty/nested/': { dir: true },
      'lib/data.bin': Buffer.from([0, 1, 2, 255]),
      'lib/link-to-run': { link: '../run.sh' },
      '.github/workflows/ci.yml': 'on: push\n',
      '.gitignore': 'dist/\n',
    });
    const up = await syncUp(transport, fs.id, src);
    expect(up).toMatchObject({ added: 7, modified: 0, deleted: 0, files_changed: 7 });
    expect(up.bytes).toBeGreaterThan(0);
    const dest = await tempDir();
    const down = await syncDown(transport, fs.id, dest);
    expect(down).toMatchObject({ added: 7, modified: 0, deleted: 0, files_changed: 7, checksum: up.checksum });
    expect(await describeTree(dest)).toEqual(await describeTree(src));
    expect(await getFs(fs.id)).toMatchObject({ archive_checksum: up.checksum, files_count: 6, size_bytes: 18 + 5 + 12 + 4 + 9 + 6 });
  });

  test('.git/ and node_modules/ are left out as whole components, .agentctlignore rules apply', async () => {
    const fs = await createFs();
    const src = await tempDir();
    await writeTree(src, {
      '.git/HEAD': 'ref',
      'node_modules/x/index.js': 'x',
      'pkg/node_modules/y.js': 'y',
      'node_modules_notes.txt': 'kept',
      '.gitkeep': '',
      '.agentctlignore': '*.log\nbuild/\n',
      'debug.log': 'noise',
      'build/out.js': 'out',
      'src/main.ts': 'main',
    });
    await syncUp(transport, fs.id, src);
    const files = await svc.api('GET', `/filesystems/${fs.id}/files`);
    expect(files.status).toBe(200);
    expect(files.body.files.map((f: { path: string }) => f.path)).toEqual([
      '.agentctlignore',
      '.gitkeep',
      'node_modules_notes.txt',
      'pkg',
      'src',
      'src/main.ts',
    ]);
  });

  test('a nested .agentctlignore applies to its own subtree, relative to its directory: negation, directory and anchored patterns', async () => {
    const fs = await createFs();
    const src = await tempDir();
    await writeTree(src, {
      '.agentctlignore': '*.log\ntmp/\n',
      'root.log': 'ignored at the root',
      'keep.txt': 'kept',
      'app/.agentctlignore': '!important.log\ncache/\n/local.txt\n',
      'app/important.log': 're-included by the deeper file',
      'app/debug.log': 'still ignored by the root file',
      'app/cache/c.bin': 'a directory pattern of app/',
      'app/local.txt': 'anchored to app/',
      'app/sub/local.txt': 'the anchored pattern does not reach app/sub/',
      'app/sub/cache': 'a file, not a directory: cache/ does not match it',
      'app/tmp/t.txt': "the root file's unanchored tmp/ applies at any depth",
      'lib/cache/kept.txt': "app/'s rules do not reach lib/",
      'lib/important.log': "the re-inclusion is app/'s only",
    });
    await syncUp(transport, fs.id, src);
    const files = await svc.client().listFilesystemFiles({ params: { filesystem_id: fs.id } });
    expect(files.files.map((f) => f.path)).toEqual([
      '.agentctlignore',
      'app',
      'app/.agentctlignore',
      'app/important.log',
      'app/sub',
      'app/sub/cache',
      'app/sub/local.txt',
      'keep.txt',
      'lib',
      'lib/cache',
      'lib/cache/kept.txt',
    ]);
  });

  test("a first syncUp records the server's hash of each file it packed (it does not hash them itself); a system folder's are hashed while packing", async () => {
    const fs = await createFs();
    const src = await tempDir();
    // Past SERVER_HASHES_MIN.uploadContentBytes (4 MiB): smaller uploads hash while packing.
    const big = randomBytes(4.5 * MiB);
    await writeTree(src, { 'a.txt': 'aaaa', 'dir/big.bin': big, 'dir/link': { link: '../a.txt' }, 'empty/': { dir: true } });
    const stateFile = path.join(await tempDir(), 'state.json');
    const up = await syncUp(transport, fs.id, src, { stateFile });
    const sha256 = (data: string | Buffer) => createHash('sha256').update(data).digest('hex');
    const state = await loadState(stateFile);
    expect(state.base).toBe(up.checksum);
    expect(state.entries['a.txt']?.sha256).toBe(sha256('aaaa'));
    expect(state.entries['dir/big.bin']?.sha256).toBe(sha256(big));
    // Recorded hashes make the base: the next syncUp of the same tree (its stamps aside) uploads nothing.
    expect(treeChecksum(Object.entries(state.entries).map(([p, e]) => ({ path: p, ...e })))).toBe(up.checksum);
    expect((await syncUp(transport, fs.id, src, { stateFile, force: false })).bytes).toBe(0);

    await deployActive(svc);
    const task = await createTask(svc);
    const folderState = path.join(await tempDir(), 'folder.json');
    const folderUp = await syncUpSystemFolder(transport, task.id, 'dot_alpha', src, { stateFile: folderState });
    const folder = await loadState(folderState);
    expect(folder.base).toBe(folderUp.checksum);
    expect(folderUp.checksum).toBe(up.checksum);
    expect(folder.entries['dir/big.bin']?.sha256).toBe(sha256(big));
  });

  test("syncDown takes the server's hashes when every zstd frame was checksummed, and hashes an archive whose frames are not", async () => {
    const sha256 = (data: string | Buffer) => createHash('sha256').update(data).digest('hex');
    const fs = await createFs();
    const src = await tempDir();
    const big = randomBytes(2 * MiB);
    await writeTree(src, { 'a.txt': 'aaaa', 'dir/big.bin': big, 'dir/link': { link: '../a.txt' }, 'empty/': { dir: true } });
    const up = await syncUp(transport, fs.id, src);
    const tar = rawTar([
      { path: 'a.txt', body: Buffer.from('aaaa') },
      { path: 'dir/', type: 'Directory', mode: 0o755 },
      { path: 'dir/big.bin', body: big },
    ]);
    const checksummed = (data: Buffer) => zlib.zstdCompressSync(data, { params: { [zlib.constants.ZSTD_c_checksumFlag]: 1 } });
    for (const archive of ['checksummed (syncUp)', 'unchecksummed (zstd defaults)', 'a checksummed frame, then one without']) {
      const body = archive.startsWith('unchecksummed')
        ? zstd(tar)
        : archive.startsWith('a checksummed frame')
          ? Buffer.concat([checksummed(tar.subarray(0, MiB)), zstd(tar.subarray(MiB))])
          : undefined;
      if (body) expect((await put(fs.id, body, { 'if-match': '*' })).status).toBe(200);
      const expected = (await getFs(fs.id)).archive_checksum!;
      const dest = await tempDir();
      const stateFile = path.join(await tempDir(), 'state.json');
      const down = await syncDown(transport, fs.id, dest, { stateFile });
      expect(down.checksum, archive).toBe(expected);
      const state = await loadState(stateFile);
      expect(state.base).toBe(expected);
      expect(state.entries['a.txt']?.sha256).toBe(sha256('aaaa'));
      expect(state.entries['dir/big.bin']?.sha256).toBe(sha256(big));
      expect(await readFile(path.join(dest, 'dir/big.bin'))).toEqual(big);
      // The recorded tree is the base: a syncUp of it uploads nothing.
      expect((await syncUp(transport, fs.id, dest, { stateFile })).bytes).toBe(0);
    }
    expect(up.checksum).not.toBe((await getFs(fs.id)).archive_checksum);
  });

  test('an unchanged second syncUp uploads nothing; a same-size rewrite in the same second is detected', async () => {
    const fs = await createFs();
    const src = await tempDir();
    await writeTree(src, { 'a.txt': 'aaaa', 'b.txt': 'bbbb' });
    const first = await syncUp(transport, fs.id, src);
    const again = await syncUp(transport, fs.id, src);
    expect(again).toEqual({ files_changed: 0, added: 0, modified: 0, deleted: 0, bytes: 0, checksum: first.checksum });
    const before = await stat(path.join(src, 'a.txt'));
    await writeFile(path.join(src, 'a.txt'), 'AAAA');
    // Same size, same mtime: only the racy-timestamp rule can tell.
    await utimes(path.join(src, 'a.txt'), before.atime, before.mtime);
    const third = await syncUp(transport, fs.id, src);
    expect(third).toMatchObject({ files_changed: 1, modified: 1, added: 0, deleted: 0 });
    expect(third.checksum).not.toBe(first.checksum);
    const file = await fetch(`${svc.url}/filesystems/${fs.id}/files/a.txt`, { headers: { authorization: `Bearer ${svc.adminKey}` } });
    expect(await file.text()).toBe('AAAA');
  });

  test('a clean re-check answers from the recorded walk; a rewrite keeping size and mtime, and a new empty directory, are still uploaded', async () => {
    const fs = await createFs();
    const src = await tempDir();
    await writeTree(src, { 'a.txt': 'aaaa', 'dir/b.txt': 'bbbb' });
    // Old mtimes: the first sync's stamps are trusted at once, so it records the walk's digest.
    const old = new Date(Date.now() - 60_000);
    for (const f of ['a.txt', 'dir/b.txt']) await utimes(path.join(src, f), old, old);
    const first = await syncUp(transport, fs.id, src);
    expect(await syncUp(transport, fs.id, src)).toEqual({ files_changed: 0, added: 0, modified: 0, deleted: 0, bytes: 0, checksum: first.checksum });
    await writeFile(path.join(src, 'a.txt'), 'AAAA');
    await utimes(path.join(src, 'a.txt'), old, old);
    const second = await syncUp(transport, fs.id, src);
    expect(second).toMatchObject({ files_changed: 1, modified: 1, added: 0, deleted: 0 });
    await mkdir(path.join(src, 'empty'));
    const third = await syncUp(transport, fs.id, src);
    expect(third).toMatchObject({ files_changed: 0 });
    expect(third.checksum).not.toBe(second.checksum);
    const dest = await tempDir();
    await syncDown(transport, fs.id, dest);
    expect(await describeTree(dest)).toEqual(await describeTree(src));
  });

  test('deletions propagate both ways', async () => {
    const fs = await createFs();
    const a = await tempDir();
    const b = await tempDir();
    await writeTree(a, { 'keep.txt': 'k', 'gone.txt': 'g', 'dir/inner.txt': 'i' });
    await syncUp(transport, fs.id, a);
    await syncDown(transport, fs.id, b);
    await rm(path.join(a, 'gone.txt'));
    await rm(path.join(a, 'dir'), { recursive: true });
    expect(await syncUp(transport, fs.id, a)).toMatchObject({ deleted: 2, added: 0, modified: 0 });
    expect(await syncDown(transport, fs.id, b)).toMatchObject({ deleted: 2, added: 0, modified: 0, files_changed: 2 });
    expect(await describeTree(b)).toEqual(await describeTree(a));
    await rm(path.join(b, 'keep.txt'));
    expect(await syncUp(transport, fs.id, b)).toMatchObject({ deleted: 1 });
    expect(await syncDown(transport, fs.id, a)).toMatchObject({ deleted: 1 });
    expect(await describeTree(a)).toEqual({});
  });

  test('syncDown of an unchanged tree downloads nothing (If-None-Match -> 304)', async () => {
    const fs = await createFs();
    const src = await tempDir();
    await writeTree(src, { 'x.txt': 'x' });
    const up = await syncUp(transport, fs.id, src);
    const dest = await tempDir();
    await syncDown(transport, fs.id, dest);
    expect(await syncDown(transport, fs.id, dest)).toEqual({ files_changed: 0, added: 0, modified: 0, deleted: 0, bytes: 0, checksum: up.checksum });
    const res = await fetch(`${svc.url}/filesystems/${fs.id}/archive`, {
      headers: { authorization: `Bearer ${svc.adminKey}`, 'if-none-match': `"${up.checksum}"` },
    });
    expect(res.status).toBe(304);
    expect(res.headers.get('etag')).toBe(`"${up.checksum}"`);
  });

  test('two writers from one base: one wins, the other gets 412 and keeps its files', async () => {
    const fs = await createFs();
    const seed = await tempDir();
    await writeTree(seed, { 'shared.txt': 'v1' });
    await syncUp(transport, fs.id, seed);
    const alice = await tempDir();
    const bob = await tempDir();
    await syncDown(transport, fs.id, alice);
    await syncDown(transport, fs.id, bob);
    await writeFile(path.join(alice, 'shared.txt'), 'alice');
    await writeFile(path.join(bob, 'shared.txt'), 'bob!!');
    const won = await syncUp(transport, fs.id, alice);
    const lost = await syncUp(transport, fs.id, bob).catch((e) => e);
    expect(lost).toBeInstanceOf(SyncConflictError);
    expect(lost).toMatchObject({ status: 412, code: 'stale_base' });
    expect(await readFile(path.join(bob, 'shared.txt'), 'utf8')).toBe('bob!!');
    expect((await getFs(fs.id)).archive_checksum).toBe(won.checksum);
  });

  test('an upload without If-Match to a filesystem with content is 428; a stale one is 412, before the body is read', async () => {
    const fs = await createFs();
    const body = zstd(rawTar([{ path: 'a.txt', body: Buffer.from('a') }]));
    const first = await put(fs.id, body);
    expect(first.status).toBe(200);
    const again = await put(fs.id, body);
    expect(again.status).toBe(428);
    expect(again.body).toMatchObject({ code: 'precondition_required' });
    const stale = await put(fs.id, body, { 'if-match': `"${EMPTY_TREE_CHECKSUM}"` });
    expect(stale.status).toBe(412);
    expect(stale.body).toMatchObject({ code: 'stale_base' });
    expect(stale.etag).toBe(`"${first.body.archive_checksum}"`);
    const ok = await put(fs.id, zstd(rawTar([{ path: 'b.txt', body: Buffer.from('b') }])), { 'if-match': `"${first.body.archive_checksum}"` });
    expect(ok.status).toBe(200);
    await stagingEmpty();
  });

  test('an upload killed half-way changes nothing', async () => {
    const fs = await createFs();
    const src = await tempDir();
    await writeTree(src, { 'v1.txt': 'one' });
    const v1 = await syncUp(transport, fs.id, src);
    const big = zstd(rawTar([{ path: 'big.bin', body: Buffer.alloc(4 * MiB, 7) }]));
    const controller = new AbortController();
    const { request } = await import('undici');
    const { Readable } = await import('node:stream');
    const half = Readable.from(
      (async function* () {
        yield big.subarray(0, big.length >> 1);
        await new Promise((r) => setTimeout(r, 100));
        controller.abort();
        await new Promise(() => {});
      })(),
    );
    await expect(
      request(`${svc.url}/filesystems/${fs.id}/archive`, {
        method: 'PUT',
        headers: { authorization: `Bearer ${svc.adminKey}`, 'content-type': 'application/zstd', 'if-match': `"${v1.checksum}"` },
        body: half,
        signal: controller.signal,
      }),
    ).rejects.toThrow();
    // The server takes the client's going as the upload's end: its staged file goes.
    await vi.waitFor(stagingEmpty, { timeout: 10_000 });
    expect((await getFs(fs.id)).archive_checksum).toBe(v1.checksum);
    const dest = await tempDir();
    await syncDown(transport, fs.id, dest);
    expect(await describeTree(dest)).toEqual({ 'v1.txt': expect.stringMatching(/^file 644 /) });
    await stagingEmpty();
  });

  describe('an upload that does not finish (the domain, with its limits given)', () => {
    const limits = { maxBytes: 8 * MiB, maxFiles: 200, maxMs: 60_000 };
    const archive = () => zstd(rawTar([{ path: 'big.bin', body: randomBytes(3 * MiB) }]));
    const staged = () => readdir(path.join(blobDir, '.staging'));

    test('stalled past its deadline: 413, nothing staged, the rest of the body read and dropped', async () => {
      const fs = await createFs();
      const bytes = archive();
      const body = new PassThrough();
      body.write(bytes.subarray(0, bytes.length >> 1));
      const error = await uploadArchive(svc.store.db, blobs, fs.id, body, ['*'], { ...limits, maxMs: 300 }).catch((e) => e);
      expect(error).toMatchObject({ kind: 'too_large', code: 'archive_too_large', detail: expect.stringMatching(/within 300 ms/) });
      expect(await staged()).toEqual([]);
      // What the client sends after the refusal is taken, so the answer can reach it.
      body.end(bytes.subarray(bytes.length >> 1));
      await once(body, 'end');
      expect((await getFs(fs.id)).archive_checksum).toBeNull();
    });

    test('the body fails part-way (the client went away): upload_aborted, nothing staged', async () => {
      const fs = await createFs();
      const bytes = archive();
      // As a request body (IncomingMessage) does, its error is not thrown when nobody listens: the file
      // may show before the upload watches the body.
      const body = new PassThrough().on('error', () => {});
      const upload = uploadArchive(svc.store.db, blobs, fs.id, body, ['*'], limits).catch((e) => e);
      body.write(bytes.subarray(0, bytes.length >> 1));
      await vi.waitFor(async () => expect(await staged()).toHaveLength(1));
      body.destroy(new Error('aborted'));
      expect(await upload).toMatchObject({ kind: 'bad_request', code: 'upload_aborted' });
      expect(await staged()).toEqual([]);
      expect((await getFs(fs.id)).archive_checksum).toBeNull();
    });

    test('the body gone before the upload starts (the client left while it was authorized): upload_aborted, nothing staged', async () => {
      const fs = await createFs();
      const body = new PassThrough();
      body.write(archive().subarray(0, 1024));
      body.destroy();
      const error = await uploadArchive(svc.store.db, blobs, fs.id, body, ['*'], limits).catch((e) => e);
      expect(error).toMatchObject({ kind: 'bad_request', code: 'upload_aborted' });
      expect(await staged()).toEqual([]);
      expect((await getFs(fs.id)).archive_checksum).toBeNull();
    });

    test('more bytes than any archive within the limits takes (zstd skippable frames): 413 before they are all read', async () => {
      const fs = await createFs();
      const small = { maxBytes: 1024, maxFiles: 1, maxMs: 60_000 };
      // A valid archive, then a skippable frame: no output, but 2 MiB past the upload cap (1 MiB and some).
      const skippable = Buffer.alloc(8 + 2 * MiB);
      skippable.writeUInt32LE(0x184d2a50, 0);
      skippable.writeUInt32LE(2 * MiB, 4);
      const body = Readable.from([zstd(rawTar([{ path: 'a.txt', body: Buffer.from('a') }])), skippable.subarray(0, MiB), skippable.subarray(MiB)]);
      const error = await uploadArchive(svc.store.db, blobs, fs.id, body, ['*'], small).catch((e) => e);
      expect(error).toMatchObject({ kind: 'too_large', code: 'archive_too_large', detail: expect.stringMatching(/The upload is larger than \d+ bytes/) });
      expect(await staged()).toEqual([]);
      expect((await getFs(fs.id)).archive_checksum).toBeNull();
    });

    test('many small chunks: the stored archive is the bytes sent, its key from the tree checksum and size', async () => {
      const fs = await createFs();
      const bytes = archive();
      const pieces = Array.from({ length: Math.ceil(bytes.length / 1000) }, (_, i) => bytes.subarray(i * 1000, (i + 1) * 1000));
      const updated = await uploadArchive(svc.store.db, blobs, fs.id, Readable.from(pieces), ['*'], limits);
      const row = await svc.store.db.selectFrom('filesystems').select(['blob_key', 'archive_bytes']).where('id', '=', fs.id).executeTakeFirstOrThrow();
      expect(row.blob_key).toBe(archiveBlobKey(updated.archive_checksum!, bytes.length));
      expect(Number(row.archive_bytes)).toBe(bytes.length);
      expect(Buffer.concat(await (await blobs.get(row.blob_key!)).toArray())).toEqual(bytes);
      expect(updated.files_count).toBe(1);
      expect(await staged()).toEqual([]);
    });
  });

  // Hostile archives have their own table: test/integration/hostile-archives.test.ts.
  test('bad input: wrong media type 415, create with both or neither target 422, unknown ids 404', async () => {
    const fs = await createFs();
    const json = await svc.api('PUT', `/filesystems/${fs.id}/archive`, { body: { files: [] } });
    expect(json.status).toBe(415);
    const badTag = await put(fs.id, zstd(rawTar([{ path: 'a', body: Buffer.from('a') }])), { 'if-match': 'not a checksum' });
    expect(badTag).toMatchObject({ status: 412, body: { code: 'stale_base' } });
    expect((await svc.api('POST', '/filesystems', { body: {} })).status).toBe(422);
    expect((await svc.api('POST', '/filesystems', { body: { namespace: 'default', project_id: 'prj_x' } })).status).toBe(422);
    expect((await svc.api('GET', '/filesystems')).status).toBe(422);
    expect((await svc.api('GET', '/filesystems/fs_nope')).status).toBe(404);
    expect((await svc.api('GET', '/filesystems/fs_nope/archive')).status).toBe(404);
    expect((await svc.api('GET', `/filesystems/${fs.id}/files/missing.txt`)).status).toBe(404);
    expect((await svc.api('POST', '/filesystems', { body: { project_id: 'prj_nope' } })).status).toBe(404);
    expect((await svc.api('GET', '/tasks/task_nope/system-folders/dot_alpha/archive')).status).toBe(404);
    expect((await svc.api('GET', '/tasks/task_nope/system-folders/dot_gamma/archive')).status).toBe(422);
  });

  test('create, list by project and by namespace, delete; a filesystem in use cannot be deleted', async () => {
    const client = svc.client();
    const project = await client.createProject({ body: { name: 'docs' } });
    const inProject = await createFs({ project_id: project.id });
    const bare = await createFs();
    const byProject = await client.listFilesystems({ query: { project_id: project.id } });
    expect(byProject).toMatchObject({ total: 1, filesystems: [{ id: inProject.id, project_id: project.id }] });
    const byNs = await client.listFilesystems({ query: { namespace: 'default' } });
    expect(byNs.filesystems.map((f) => f.id)).toEqual([bare.id]);
    await deployActive(svc);
    const task = await createTask(svc, { filesystem_id: bare.id });
    expect(task.filesystem_id).toBe(bare.id);
    const refused = await svc.api('DELETE', `/filesystems/${bare.id}`);
    expect(refused.status).toBe(409);
    expect(refused.body.code).toBe('filesystem_in_use');
    expect((await svc.api('DELETE', `/filesystems/${inProject.id}`)).status).toBe(200);
    expect((await svc.api('GET', `/filesystems/${inProject.id}`)).status).toBe(404);
  });

  test('access: through the project (viewer reads, may not write), through the task agent, unknown to others', async () => {
    const project = await svc.client().createProject({ body: { name: 'docs' } });
    const fs = await createFs({ project_id: project.id });
    const keyWith = async (scopes: Scope[]) => (await svc.client().createKey({ body: { name: 'k', scopes } })).secret;
    const viewer = await keyWith([{ resource_type: 'project', resource_id: project.id, role: 'viewer' }]);
    const editor = await keyWith([{ resource_type: 'project', resource_id: project.id, role: 'editor' }]);
    const archive = zstd(rawTar([{ path: 'a.txt', body: Buffer.from('a') }]));
    expect((await svc.api('GET', `/filesystems/${fs.id}`, { key: viewer })).status).toBe(200);
    expect((await put(fs.id, archive, {}, viewer)).status).toBe(403);
    expect((await put(fs.id, archive, {}, editor)).status).toBe(200);
    expect((await svc.api('GET', `/filesystems/${fs.id}/files`, { key: viewer })).status).toBe(200);

    const d = await deployActive(svc);
    const task = await createTask(svc);
    const agentViewer = await keyWith([{ resource_type: 'agent', resource_id: d.agent_id, role: 'viewer' }]);
    const discoverer = await keyWith([{ resource_type: 'agent', resource_id: d.agent_id, role: 'discoverer' }]);
    const stranger = await keyWith([{ resource_type: 'project', resource_id: project.id, role: 'discoverer' }]);
    // A task's private filesystem: read and run on its agent reach it.
    expect((await svc.api('GET', `/filesystems/${task.filesystem_id}`, { key: agentViewer })).status).toBe(200);
    expect((await put(task.filesystem_id, archive, {}, agentViewer)).status).toBe(200);
    expect((await svc.api('GET', `/filesystems/${task.filesystem_id}`, { key: discoverer })).status).toBe(403);
    expect((await svc.api('GET', `/filesystems/${task.filesystem_id}`, { key: stranger })).status).toBe(404);
    expect((await svc.api('GET', `/tasks/${task.id}/system-folders/dot_alpha/archive`, { key: discoverer })).status).toBe(403);
    expect((await svc.api('GET', `/tasks/${task.id}/system-folders/dot_alpha/archive`, { key: stranger })).status).toBe(404);
  });

  test('permissions of every filesystem endpoint: allowed, 403 where the key can discover the owner, 404 where it cannot', async () => {
    const project = await svc.client().createProject({ body: { name: 'docs' } });
    const sibling = await svc.client().createProject({ body: { name: 'notes' } });
    const archive = zstd(rawTar([{ path: 'a.txt', body: Buffer.from('a') }]));
    const withContent = async (fsId: string) => expect((await put(fsId, archive, { 'if-match': '*' })).status).toBe(200);
    const inProject = await createFs({ project_id: project.id });
    const doomed = await createFs({ project_id: project.id });
    await withContent(inProject.id);
    const { agent_id: agentId } = await deployActive(svc);
    const task = await createTask(svc);
    await withContent(task.filesystem_id);
    const folder = `/tasks/${task.id}/system-folders/dot_alpha/archive`;
    expect(
      (
        await fetch(`${svc.url}${folder}`, {
          method: 'PUT',
          headers: { authorization: `Bearer ${svc.adminKey}`, 'content-type': 'application/zstd' },
          body: new Uint8Array(archive),
        })
      ).status,
    ).toBe(200);
    const keyWith = async (resource_type: Scope['resource_type'], resource_id: string, role: Scope['role']) =>
      (await svc.client().createKey({ body: { name: `${resource_type}-${role}`, scopes: [{ resource_type, resource_id, role }] } })).secret;
    const keys = {
      projectViewer: await keyWith('project', project.id, 'viewer'),
      projectEditor: await keyWith('project', project.id, 'editor'),
      projectDiscoverer: await keyWith('project', project.id, 'discoverer'),
      agentViewer: await keyWith('agent', agentId, 'viewer'),
      agentEditor: await keyWith('agent', agentId, 'editor'),
      agentDiscoverer: await keyWith('agent', agentId, 'discoverer'),
      stranger: await keyWith('project', sibling.id, 'editor'),
    };
    type Who = keyof typeof keys;
    const call = async (who: Who, method: string, url: string, body?: unknown): Promise<number> => {
      if (method === 'PUT') {
        const res = await fetch(`${svc.url}${url}`, {
          method,
          headers: { authorization: `Bearer ${keys[who]}`, 'content-type': 'application/zstd', 'if-match': '*' },
          body: new Uint8Array(archive),
        });
        await res.arrayBuffer();
        return res.status;
      }
      return (await svc.api(method, url, { key: keys[who], body })).status;
    };
    const fsUrl = `/filesystems/${inProject.id}`;
    const taskFsUrl = `/filesystems/${task.filesystem_id}`;
    const rows: [string, string, string, unknown, Partial<Record<Who, number>>][] = [
      [
        'create in project',
        'POST',
        '/filesystems',
        { project_id: project.id },
        { projectViewer: 403, projectEditor: 201, projectDiscoverer: 403, stranger: 404 },
      ],
      ['create bare', 'POST', '/filesystems', { namespace: 'default' }, { agentViewer: 403, agentEditor: 201 }],
      ['list by project', 'GET', `/filesystems?project_id=${project.id}`, undefined, { projectViewer: 200, projectDiscoverer: 403, stranger: 404 }],
      ['get', 'GET', fsUrl, undefined, { projectViewer: 200, projectDiscoverer: 403, stranger: 404, agentViewer: 404 }],
      ['download', 'GET', `${fsUrl}/archive`, undefined, { projectViewer: 200, projectDiscoverer: 403, stranger: 404 }],
      ['upload', 'PUT', `${fsUrl}/archive`, undefined, { projectViewer: 403, projectEditor: 200, projectDiscoverer: 403, stranger: 404 }],
      ['list files', 'GET', `${fsUrl}/files`, undefined, { projectViewer: 200, projectDiscoverer: 403, stranger: 404 }],
      ['read a file', 'GET', `${fsUrl}/files/a.txt`, undefined, { projectViewer: 200, projectDiscoverer: 403, stranger: 404 }],
      ['delete', 'DELETE', `/filesystems/${doomed.id}`, undefined, { projectViewer: 403, projectDiscoverer: 403, stranger: 404, projectEditor: 200 }],
      ["get a task's filesystem", 'GET', taskFsUrl, undefined, { agentViewer: 200, agentDiscoverer: 403, projectEditor: 404 }],
      ["download a task's filesystem", 'GET', `${taskFsUrl}/archive`, undefined, { agentViewer: 200, agentDiscoverer: 403, projectEditor: 404 }],
      ["upload to a task's filesystem", 'PUT', `${taskFsUrl}/archive`, undefined, { agentViewer: 200, agentDiscoverer: 403, projectEditor: 404 }],
      ["list a task's files", 'GET', `${taskFsUrl}/files`, undefined, { agentViewer: 200, agentDiscoverer: 403, projectEditor: 404 }],
      ["read a task's file", 'GET', `${taskFsUrl}/files/a.txt`, undefined, { agentViewer: 200, agentDiscoverer: 403, projectEditor: 404 }],
      ["delete a task's filesystem (reachable, but in use)", 'DELETE', taskFsUrl, undefined, { agentViewer: 409, agentDiscoverer: 403, projectEditor: 404 }],
      ['download a system folder', 'GET', folder, undefined, { agentViewer: 200, agentDiscoverer: 403, projectEditor: 404 }],
      ['upload a system folder', 'PUT', folder, undefined, { agentViewer: 200, agentDiscoverer: 403, projectEditor: 404 }],
    ];
    const got: Record<string, number> = {};
    const want: Record<string, number> = {};
    for (const [label, method, url, body, expected] of rows) {
      for (const [who, status] of Object.entries(expected) as [Who, number][]) {
        want[`${label} as ${who}`] = status;
        got[`${label} as ${who}`] = await call(who, method, url, body);
      }
    }
    expect(got).toEqual(want);
    // A bare filesystem is its creator's (and the namespace admins'): unknown to other keys.
    const bare = await createFs({ namespace: 'default' }, keys.agentEditor);
    expect((await svc.api('GET', `/filesystems/${bare.id}`, { key: keys.agentEditor })).status).toBe(200);
    expect((await svc.api('GET', `/filesystems/${bare.id}`, { key: keys.agentViewer })).status).toBe(404);
    expect((await svc.api('GET', `/filesystems/${bare.id}`)).status).toBe(200);
    expect((await svc.api('GET', '/filesystems?namespace=default', { key: keys.agentEditor })).body.filesystems.map((f: { id: string }) => f.id)).toContain(
      bare.id,
    );
    expect((await svc.api('GET', '/filesystems?namespace=default', { key: keys.agentViewer })).body.filesystems).toEqual([]);
  });

  test('system folders: per task and type, synced like filesystems', async () => {
    await deployActive(svc);
    const task = await createTask(svc);
    const src = await tempDir();
    await writeTree(src, { 'settings.json': '{"model":"x"}', 'skills/a.md': 'A' });
    const up = await syncUpSystemFolder(transport, task.id, 'dot_alpha', src);
    expect(up).toMatchObject({ added: 2 });
    const dest = await tempDir();
    expect(await syncDownSystemFolder(transport, task.id, 'dot_alpha', dest)).toMatchObject({ added: 2, checksum: up.checksum });
    expect(await describeTree(dest)).toEqual(await describeTree(src));
    const other = await tempDir();
    expect(await syncDownSystemFolder(transport, task.id, 'dot_beta', other)).toMatchObject({ added: 0, checksum: EMPTY_TREE_CHECKSUM });
    expect(await readdir(other)).toEqual([]);
  });

  test('deploy checks source_filesystem_id: unknown is 404, a reachable one is recorded', async () => {
    const missing = await svc.api('POST', '/agents/deploy', {
      body: {
        agent_name: 'src-bot',
        branch: 'main',
        git_hash: 'abcdef1',
        author_name: 'A',
        author_email: 'a@x',
        image_url: 'local://fs_x',
        sdk_type: 'alpha_agent_sdk',
        acp_type: 'async',
        source_filesystem_id: 'fs_nope',
      },
    });
    expect(missing.status).toBe(404);
    const fs = await createFs();
    const ok = await svc.api('POST', '/agents/deploy', {
      body: {
        agent_name: 'src-bot',
        branch: 'main',
        git_hash: 'abcdef1',
        author_name: 'A',
        author_email: 'a@x',
        image_url: `local://${fs.id}`,
        sdk_type: 'alpha_agent_sdk',
        acp_type: 'async',
        source_filesystem_id: fs.id,
      },
    });
    expect(ok.status, JSON.stringify(ok.body)).toBe(201);
    expect((await svc.api('DELETE', `/filesystems/${fs.id}`)).status).toBe(409);
  });
});
