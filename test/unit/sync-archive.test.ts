import { createWriteStream } from 'node:fs';
import { mkdir, readdir, symlink } from 'node:fs/promises';
import path from 'node:path';
import { Readable } from 'node:stream';
import { describe, expect, test } from 'vitest';
import { ArchiveRejected, readArchive, treeChecksum, EMPTY_TREE_CHECKSUM, type ArchiveSink } from '../../src/sync/index.js';
import { rawTar, tempDir, zstd } from '../support/trees.js';

/** A sink like syncDown's: writes members under `staging`. */
const stagingSink = (staging: string): ArchiveSink => ({
  async dir(e) {
    await mkdir(path.join(staging, e.path), { recursive: true });
  },
  async file(e) {
    await mkdir(path.dirname(path.join(staging, e.path)), { recursive: true });
    return createWriteStream(path.join(staging, e.path));
  },
  async symlink(e) {
    await mkdir(path.dirname(path.join(staging, e.path)), { recursive: true });
    await symlink(e.linkpath!, path.join(staging, e.path));
  },
});

describe('readArchive on the receiving side', () => {
  test.each([
    ['../x', [{ path: 'ok.txt', body: Buffer.from('ok') }, { path: '../x', body: Buffer.from('x') }]],
    ['/etc/x', [{ path: '/etc/x', body: Buffer.from('x') }]],
    ['a symlink to / then a file through it', [{ path: 'root', type: 'SymbolicLink' as const, linkpath: '/' }, { path: 'root/x', body: Buffer.from('x') }]],
    ['a link into . then a write through it', [{ path: 'd', type: 'SymbolicLink' as const, linkpath: '.' }, { path: 'd/x', body: Buffer.from('x') }]],
  ])('%s: refused, nothing written outside the staging directory', async (_name, members) => {
    const parent = await tempDir();
    const staging = path.join(parent, 'staging');
    await mkdir(staging);
    const error = await readArchive(Readable.from([zstd(rawTar(members))]), undefined, stagingSink(staging)).catch((e) => e);
    expect(error).toBeInstanceOf(ArchiveRejected);
    expect(error.status).toBe(422);
    expect(await readdir(parent)).toEqual(['staging']);
  });

  test('equal trees have equal checksums whatever the compression and member order', async () => {
    const a = await readArchive(Readable.from([zstd(rawTar([{ path: 'a', body: Buffer.from('1') }, { path: 'b', body: Buffer.from('2') }]))]));
    const b = await readArchive(Readable.from([rawTar([{ path: 'b', body: Buffer.from('2') }, { path: './a', body: Buffer.from('1') }])]));
    expect(a.checksum).toBe(b.checksum);
    expect(a.checksum).toBe(treeChecksum(a.entries));
    const empty = await readArchive(Readable.from([zstd(Buffer.alloc(1024))]));
    expect(empty).toMatchObject({ checksum: EMPTY_TREE_CHECKSUM, filesCount: 0, sizeBytes: 0 });
  });
});
