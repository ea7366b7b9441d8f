// The archive format of DESIGN section 12: POSIX tar (headers encoded by the `tar` package), members
// in path byte order, owners zeroed, mtimes fixed, zstd from node:zlib. One reader validates every member for
// the server (before an upload becomes current) and for syncDown (before anything is written).
import { once } from 'node:events';
import { Readable, Transform, type Writable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { createHash } from 'node:crypto';
import zlib from 'node:zlib';
import { constants as fsConstants } from 'node:fs';
import { open, type FileHandle } from 'node:fs/promises';
import path from 'node:path';
import { Header, Parser, Pax, type ReadEntry } from 'tar';
import { canonicalMode, linkStaysInside, normalizeMemberPath, sha256Text, treeChecksum, unsafeMemberPath, type StatStamp, type TreeEntry } from './tree.js';

/** Fixed member mtime: equal trees give equal archive bytes. */
const ARCHIVE_MTIME = new Date(0);
const ZSTD_MAGIC = Buffer.from([0x28, 0xb5, 0x2f, 0xfd]);
export const ARCHIVE_CONTENT_TYPE = 'application/zstd';

/** Files up to this size are read whole, ahead of their turn; larger ones are streamed in reads of READ_SIZE. */
const SMALL_FILE = 256 * 1024;
const READ_SIZE = 1024 * 1024;
/** How many files are opened (and small ones read) ahead of the one being written. */
const READ_AHEAD = 16;
/** Headers and small files are gathered into pieces of this size: zlib sends every write to the thread pool. */
const BATCH_SIZE = 1024 * 1024;

/** What packTree archives: a walked entry. Files without a sha256 are hashed as they are read. */
export interface PackEntry {
  path: string;
  kind: TreeEntry['kind'];
  mode: number;
  size: number;
  sha256?: string;
  linkpath?: string;
  stamp?: StatStamp;
  /** Set by packTree: the file was gone when its turn came, and is not in the archive. */
  vanished?: boolean;
}

/** A file changed while it was being archived: the archive would not match any state of the tree. */
export class TreeChangedError extends Error {}

/**
 * A zstd-compressed tar of `entries` (relative to `root`, in byte order, as walkTree gives them),
 * streamed with bounded memory: a few files read ahead, large ones in 1 MiB reads. Headers are the
 * `tar` package's (Header, and Pax for long or non-ASCII names). Each file is described by what was
 * read from its open descriptor, so as the stream ends every file entry's size, mode, stamp and
 * sha256 (computed on the way when missing: one read per file) are those of the archived bytes.
 */
export function packTree(root: string, entries: PackEntry[], level = 3): Readable {
  const zstd = zlib.createZstdCompress({ chunkSize: 128 * 1024, params: { [zlib.constants.ZSTD_c_compressionLevel]: level } });
  const tar = Readable.from(tarStream(root, entries), { objectMode: false, highWaterMark: BATCH_SIZE });
  tar.on('error', (error) => zstd.destroy(error));
  return tar.pipe(zstd);
}

interface OpenedFile {
  handle?: FileHandle;
  /** The whole content, for small files. */
  content?: Buffer;
  size: number;
  mode: number;
  stamp: StatStamp;
}

/** Opens a file without following a link that replaced it since the walk; small files are read whole. */
async function openMember(file: string): Promise<OpenedFile | undefined> {
  let handle: FileHandle;
  try {
    handle = await open(file, fsConstants.O_RDONLY | fsConstants.O_NOFOLLOW);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    if ((error as NodeJS.ErrnoException).code === 'ELOOP') throw new TreeChangedError(`${file} became a symlink while it was being archived: sync again`);
    throw error;
  }
  try {
    const st = await handle.stat();
    if (!st.isFile()) throw new TreeChangedError(`${file} is no longer a regular file: sync again`);
    const opened: OpenedFile = { size: st.size, mode: st.mode, stamp: { size: st.size, mtimeMs: st.mtimeMs, ctimeMs: st.ctimeMs, ino: st.ino } };
    if (st.size > SMALL_FILE) return { ...opened, handle };
    const content = Buffer.allocUnsafe(st.size);
    let got = 0;
    while (got < st.size) {
      const { bytesRead } = await handle.read(content, got, st.size - got, got);
      if (bytesRead === 0) throw new TreeChangedError(`${file} shrank while it was being archived: sync again`);
      got += bytesRead;
    }
    await handle.close();
    return { ...opened, content };
  } catch (error) {
    await handle.close().catch(() => undefined);
    throw error;
  }
}

function memberHeader(path_: string, type: 'File' | 'Directory' | 'SymbolicLink', mode: number, size: number, linkpath?: string): Buffer[] {
  const header = new Header({ path: path_, type, mode, size, linkpath, mtime: ARCHIVE_MTIME, uid: 0, gid: 0, uname: '', gname: '' });
  const needPax = header.encode();
  const block = header.block!;
  return needPax ? [new Pax({ path: path_, linkpath, size, mtime: ARCHIVE_MTIME }).encode(), block] : [block];
}

/** The tar bytes of `entries`, in pieces of about BATCH_SIZE. */
async function* tarStream(root: string, entries: PackEntry[]): AsyncGenerator<Buffer> {
  const files = entries.filter((e) => e.kind === 'file');
  // Files opened ahead, in archive order; a failure surfaces when its turn comes.
  const ahead: Promise<OpenedFile | undefined>[] = [];
  let nextToOpen = 0;
  const fill = () => {
    while (ahead.length < READ_AHEAD && nextToOpen < files.length) {
      const p = openMember(path.join(root, files[nextToOpen++]!.path));
      p.catch(() => undefined); // observed when taken
      ahead.push(p);
    }
  };
  let batch: Buffer[] = [];
  let batched = 0;
  const add = (...pieces: Buffer[]) => {
    for (const piece of pieces) {
      batch.push(piece);
      batched += piece.length;
    }
  };
  const take = () => {
    const out = Buffer.concat(batch, batched);
    batch = [];
    batched = 0;
    return out;
  };
  try {
    fill();
    for (const e of entries) {
      if (e.kind === 'dir') add(...memberHeader(`${e.path}/`, 'Directory', e.mode, 0));
      else if (e.kind === 'symlink') add(...memberHeader(e.path, 'SymbolicLink', 0o777, 0, e.linkpath));
      else {
        const opened = await ahead.shift()!;
        fill();
        if (!opened) {
          e.vanished = true;
          continue;
        }
        e.size = opened.size;
        e.mode = canonicalMode(opened.mode, 'file');
        e.stamp = opened.stamp;
        const hash = e.sha256 ? undefined : createHash('sha256');
        add(...memberHeader(e.path, 'File', e.mode, e.size));
        if (opened.content) {
          hash?.update(opened.content);
          add(opened.content);
        } else {
          const handle = opened.handle!;
          try {
            if (batched) yield take();
            for (let pos = 0; pos < opened.size; ) {
              const buffer = Buffer.allocUnsafe(Math.min(READ_SIZE, opened.size - pos));
              const { bytesRead } = await handle.read(buffer, 0, buffer.length, pos);
              if (bytesRead === 0) throw new TreeChangedError(`${path.join(root, e.path)} shrank while it was being archived: sync again`);
              const chunk = bytesRead === buffer.length ? buffer : buffer.subarray(0, bytesRead);
              hash?.update(chunk);
              pos += bytesRead;
              yield chunk;
            }
          } finally {
            await handle.close();
          }
        }
        if (hash) e.sha256 = hash.digest('hex');
        if (e.size % 512) add(Buffer.alloc(512 - (e.size % 512)));
      }
      if (batched >= BATCH_SIZE) yield take();
    }
    add(Buffer.alloc(1024));
    yield take();
  } finally {
    // Stopped early (an error, or the consumer went away): close what was opened ahead.
    for (const p of ahead) void p.then((o) => o?.handle?.close()).catch(() => undefined);
  }
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

  // If the input fails part-way, the member being read never ends by itself: its reader is stopped.
  let inputFailed = false;
  let stopReading: (() => void) | undefined;
  const nextChunk = (chunks: AsyncIterator<Buffer>) =>
    new Promise<IteratorResult<Buffer>>((resolve, reject) => {
      if (inputFailed) return resolve({ done: true, value: undefined });
      stopReading = () => resolve({ done: true, value: undefined });
      chunks.next().then(resolve, reject);
    });
  /** Waits for `out` to take more; fails if it closes or fails instead (its reader went away). */
  const drained = (out: Writable) =>
    new Promise<void>((resolve, reject) => {
      const settle = (error?: unknown) => {
        out.off('drain', settle);
        out.off('close', settle);
        out.off('error', settle);
        if (error instanceof Error) reject(error);
        else if (out.destroyed) reject(new Error("The member's writer closed before its end"));
        else resolve();
      };
      out.on('drain', settle);
      out.on('close', settle);
      out.on('error', settle);
    });
  const consume = async (raw: ReadEntry): Promise<void> => {
    const entry = check(raw);
    entries.push(entry);
    if (entry.kind === 'file') {
      const hash = createHash('sha256');
      const out = sink ? await sink.file(entry) : undefined;
      let seen = 0;
      const chunks = (raw as AsyncIterable<Buffer>)[Symbol.asyncIterator]();
      for (let next = await nextChunk(chunks); !next.done; next = await nextChunk(chunks)) {
        const chunk = next.value;
        seen += chunk.length;
        hash.update(chunk);
        if (out && !out.write(chunk)) await drained(out);
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
    // The pipeline hands the parser the failure of a stage before it (the expansion limit): keep it as it is.
    if (error instanceof ArchiveRejected) return void (failure ??= error);
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
      const zstd = zlib.createZstdDecompress({ chunkSize: 256 * 1024 });
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
  if (failure) {
    inputFailed = true;
    stopReading?.();
  }
  await chain;
  // Only zero blocks decoded and only the parser objected: an archive of no members.
  const emptyTar = allZero && decompressed > 0 && entries.length === 0 && parserFailure !== undefined;
  if (emptyTar && (failure === undefined || !(failure instanceof ArchiveRejected))) failure = undefined;
  if (failure) throw failure;
  return { entries, checksum: treeChecksum(entries), sizeBytes, filesCount: entries.filter((e) => e.kind === 'file').length };
}
