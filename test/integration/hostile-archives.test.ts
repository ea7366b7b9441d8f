// Every hostile archive in one table (README "Filesystems and sync"): each is refused by an upload,
// with the documented status and body, leaving the filesystem's archive as it was (same checksum,
// same bytes on pull, nothing staged or stored), and by syncDown, leaving the local tree as it was
// and nothing beside it. A bomb also costs little: see the tests after the table.
import { randomBytes } from 'node:crypto';
import { mkdir, readdir, rm, writeFile } from 'node:fs/promises';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { Readable, Transform } from 'node:stream';
import zlib from 'node:zlib';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { openBlobStore, type BlobStore } from '../../src/server/blobs/index.js';
import { ArchiveRejected, DEFAULT_ARCHIVE_LIMITS, readArchive, syncDown } from '../../src/sync/index.js';
import { engines, useService } from '../support/service.js';
import { describeTree, patchHeader, paxRecord, rawTar, tempDir, zstd, zstdWithZeros } from '../support/trees.js';

const MiB = 1024 * 1024;
const GiB = 1024 * MiB;
const LIMITS = { maxBytes: 8 * MiB, maxFiles: 200 };

/** The bomb of issue 19: about 98 KB of zstd, a one-file archive followed by 3 GiB of zeros. Built once. */
let bomb: Promise<Buffer> | undefined;
const zeroBomb = () => (bomb ??= zstdWithZeros(rawTar([{ path: 'a', body: Buffer.from('a') }], { end: false }), 3 * GiB));
/** A member whose header declares 2 GiB, followed by 64 MiB of the zeros it claims. */
const claimBomb = () => zstdWithZeros(rawTar([{ path: 'big', size: 2 * GiB }], { end: false }), 64 * MiB);

const file = (p: string, body = 'x') => ({ path: p, body: Buffer.from(body) });
const link = (p: string, target: string) => ({ path: p, type: 'SymbolicLink' as const, linkpath: target });
const pax = (records: Buffer[]) => ({ path: 'PaxHeader/x', type: 'ExtendedHeader' as const, body: Buffer.concat(records) });
const gnuLong = (type: 'NextFileHasLongPath' | 'NextFileHasLongLinkpath', name: Buffer) => ({
  path: '././@LongLink',
  type,
  body: Buffer.concat([name, Buffer.alloc(1)]),
});
const randomFile = rawTar([{ path: 'f.bin', body: randomBytes(100_000) }]);

interface Case {
  what: string;
  archive: () => Buffer | Promise<Buffer>;
  status: 413 | 422;
  detail: RegExp;
}

