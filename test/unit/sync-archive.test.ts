import { mkdir, readdir, writeFile } from 'node:fs/promises';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { Readable } from 'node:stream';
import { describe, expect, test } from 'vitest';
import { spawnSync } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import zlib from 'node:zlib';
import { loadIgnoreRules, packTree, readArchive, syncDown, treeChecksum, walkTree, EMPTY_TREE_CHECKSUM } from '../../src/sync/index.js';
import { describeTree, paxRecord, rawTar, tempDir, writeTree, zstd } from '../support/trees.js';
import { ChecksummedFrames, ZstdCodec } from '../../src/sync/zstd.js';
import { encodePlainHeader } from '../../src/sync/archive.js';
import { Header } from 'tar';

describe('packTree', () => {
  test('writes a tar that GNU tar extracts to the same tree, and hashes what it read', async () => {
    const src = await tempDir();
    const long = `${'d'.repeat(120)}/${'f'.repeat(90)}.txt`;
    await writeTree(src, {
      'run.sh': { content: '#!/bin/sh\n', mode: 0o755 },
      'ünï côdé/日本語.md': '# 見出し\n',
      [long]: 'a path past the 100 bytes of a plain header',
      'big.bin': Buffer.alloc(3 * 1024 * 1024 + 7, 5),
      'empty/': { dir: true },
      'lib/link': { link: '../run.sh' },
    });
    const entries = await walkTree(src, await loadIgnoreRules(src));
    const tar = Buffer.concat(await packTree(src, entries).pipe(zlib.createZstdDecompress()).toArray());
    const out = await tempDir();
    const gnu = spawnSync('tar', ['-xf', '-', '-C', out], { input: tar });
    expect(gnu.status, String(gnu.stderr)).toBe(0);
    expect(await describeTree(out)).toEqual(await describeTree(src));
    const read = await readArchive(Readable.from([tar]));
    expect(read.entries).toEqual(entries.map(({ path: p, kind, mode, size, sha256, linkpath }) => ({ path: p, kind, mode, size, sha256, linkpath })));
    expect(read.checksum).toBe(treeChecksum(entries as never));
  });
});

describe('the packer against its references', () => {
  test("encodePlainHeader writes the tar package's Header bytes, and declines what needs more than a plain header", () => {
    const paths = ['a', 'dir/', 'd0/f1.txt', 'x'.repeat(98), 'x'.repeat(99), `${'y'.repeat(98)}/`, 'tab\there', 'q"uote\\', 'ünï', 'x'.repeat(100), '\u007f'];
    const sizes = [0, 1, 511, 512, 4096, 0o7777777777, 0o77777777777, 0o77777777777 + 1];
    const modes = [0o644, 0o755, 0o600, 0o4755, 0o7777, 0];
    let plain = 0;
    for (const p of paths)
      for (const size of sizes)
        for (const mode of modes)
          for (const type of ['File', 'Directory'] as const) {
            const ours = Buffer.alloc(1024, 0xee);
            const theirs = Buffer.alloc(1024, 0xee).fill(0, 300, 812);
            const encoded = encodePlainHeader(ours, 300, p, type, mode, size);
            const needsPax = new Header({ path: p, type, mode, size, mtime: new Date(0), uid: 0, gid: 0, uname: '', gname: '' }).encode(theirs, 300);
            // Taken for every ASCII path under 100 bytes and size the field holds (others go to the Header).
            expect(encoded, `${JSON.stringify(p)} ${size} ${mode}`).toBe(
              p.length < 100 && [...p].every((c) => c.charCodeAt(0) < 0x80) && size <= 0o77777777777,
            );
            if (!encoded) continue;
            expect(needsPax).toBe(false);
            expect(ours.equals(theirs), `${JSON.stringify(p)} ${size} ${mode}`).toBe(true);
            plain++;
          }
    expect(plain).toBeGreaterThan(0);
  });
});

