// The archive format of DESIGN section 12: POSIX tar (the `tar` package), members in path byte
// order, owners zeroed, mtimes fixed, zstd from node:zlib. One reader validates every member for
// the server (before an upload becomes current) and for syncDown (before anything is written).
import { once } from 'node:events';
import { Readable, Transform, type Writable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { createHash } from 'node:crypto';
import zlib from 'node:zlib';
import { Pack, Parser, type ReadEntry } from 'tar';
import { canonicalMode, linkStaysInside, normalizeMemberPath, sha256Text, treeChecksum, unsafeMemberPath, type TreeEntry } from './tree.js';

/** Fixed member mtime: equal trees give equal archive bytes. */
const ARCHIVE_MTIME = new Date(0);
const ZSTD_MAGIC = Buffer.from([0x28, 0xb5, 0x2f, 0xfd]);
export const ARCHIVE_CONTENT_TYPE = 'application/zstd';

/**
 * A zstd-compressed tar of `paths` (relative to `root`, already in byte order, as walkTree gives
 * them). Streams: files are read as the consumer pulls.
 */
export function packTree(root: string, paths: readonly string[], level = 3): Readable {
  // The tar package writes nothing at all for no members; an archive is at least its end blocks.
  if (paths.length === 0) return Readable.from([emptyArchive()]);
  const pack = new Pack({
    cwd: root,
    portable: true,
    mtime: ARCHIVE_MTIME,
    noDirRecurse: true,
    // Hard links are archived as separate files: a link member would tie the tree to its inode layout.
    linkCache: { get: () => undefined, set() {} } as unknown as Map<`${number}:${number}`, string>,
  });
  const zstd = zlib.createZstdCompress({ params: { [zlib.constants.ZSTD_c_compressionLevel]: level } });
  // tar writes each header and file separately; zlib sends every write to the thread pool, so
  // thousands of small writes cost more than the compression. Hand it larger pieces.
  const coalesce = coalescer(256 * 1024);
  pack.on('error', (error: unknown) => zstd.destroy(error as Error));
  coalesce.on('error', (error) => zstd.destroy(error));
  pack.pipe(coalesce as unknown as Writable);
  coalesce.pipe(zstd);
  for (const p of paths) pack.add(p);
  pack.end();
  return zstd;
}

/** Joins small chunks into pieces of about `size` bytes. */
function coalescer(size: number): Transform {
  let pending: Buffer[] = [];
  let pendingBytes = 0;
  return new Transform({
    transform(chunk: Buffer, _enc, done) {
      pending.push(chunk);
      pendingBytes += chunk.length;
      if (pendingBytes >= size) {
        this.push(Buffer.concat(pending, pendingBytes));
        pending = [];
        pendingBytes = 0;
      }
      done();
    },
    flush(done) {
      if (pendingBytes) this.push(Buffer.concat(pending, pendingBytes));
      done();
    },
  });
}

/** A tar of nothing, compressed: what a filesystem without content serves. */
export function emptyArchive(): Buffer {
  return zlib.zstdCompressSync(Buffer.alloc(1024));
}

export interface ArchiveLimits {
  /** Total bytes of file content. */
  maxBytes: number;
  maxFiles: number;
}

export const DEFAULT_ARCHIVE_LIMITS: ArchiveLimits = { maxBytes: 1024 ** 3, maxFiles: 100_000 };

/** Why an archive was refused: 413 for a limit, 422 for a member that may not be written. */
export class ArchiveRejected extends Error {
  constructor(
    readonly status: 413 | 422,
    readonly code: 'archive_too_large' | 'invalid_archive',
    message: string,
    readonly member?: string,
  ) {
    super(message);
  }
}

export interface ArchiveSummary {
  entries: TreeEntry[];
  checksum: string;
  sizeBytes: number;
  filesCount: number;
}

/** Where readArchive puts a member's content (syncDown); without one, content is only hashed. */
export interface ArchiveSink {
  dir(entry: TreeEntry): Promise<void>;
  file(entry: TreeEntry): Promise<Writable>;
  symlink(entry: TreeEntry): Promise<void>;
}

/**
 * Reads a (zstd or plain) tar stream, refusing the first member that is unsafe or past a limit,
 * and returns the manifest and tree checksum. The sink, if any, sees a member only after its
 * header passed every check.
 */
export async function readArchive(source: Readable, limits: ArchiveLimits = DEFAULT_ARCHIVE_LIMITS, sink?: ArchiveSink): Promise<ArchiveSummary> {
  const entries: TreeEntry[] = [];
  const kinds = new Map<string, TreeEntry['kind']>();
  let sizeBytes = 0;
  let failure: unknown;
  const parser = new Parser({ strict: true });
  let chain: Promise<void> = Promise.resolve();

  const refuse = (status: 413 | 422, message: string, member?: string): never => {
    throw new ArchiveRejected(status, status === 413 ? 'archive_too_large' : 'invalid_archive', message, member);
  };

  const check = (raw: ReadEntry): TreeEntry => {
    const rawPath = String(raw.path);
    const type = raw.type;
    const kind = type === 'File' || type === 'OldFile' || type === 'ContiguousFile' ? 'file' : type === 'Directory' ? 'dir' : type === 'SymbolicLink' ? 'symlink' : undefined;
    if (!kind) refuse(422, `Member ${JSON.stringify(rawPath)} is a ${type}: only regular files, directories and symlinks inside the tree are allowed`, rawPath);
    const p = normalizeMemberPath(rawPath);
    if (rawPath.startsWith('/')) refuse(422, `Member ${JSON.stringify(rawPath)} has an absolute path`, rawPath);
    const unsafe = unsafeMemberPath(p);
    if (unsafe) refuse(422, `Member ${JSON.stringify(rawPath)} is refused: ${unsafe}`, rawPath);
    if (kinds.has(p)) refuse(422, `Member ${JSON.stringify(p)} appears twice`, p);
    // A member below a symlink member would be written through the link.
    for (let i = p.indexOf('/'); i >= 0; i = p.indexOf('/', i + 1)) {
      const parentKind = kinds.get(p.slice(0, i));
      if (parentKind && parentKind !== 'dir') refuse(422, `Member ${JSON.stringify(p)} lies below ${JSON.stringify(p.slice(0, i))}, which is not a directory`, p);
    }
    let linkpath: string | undefined;
    if (kind === 'symlink') {
      linkpath = String(raw.linkpath ?? '');
      if (!linkStaysInside(p, linkpath)) refuse(422, `Symlink ${JSON.stringify(p)} points outside the tree (${JSON.stringify(linkpath)})`, p);
    }
    const size = kind === 'file' ? raw.size : 0;
    if (entries.length + 1 > limits.maxFiles) refuse(413, `The archive has more than ${limits.maxFiles} members`, p);
    if (sizeBytes + size > limits.maxBytes) refuse(413, `The archive's content is larger than ${limits.maxBytes} bytes (member ${JSON.stringify(p)} claims ${size})`, p);
    sizeBytes += size;
    kinds.set(p, kind!);
    return { path: p, kind: kind!, mode: canonicalMode(raw.mode ?? 0o644, kind!), size, sha256: linkpath === undefined ? '' : sha256Text(linkpath), linkpath };
  };

  const consume = async (raw: ReadEntry): Promise<void> => {
    const entry = check(raw);
    entries.push(entry);
    if (entry.kind === 'file') {
      const hash = createHash('sha256');
      const out = sink ? await sink.file(entry) : undefined;
      let seen = 0;
      for await (const chunk of raw as AsyncIterable<Buffer>) {
        seen += chunk.length;
        hash.update(chunk);
        if (out && !out.write(chunk)) await once(out, 'drain');
      }
      if (seen !== entry.size) refuse(422, `Member ${JSON.stringify(entry.path)} is truncated`, entry.path);
      if (out) {
        out.end();
        if (!out.writableFinished) await once(out, 'finish');
      }
      entry.sha256 = hash.digest('hex');
    } else {
      raw.resume();
      if (sink) await (entry.kind === 'dir' ? sink.dir(entry) : sink.symlink(entry));
    }
  };

  parser.on('entry', (raw: ReadEntry) => {
    if (failure) return raw.resume();
    // Pause the entry until its turn: members are handled one at a time, in order.
    raw.pause();
    chain = chain.then(() => (failure ? void raw.resume() : consume(raw))).catch((error) => {
      failure ??= error;
      raw.resume();
      source.destroy();
    });
  });

  const decompressedLimit = limits.maxBytes + (limits.maxFiles + 4) * 1536 + 1024 * 1024;
  let decompressed = 0;
  // A tar of no members is only zero blocks, which the tar package calls unrecognized.
  let allZero = true;
  const counter = new Transform({
    transform(chunk: Buffer, _enc, done) {
      decompressed += chunk.length;
      if (allZero && chunk.some((b) => b !== 0)) allZero = false;
      if (decompressed > decompressedLimit) return done(new ArchiveRejected(413, 'archive_too_large', `The archive expands past ${decompressedLimit} bytes`));
      done(null, chunk);
    },
  });
  let parserFailure: ArchiveRejected | undefined;
  parser.on('error', (error: Error) => {
    parserFailure = new ArchiveRejected(422, 'invalid_archive', `The archive is not a valid tar: ${error.message}`);
    if (allZero && decompressed > 0 && (error as { code?: string }).code === 'TAR_BAD_ARCHIVE') return;
    failure ??= parserFailure;
  });
  const chunks = source[Symbol.asyncIterator]() as AsyncIterator<Buffer>;
  const first = await chunks.next();
  if (first.done) refuse(422, 'The archive is empty');
  const head = first.value as Buffer;
  const body = Readable.from(
    (async function* () {
      yield head;
      for (let next = await chunks.next(); !next.done; next = await chunks.next()) yield next.value;
    })(),
    { objectMode: false },
  );
  const isZstd = head.length >= 4 && head.subarray(0, 4).equals(ZSTD_MAGIC);
  try {
    if (isZstd) {
      const zstd = zlib.createZstdDecompress();
      const zstdFailure = (e: Error) => new ArchiveRejected(422, 'invalid_archive', `The archive is not valid zstd: ${e.message}`);
      await pipeline(body, zstd, counter, parser as unknown as Writable).catch((e) => {
        throw (e as { code?: string }).code?.startsWith('ERR__ZSTD') || (e as { code?: string }).code?.startsWith('ZSTD') ? zstdFailure(e) : e;
      });
    } else {
      await pipeline(body, counter, parser as unknown as Writable);
    }
  } catch (error) {
    failure ??= error;
  }
  await chain;
  // Only zero blocks decoded and only the parser objected: an archive of no members.
  const emptyTar = allZero && decompressed > 0 && entries.length === 0 && parserFailure !== undefined;
  if (emptyTar && (failure === undefined || !(failure instanceof ArchiveRejected))) failure = undefined;
  if (failure) throw failure;
  return { entries, checksum: treeChecksum(entries), sizeBytes, filesCount: entries.filter((e) => e.kind === 'file').length };
}