const cases: Case[] = [
  // Paths and types.
  { what: 'a ../ path', archive: () => zstd(rawTar([file('ok.txt'), file('../x')])), status: 422, detail: /"\.\." in path/ },
  { what: 'an absolute path', archive: () => zstd(rawTar([file('/etc/x')])), status: 422, detail: /absolute path/ },
  { what: 'a symlink to /', archive: () => zstd(rawTar([link('root', '/')])), status: 422, detail: /points outside the tree/ },
  { what: 'a symlink climbing out', archive: () => zstd(rawTar([link('a/up', '../../etc')])), status: 422, detail: /points outside the tree/ },
  {
    what: 'a file written through a symlink to .',
    archive: () => zstd(rawTar([link('d', '.'), file('d/x')])),
    status: 422,
    detail: /lies below "d", which is not a directory/,
  },
  {
    what: 'a file written through a symlink to /',
    archive: () => zstd(rawTar([link('root', '/'), file('root/tmp/escape.txt')])),
    status: 422,
    detail: /points outside the tree/,
  },
  {
    what: 'a symlink over the directory of an earlier member (d/x, then d -> .)',
    archive: () => zstd(rawTar([file('d/x'), link('d', '.')])),
    status: 422,
    detail: /Member "d" is a symlink, but earlier members lie below it/,
  },
  {
    what: 'a symlink over a deeper implied directory (a/b/c, then a/b -> ..)',
    archive: () => zstd(rawTar([file('a/b/c'), link('a/b', '..')])),
    status: 422,
    detail: /Member "a\/b" is a symlink, but earlier members lie below it/,
  },
  {
    what: 'a file over the directory of an earlier member (d/x, then file d)',
    archive: () => zstd(rawTar([file('d/x'), file('d')])),
    status: 422,
    detail: /Member "d" is a file, but earlier members lie below it/,
  },
  {
    what: 'a symlink with content',
    archive: () => zstd(rawTar([{ ...link('l', 'x'), size: 4, body: Buffer.from('data') }])),
    status: 422,
    detail: /symlink with content/,
  },
  { what: 'a character device', archive: () => zstd(rawTar([{ path: 'null', type: 'CharacterDevice' }])), status: 422, detail: /is a CharacterDevice/ },
  { what: 'a fifo', archive: () => zstd(rawTar([{ path: 'pipe', type: 'FIFO' }])), status: 422, detail: /is a FIFO/ },
  { what: 'a hard link', archive: () => zstd(rawTar([file('a'), { path: 'b', type: 'Link', linkpath: 'a' }])), status: 422, detail: /is a Link/ },
  { what: 'a duplicate member', archive: () => zstd(rawTar([file('a', '1'), file('a', '2')])), status: 422, detail: /"a" appears twice/ },
  { what: 'a duplicate member spelled ./a', archive: () => zstd(rawTar([file('a', '1'), file('./a', '2')])), status: 422, detail: /"a" appears twice/ },
  // Names the manifest cannot hold, whichever header carries them.
  { what: 'a NUL in a pax path', archive: () => zstd(rawTar([pax([paxRecord('path', 'a\0b')]), file('a')])), status: 422, detail: /pax path has a NUL byte/ },
  {
    what: 'a NUL in a pax linkpath',
    archive: () => zstd(rawTar([pax([paxRecord('linkpath', 'x\0y')]), link('l', 'x')])),
    status: 422,
    detail: /pax linkpath has a NUL byte/,
  },
  {
    what: 'a newline in a pax path (the parser would drop the record)',
    archive: () => zstd(rawTar([pax([paxRecord('path', 'a\nb')]), file('a')])),
    status: 422,
    detail: /pax path has a newline/,
  },
  {
    what: 'a malformed pax record',
    archive: () => zstd(rawTar([pax([Buffer.from('99 path=a\n')]), file('a')])),
    status: 422,
    detail: /pax extended header is malformed/,
  },
  {
    what: 'a NUL in a GNU long name',
    archive: () => zstd(rawTar([gnuLong('NextFileHasLongPath', Buffer.from('a\0b')), file('a')])),
    status: 422,
    detail: /GNU long name has a NUL byte/,
  },
  {
    what: 'a NUL in a GNU long link target',
    archive: () => zstd(rawTar([gnuLong('NextFileHasLongLinkpath', Buffer.from('x\0y')), link('l', 'x')])),
    status: 422,
    detail: /GNU long link target has a NUL byte/,
  },
  {
    what: 'a NUL inside a ustar name field',
    archive: () => zstd(patchHeader(rawTar([file('ab')]), 0, 1, Buffer.from('\0b'))),
    status: 422,
    detail: /Member "a" has a NUL byte in its name/,
  },
  {
    what: 'a NUL inside a ustar link target field',
    archive: () => zstd(patchHeader(rawTar([link('l', 'xy')]), 0, 158, Buffer.from('\0y'))),
    status: 422,
    detail: /Member "l" has a NUL byte in its link target/,
  },
  {
    what: 'a ustar name that is not UTF-8',
    archive: () => zstd(patchHeader(rawTar([file('ab')]), 0, 0, Buffer.from([0xff, 0xfe]))),
    status: 422,
    detail: /bytes that are not UTF-8 in its name/,
  },
  {
    what: 'a pax path that is not UTF-8',
    archive: () => zstd(rawTar([pax([paxRecord('path', Buffer.from([0x61, 0xc3]))]), file('a')])),
    status: 422,
    detail: /pax path has bytes that are not UTF-8/,
  },
  // Streams cut short or corrupt.
  { what: 'an empty body', archive: () => Buffer.alloc(0), status: 422, detail: /The archive is empty/ },
  {
    what: 'bytes that are not zstd',
    archive: () => Buffer.concat([Buffer.from([0x28, 0xb5, 0x2f, 0xfd]), Buffer.alloc(600, 1)]),
    status: 422,
    detail: /not valid zstd/,
  },
  {
    what: 'a zstd frame cut short (a 100,000-byte file, cut after 200 bytes)',
    archive: () => zstd(randomFile).subarray(0, 200),
    status: 422,
    detail: /not valid zstd: the stream is cut short/,
  },
  {
    what: 'a zstd frame missing its last byte',
    archive: () => zstd(randomFile).subarray(0, -1),
    status: 422,
    detail: /not valid zstd: the stream is cut short/,
  },
  {
    what: 'a tar without its end blocks',
    archive: () => zstd(rawTar([file('a')], { end: false })),
    status: 422,
    detail: /ends without its end-of-archive blocks/,
  },
  {
    what: 'a tar cut after a whole member',
    archive: () => zstd(randomFile.subarray(0, 512 + 100_352)),
    status: 422,
    detail: /ends without its end-of-archive blocks/,
  },
  { what: 'a member shorter than its header says', archive: () => zstd(randomFile.subarray(0, 50_000)), status: 422, detail: /Member "f.bin" is truncated/ },
  { what: 'a plain tar cut inside a member', archive: () => randomFile.subarray(0, 50_000), status: 422, detail: /Member "f.bin" is truncated/ },
  {
    what: 'a header whose checksum does not match',
    archive: () => zstd(Buffer.concat([rawTar([file('a')], { end: false }), Buffer.alloc(512, 0x41), Buffer.alloc(1024)])),
    status: 422,
    detail: /checksum does not match/,
  },
  {
    what: 'data after the end-of-archive blocks',
    archive: () => zstd(Buffer.concat([rawTar([file('a')]), Buffer.alloc(512, 1)])),
    status: 422,
    detail: /data after its end-of-archive blocks/,
  },
  // Limits and bombs.
  {
    what: 'a 10 GB size claim',
    archive: () => zstd(rawTar([{ path: 'huge', size: 10 * GiB }], { end: false })),
    status: 413,
    detail: /larger than 8388608 bytes \(member "huge" claims 10737418240\)/,
  },
  { what: 'a member whose header declares 2 GiB (64 MiB of zeros follow)', archive: claimBomb, status: 413, detail: /member "big" claims 2147483648/ },
  {
    what: 'content past the size limit',
    archive: () => zstd(rawTar([{ path: 'zeros', body: Buffer.alloc(9 * MiB) }])),
    status: 413,
    detail: /larger than 8388608 bytes/,
  },
  { what: 'a zstd bomb: 98 KB expanding to 3 GiB of zeros after a one-file archive', archive: zeroBomb, status: 413, detail: /expands past its end/ },
  {
    what: 'more members than allowed',
    archive: () => zstd(rawTar(Array.from({ length: 201 }, (_, i) => ({ path: `f${i}` })))),
    status: 413,
    detail: /more than 200 members/,
  },
];