// Hostile archives, for readArchive and syncDown alike, are in one table: test/integration/hostile-archives.test.ts.
describe('readArchive on the receiving side', () => {
  test('equal trees have equal checksums whatever the compression and member order', async () => {
    const a = await readArchive(
      Readable.from([
        zstd(
          rawTar([
            { path: 'a', body: Buffer.from('1') },
            { path: 'b', body: Buffer.from('2') },
          ]),
        ),
      ]),
    );
    const b = await readArchive(
      Readable.from([
        rawTar([
          { path: 'b', body: Buffer.from('2') },
          { path: './a', body: Buffer.from('1') },
        ]),
      ]),
    );
    expect(a.checksum).toBe(b.checksum);
    expect(a.checksum).toBe(treeChecksum(a.entries));
    const empty = await readArchive(Readable.from([zstd(Buffer.alloc(1024))]));
    expect(empty).toMatchObject({ checksum: EMPTY_TREE_CHECKSUM, filesCount: 0, sizeBytes: 0 });
  });

  test('a zstd archive of many small frames, arriving in 97-byte chunks, reads as the whole: headers split between pieces are kept', async () => {
    const members = [
      { path: 'a.bin', body: randomBytes(1000) },
      { path: `${'p'.repeat(150)}/long.bin`, body: randomBytes(3001) },
      { path: 'c.bin', body: randomBytes(513) },
    ];
    // The last member's name comes in a pax record: an extended header split between pieces too.
    const paxPath = `pax/${'x'.repeat(300)}.bin`;
    const paxBody = randomBytes(777);
    const tar = rawTar([...members, { path: 'PaxHeader', type: 'ExtendedHeader', body: paxRecord('path', paxPath) }, { path: 'short.bin', body: paxBody }]);
    // One zstd frame per 301 bytes: the decompressed pieces end at odd offsets, inside headers and the pax data.
    const frames: Buffer[] = [];
    for (let at = 0; at < tar.length; at += 301) frames.push(zstd(tar.subarray(at, at + 301)));
    const archive = Buffer.concat(frames);
    members.push({ path: paxPath, body: paxBody });
    const chunks: Buffer[] = [];
    for (let at = 0; at < archive.length; at += 97) chunks.push(archive.subarray(at, at + 97));
    const written = new Map<string, Buffer[]>();
    const read = await readArchive(Readable.from(chunks), undefined, {
      dir: async () => undefined,
      symlink: async () => undefined,
      file: async (entry) => {
        const pieces: Buffer[] = [];
        written.set(entry.path, pieces);
        // A MemberWriter: handed views of the reader's reused buffer, copied here.
        return { write: (data: Buffer) => void pieces.push(Buffer.from(data)), end: () => undefined, destroy: () => undefined };
      },
    });
    expect(read.entries.map((e) => [e.path, e.sha256])).toEqual(members.map((m) => [m.path, createHash('sha256').update(m.body).digest('hex')]));
    expect([...written].map(([p, pieces]) => [p, Buffer.concat(pieces)])).toEqual(members.map((m) => [m.path, m.body]));
    expect(read.checksum).toBe((await readArchive(Readable.from([archive]))).checksum);
  });
});

/** An archive endpoint that answers every GET with `send`, on a loopback port; closed after `fn`. */
async function withArchiveServer(send: (res: http.ServerResponse) => void, fn: (baseUrl: string) => Promise<void>): Promise<void> {
  const server = http.createServer((_req, res) => send(res));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  try {
    await fn(`http://127.0.0.1:${(server.address() as AddressInfo).port}`);
  } finally {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  }
}

describe('syncDown against a hostile or failing server', () => {
  /** A directory `work` with one file of its own, alone in its parent; the state file lives elsewhere. */
  const workTree = async () => {
    const parent = await tempDir();
    const dir = path.join(parent, 'work');
    await mkdir(dir);
    await writeFile(path.join(dir, 'mine.txt'), 'mine');
    return { parent, dir, before: await describeTree(dir), stateFile: path.join(await tempDir(), 'state.json') };
  };

  test('a download cut half-way fails; the local tree is untouched and the staging area is gone', async () => {
    const body = zstd(
      rawTar([
        { path: 'new.bin', body: Buffer.alloc(4 * 1024 * 1024, 7) },
        { path: 'other.txt', body: Buffer.from('other') },
      ]),
    );
    const { parent, dir, before, stateFile } = await workTree();
    await withArchiveServer(
      (res) => {
        res.writeHead(200, { 'content-type': 'application/zstd', etag: '"0000"', 'content-length': body.length });
        res.write(body.subarray(0, body.length >> 1), () => setTimeout(() => res.socket?.destroy(), 50));
      },
      async (baseUrl) => {
        await expect(syncDown({ baseUrl }, 'fs_x', dir, { stateFile })).rejects.toThrow();
      },
    );
    expect(await readdir(parent)).toEqual(['work']);
    expect(await describeTree(dir)).toEqual(before);
  });
});