const codeOf = (status: 413 | 422) => (status === 413 ? 'archive_too_large' : 'invalid_archive');

describe.each(engines)('hostile archive uploads (%s)', (engine) => {
  let blobs: BlobStore;
  let blobDir: string;
  beforeAll(async () => {
    blobDir = await tempDir('agentctl-blobs-');
    blobs = await openBlobStore({ dir: blobDir });
  });
  afterAll(async () => {
    await blobs?.close();
    await rm(blobDir, { recursive: true, force: true });
  });
  // Opens after the blob store above and closes before it (after-hooks run in reverse).
  const svc = useService(engine, { archiveMaxBytes: LIMITS.maxBytes, archiveMaxFiles: LIMITS.maxFiles }, { blobs: () => blobs });

  const put = (fsId: string, body: Buffer, ifMatch: string) =>
    fetch(`${svc.url}/filesystems/${fsId}/archive`, {
      method: 'PUT',
      headers: { authorization: `Bearer ${svc.adminKey}`, 'content-type': 'application/zstd', 'if-match': ifMatch },
      body: new Uint8Array(body),
    }).then(async (r) => ({ status: r.status, body: await r.json() }));
  const pull = async (fsId: string) =>
    Buffer.from(await (await fetch(`${svc.url}/filesystems/${fsId}/archive`, { headers: { authorization: `Bearer ${svc.adminKey}` } })).arrayBuffer());
  /** Every stored blob and staged file, by path. */
  const stored = async () => (await readdir(blobDir, { recursive: true })).sort();

  test.each(cases)('$what: $status, and the current archive is kept', async ({ archive, status, detail }) => {
    const fs = await svc.client().createFilesystem({ body: { namespace: 'default' } });
    const v1 = await put(fs.id, zstd(rawTar([file('keep.txt', 'v1')])), '*');
    expect(v1.status).toBe(200);
    const pulled = await pull(fs.id);
    const before = await stored();
    const res = await put(fs.id, await archive(), `"${v1.body.archive_checksum}"`);
    expect(res.status, JSON.stringify(res.body)).toBe(status);
    expect(res.body.code).toBe(codeOf(status));
    expect(res.body.detail).toMatch(detail);
    expect(await svc.client().getFilesystem({ params: { filesystem_id: fs.id } })).toMatchObject({
      archive_checksum: v1.body.archive_checksum,
      files_count: 1,
      size_bytes: 2,
    });
    expect(await pull(fs.id)).toEqual(pulled);
    expect(await stored()).toEqual(before);
  });
});