describe('zstd frame checksums (what lets syncDown take the server hashes)', () => {
  const data = Buffer.concat([randomBytes(300 * 1024), Buffer.alloc(200 * 1024, 7), randomBytes(1000)]);
  const run = (codec: ZstdCodec, input: Buffer) =>
    Buffer.concat([...Array.from(codec.push(input), (b) => Buffer.from(b)), ...Array.from(codec.end(), (b) => Buffer.from(b))]);
  const checked = (stream: Buffer, step = 4096) => {
    const frames = new ChecksummedFrames();
    for (let i = 0; i < stream.length; i += step) frames.push(stream.subarray(i, i + step));
    return frames.end();
  };
  const withChecksum = (input: Buffer) => zlib.zstdCompressSync(input, { params: { [zlib.constants.ZSTD_c_checksumFlag]: 1 } });

  test('the packer checksums its frame; ChecksummedFrames tells whole checksummed streams from any other', () => {
    const ours = run(new ZstdCodec('compress', 1), data);
    expect([checked(ours), checked(ours, 1), checked(ours, 1 << 20)]).toEqual([true, true, true]);
    expect(checked(withChecksum(data))).toBe(true);
    expect(checked(withChecksum(Buffer.alloc(0)))).toBe(true);
    expect(checked(Buffer.concat([ours, withChecksum(data)]))).toBe(true);
    const skippable = Buffer.alloc(18);
    skippable.writeUInt32LE(0x184d2a50, 0);
    skippable.writeUInt32LE(10, 4);
    expect(checked(Buffer.concat([skippable, ours]))).toBe(true);
    // No checksum in a frame, no frame, a frame cut short, bytes after the frames.
    expect(checked(zlib.zstdCompressSync(data))).toBe(false);
    expect(checked(Buffer.concat([ours, zlib.zstdCompressSync(data)]))).toBe(false);
    expect(checked(skippable)).toBe(false);
    expect(checked(ours.subarray(0, ours.length - 1))).toBe(false);
    expect(checked(Buffer.concat([ours, Buffer.from([1, 2, 3, 4])]))).toBe(false);
  });

  test('readArchive with trustFrameChecksums: no hashing when checksummed, a flipped content byte is refused; unchecksummed archives are hashed', async () => {
    const tar = rawTar([{ path: 'a.bin', body: data }]);
    const ours = withChecksum(tar);
    const trusted = await readArchive(Readable.from([ours]), undefined, undefined, { trustFrameChecksums: true });
    expect(trusted).toMatchObject({ hashed: false, framesChecksummed: true, checksum: '' });
    expect(trusted.entries[0]).toMatchObject({ path: 'a.bin', size: data.length, sha256: '' });
    // Byte 200,000 of the compressed stream lies in the random content (a raw block): only the checksum can tell.
    const flipped = Buffer.from(ours);
    flipped[200_000]! ^= 1;
    await expect(readArchive(Readable.from([flipped]), undefined, undefined, { trustFrameChecksums: true })).rejects.toMatchObject({
      status: 422,
      code: 'invalid_archive',
    });
    const legacy = await readArchive(Readable.from([zstd(tar)]), undefined, undefined, { trustFrameChecksums: true });
    expect(legacy).toMatchObject({ hashed: true, framesChecksummed: false });
    expect(legacy.entries[0]!.sha256).toBe(createHash('sha256').update(data).digest('hex'));
  });
});