/** An archive endpoint that answers every GET with `body`, on a loopback port; closed after `fn`. */
async function withArchiveServer(body: Buffer, fn: (baseUrl: string) => Promise<void>): Promise<void> {
  const server = http.createServer((_req, res) =>
    res.writeHead(200, { 'content-type': 'application/zstd', etag: '"0000"', 'content-length': body.length }).end(body),
  );
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  try {
    await fn(`http://127.0.0.1:${(server.address() as AddressInfo).port}`);
  } finally {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  }
}

describe('hostile archives served to syncDown', () => {
  test.each(cases)('$what: $status, and the local tree is untouched with nothing beside it', async ({ archive, status, detail }) => {
    const parent = await tempDir();
    const dir = path.join(parent, 'work');
    await mkdir(dir);
    await writeFile(path.join(dir, 'mine.txt'), 'mine');
    const before = await describeTree(dir);
    const stateFile = path.join(await tempDir(), 'state.json');
    await withArchiveServer(await archive(), async (baseUrl) => {
      const error = await syncDown({ baseUrl }, 'fs_x', dir, { stateFile, limits: LIMITS }).catch((e) => e);
      expect(error).toBeInstanceOf(ArchiveRejected);
      expect(error).toMatchObject({ status, code: codeOf(status) });
      expect(error.message).toMatch(detail);
    });
    expect(await readdir(parent)).toEqual(['work']);
    expect(await describeTree(dir)).toEqual(before);
  });
});

describe('what refusing a bomb costs', () => {
  /** `source` through a counter of the bytes taken from it. */
  const metered = (source: Readable) => {
    const meter = { read: 0 };
    const stream = source.pipe(
      new Transform({
        transform(chunk: Buffer, _enc, done) {
          meter.read += chunk.length;
          done(null, chunk);
        },
      }),
    );
    return { meter, stream };
  };

  // The archive is decompressed here and handed over as plain tar, so the meter counts decompressed bytes.
  test.each([
    ["the tests' limits (8 MiB)", LIMITS],
    ['the default limits (1 GiB, 100,000 members)', DEFAULT_ARCHIVE_LIMITS],
  ])('the 98 KB bomb, 3 GiB of zeros after a one-file archive, with %s: refused once 1 MiB of padding is past', async (_name, limits) => {
    const decompressing = Readable.from([await zeroBomb()]).pipe(zlib.createZstdDecompress());
    const { meter, stream } = metered(decompressing);
    try {
      const error = await readArchive(stream, limits).catch((e) => e);
      expect(error).toBeInstanceOf(ArchiveRejected);
      expect(error).toMatchObject({
        status: 413,
        code: 'archive_too_large',
        message: expect.stringMatching(/expands past its end: more than 1048576 bytes of padding/),
      });
      // The archive, 1 MiB of padding, and what the streams had read ahead: nowhere near 3 GiB, nor the limits.
      expect(meter.read).toBeLessThan(2 * MiB);
    } finally {
      decompressing.destroy();
    }
  });

  test('a member whose header declares 2 GiB (with 1 GiB allowed): refused from its header, before its body is decompressed', async () => {
    const decompressing = Readable.from([await claimBomb()]).pipe(zlib.createZstdDecompress());
    const { meter, stream } = metered(decompressing);
    try {
      await expect(readArchive(stream, DEFAULT_ARCHIVE_LIMITS)).rejects.toMatchObject({
        status: 413,
        message: expect.stringMatching(/member "big" claims 2147483648/),
      });
      expect(meter.read).toBeLessThan(2 * MiB);
    } finally {
      decompressing.destroy();
    }
  });

  test('a reading that is stopped (the upload deadline) ends at once with the reason given', async () => {
    let taken!: () => void;
    const firstTaken = new Promise<void>((resolve) => (taken = resolve));
    // A valid beginning, then an input that never ends.
    const stalled = Readable.from(
      (async function* () {
        yield zstd(rawTar([file('a')], { end: false }));
        taken();
        await new Promise(() => {});
      })(),
      { objectMode: false },
    );
    const stop = new AbortController();
    const reading = readArchive(stalled, undefined, undefined, { signal: stop.signal }).catch((e) => e);
    await firstTaken;
    const reason = new ArchiveRejected(413, 'archive_too_large', 'The archive was not received and checked within 1 ms');
    stop.abort(reason);
    expect(await reading).toBe(reason);
  });
});
