// The archive format of README "Filesystems and sync": POSIX tar (headers encoded by the `tar` package), members
// in path byte order, owners zeroed, mtimes fixed, zstd from node:zlib. One reader validates every member for
// the server (before an upload becomes current) and for syncDown (before anything is written).
import { once } from 'node:events';
import { Readable, Writable } from 'node:stream';
import { setImmediate as yieldToLoop } from 'node:timers/promises';
import { createHash, hash as oneShotHash, type Hash } from 'node:crypto';
import zlib from 'node:zlib';
import fs from 'node:fs';
import { promisify } from 'node:util';
import path from 'node:path';
import { Header, Pax } from 'tar';
import { TarWalker, type MemberHeader } from './tar-walk.js';
import { ChecksummedFrames, ZstdCodec } from './zstd.js';
import {
  canonicalMode,
  joinPrefix,
  linkStaysInside,
  normalizeMemberPath,
  sha256Text,
  treeChecksum,
  unsafeMemberPath,
  type StatStamp,
  type TreeEntry,
} from './tree.js';

/** sha256 (hex) of bytes in hand, in one call: no Hash object per small file. */
const sha256Of = (data: Buffer) => oneShotHash('sha256', data, 'hex');
const EMPTY_SHA256 = sha256Of(Buffer.alloc(0));

/** Fixed member mtime: equal trees give equal archive bytes. */
const ARCHIVE_MTIME = new Date(0);
const ZSTD_MAGIC = Buffer.from([0x28, 0xb5, 0x2f, 0xfd]);
/** readArchive gives the event loop a turn after this many decompressed bytes. */
const YIELD_EVERY = 8 * 1024 * 1024;
export const ARCHIVE_CONTENT_TYPE = 'application/zstd';

/** Files up to this size are read whole, ahead of their turn; larger ones are streamed in reads of BATCH_SIZE. */
const SMALL_FILE = 256 * 1024;
/** How many files are opened (and small ones read) ahead of the one being written. */
const READ_AHEAD = 16;
/** Headers and small files are gathered into pieces of this size: zlib sends every write to the thread pool. */
const BATCH_SIZE = 1024 * 1024;

/**
 * zstd level of uploads: 1, as the bench's floor `tar | zstd -1`. On the bench's 48 MiB tree level 3
 * took about 1.4x the CPU of level 1 for the same bytes; SyncOptions.level picks another.
 */
export const DEFAULT_LEVEL = 1;

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
export function packTree(root: string, entries: PackEntry[], level = DEFAULT_LEVEL): Readable {
  return Readable.from(packedArchive(root, entries, level), { objectMode: false, highWaterMark: 2 * BATCH_SIZE });
}

/** Buffers the compressed output of `packedArchive(..., reuseOutput)` circulates through. */
const OUTPUT_BUFFERS = 3;

/**
 * packTree's compressed pieces, pulled one by one. Each piece is a copy of the codec's output the
 * consumer may keep; with `reuseOutput` the pieces are instead full BATCH_SIZE buffers (the last one
 * shorter) taken in turn from OUTPUT_BUFFERS of them, so a piece is overwritten two pieces later:
 * only for a consumer that is done with a piece before it asks for the next one but one. syncUp's
 * HTTP client is one (undici writes a piece to the socket, and a BATCH_SIZE write is above the
 * socket's high-water mark, so it waits for the socket to drain before it asks for more); a fresh
 * 1 MiB copy per piece made the garbage collector run full collections for the external memory.
 */
export async function* packedArchive(
  root: string,
  entries: PackEntry[],
  level = DEFAULT_LEVEL,
  reuseOutput = false,
  /** false: a file without a sha256 is left without one (the caller takes it from the server's manifest). */
  hashMissing = true,
): AsyncGenerator<Buffer> {
  // Compressed on this thread, piece by piece, as it is pulled: no hop to the thread pool (see
  // zstd.ts). A piece's buffer goes back to its pool once compressed.
  const pools = { batch: new BufferPool(BATCH_SIZE, 4), small: new BufferPool(SMALL_FILE, READ_AHEAD + 1) };
  const codec = new ZstdCodec('compress', level);
  const outputs = reuseOutput ? Array.from({ length: OUTPUT_BUFFERS }, () => Buffer.allocUnsafeSlow(BATCH_SIZE)) : [];
  let turn = 0;
  let filled = 0;
  try {
    const out: Buffer[] = [];
    /** Takes the codec's output views: copied whole (out), or into the turn's output buffer, full ones to `out`. */
    const take = (views: Iterable<Buffer>) => {
      for (const view of views) {
        if (!reuseOutput) {
          out.push(copyOf(view));
          continue;
        }
        for (let at = 0; at < view.length; ) {
          const n = view.copy(outputs[turn]!, filled, at);
          at += n;
          filled += n;
          if (filled === BATCH_SIZE) {
            out.push(outputs[turn]!);
            turn = (turn + 1) % OUTPUT_BUFFERS;
            filled = 0;
          }
        }
      }
    };
    for await (const piece of tarStream(root, entries, pools, hashMissing)) {
      take(codec.push(piece.data));
      if (piece.pooled) pools.batch.put(piece.pooled);
      // Reused buffers go out one by one: a piece is overwritten two pieces after its own.
      if (reuseOutput) for (const full of out.splice(0)) yield full;
      else if (out.length) yield out.length === 1 ? out.pop()! : Buffer.concat(out.splice(0));
    }
    take(codec.end());
    if (reuseOutput) {
      for (const full of out.splice(0)) yield full;
      if (filled) yield outputs[turn]!.subarray(0, filled);
    } else if (out.length) yield Buffer.concat(out);
  } finally {
    codec.close();
  }
}

/** A copy of `view` in memory that is not zeroed first (Buffer.from zeroes it, then copies). */
function copyOf(view: Buffer): Buffer {
  const copy = Buffer.allocUnsafeSlow(view.length);
  view.copy(copy);
  return copy;
}

/**
 * Buffers of one size, reused: the packer reads a whole tree through a handful of them, so its
 * memory and the garbage collector's work do not grow with the tree.
 */
class BufferPool {
  private readonly free: Buffer[] = [];
  constructor(
    readonly size: number,
    private readonly keep: number,
  ) {}
  get(): Buffer {
    return this.free.pop() ?? Buffer.allocUnsafeSlow(this.size);
  }
  put(buffer: Buffer): void {
    if (this.free.length < this.keep) this.free.push(buffer);
  }
}

/** A piece of the tar stream; `pooled` is the batch-pool buffer it lies in, if any. */
interface Piece {
  data: Buffer;
  pooled?: Buffer;
}

interface OpenedFile {
  /** A large file's descriptor, to be streamed. */
  fd?: number;
  /** The whole content (small files), in `pooled` (a small-pool buffer to give back). */
  content?: Buffer;
  pooled?: Buffer;
  size: number;
  mode: number;
  stamp?: StatStamp;
}

// The callback forms: FileHandle objects cost more than the small reads they would serve.
const openFd = promisify(fs.open);
const readFd = promisify(fs.read);
const closeFd = promisify(fs.close);
const fstatFd = promisify(fs.fstat);
/** No link followed (one may have replaced the file since the walk), no wait on a fifo. */
const OPEN_FLAGS = fs.constants.O_RDONLY | fs.constants.O_NOFOLLOW | fs.constants.O_NONBLOCK;

/** An open's failure as the archive sees it: a file gone is undefined, one turned into a link a TreeChangedError. */
function openFailure(file: string, error: unknown): undefined {
  if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
  if ((error as NodeJS.ErrnoException).code === 'ELOOP') throw new TreeChangedError(`${file} became a symlink while it was being archived: sync again`);
  throw error;
}

/**
 * Opens a walked file. A small one is read whole in one read (a short read is its end) and keeps
 * the walk's mode and stamp: a later change moves its mtime past that stamp, so the stat cache will
 * not vouch for it. A large one is fstat'ed and left open for streaming.
 *
 * A small file is opened, read and closed on this thread: three system calls on cached data cost
 * less than three round trips to the thread pool, each of which (on the loaded 2-core bench machine)
 * took about 25 µs of this thread's time and two context switches (10,000 files: 0.7 s of 1.5 s).
 */
function openMember(file: string, walked: PackEntry, small: BufferPool): OpenedFile | undefined | Promise<OpenedFile | undefined> {
  if (walked.size >= SMALL_FILE) return openLarge(file);
  let fd: number;
  try {
    fd = fs.openSync(file, OPEN_FLAGS);
  } catch (error) {
    return openFailure(file, error);
  }
  const pooled = small.get();
  try {
    let bytesRead: number;
    try {
      bytesRead = fs.readSync(fd, pooled, 0, pooled.length, 0);
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code;
      throw code === 'EISDIR' || code === 'EAGAIN' ? new TreeChangedError(`${file} is no longer a regular file: sync again`) : error;
    }
    if (bytesRead < pooled.length) {
      fs.closeSync(fd);
      return { content: pooled.subarray(0, bytesRead), pooled, size: bytesRead, mode: walked.mode, stamp: walked.stamp };
    }
  } catch (error) {
    small.put(pooled);
    try {
      fs.closeSync(fd);
    } catch {
      /* the first failure is the one to report */
    }
    throw error;
  }
  // It grew past a small file since the walk: stream it.
  small.put(pooled);
  return streamed(file, fd);
}

async function openLarge(file: string): Promise<OpenedFile | undefined> {
  let fd: number;
  try {
    fd = await openFd(file, OPEN_FLAGS);
  } catch (error) {
    return openFailure(file, error);
  }
  return streamed(file, fd);
}

/** A large file's descriptor, fstat'ed: it is described by what is open. */
async function streamed(file: string, fd: number): Promise<OpenedFile> {
  try {
    const st = await fstatFd(fd);
    if (!st.isFile()) throw new TreeChangedError(`${file} is no longer a regular file: sync again`);
    return { fd, size: st.size, mode: st.mode, stamp: { size: st.size, mtimeMs: st.mtimeMs, ctimeMs: st.ctimeMs, ino: st.ino } };
  } catch (error) {
    await closeFd(fd).catch(() => undefined);
    throw error;
  }
}

const ZERO_BLOCKS = Buffer.alloc(1024);

/**
 * The ustar block the `tar` package's Header encodes for every member here (owners zeroed, mtime
 * ARCHIVE_MTIME, no link), with the path, mode, size and type fields zeroed: encodePlainHeader
 * writes those and the checksum. Its byte sum, checksum field counted as spaces, is PLAIN_BASE_SUM.
 */
const PLAIN_TEMPLATE = (() => {
  const block = Buffer.alloc(512);
  new Header({ path: 'x', type: 'File', mode: 0, size: 0, mtime: ARCHIVE_MTIME, uid: 0, gid: 0, uname: '', gname: '' }).encode(block, 0);
  block.fill(0, 0, 100);
  block.fill(0, 100, 108);
  block.fill(0, 124, 136);
  block.fill(0x20, 148, 156);
  block[156] = 0;
  return block;
})();
const PLAIN_BASE_SUM = PLAIN_TEMPLATE.reduce((n, b) => n + b, 0);
/** The largest size the 12-byte field holds in octal (the Header's limit: larger ones take a pax header). */
const MAX_PLAIN_SIZE = 0o77777777777;
const PLAIN_TYPES = { File: 0x30, Directory: 0x35 } as const;

/** Writes `digits` (octal) as the Header does into a `width`-byte field at `at`: zero-padded, then ' ' and NUL (or NUL alone when full); their byte sum. */
function octalField(buf: Buffer, at: number, width: number, digits: string): number {
  const pad = width - 2 - digits.length;
  let sum = 0;
  let i = at;
  for (let k = 0; k < pad; k++, i++) {
    buf[i] = 0x30;
    sum += 0x30;
  }
  for (let k = 0; k < digits.length; k++, i++) {
    const c = digits.charCodeAt(k);
    buf[i] = c;
    sum += c;
  }
  if (pad >= 0) {
    buf[i++] = 0x20;
    sum += 0x20;
  }
  buf[i] = 0;
  return sum;
}

/**
 * The header block of a file or directory whose path is ASCII and shorter than 100 bytes, written
 * at `at` as the `tar` package's Header.encode writes it (the same bytes: test/unit/sync-archive),
 * without its object, string padding and field-by-field writes: at 50,000 small files those were
 * the packer's largest cost after the system calls. False (nothing written) for any other member.
 */
export function encodePlainHeader(buf: Buffer, at: number, path_: string, type: keyof typeof PLAIN_TYPES, mode: number, size: number): boolean {
  if (path_.length >= 100 || size > MAX_PLAIN_SIZE || size < 0 || mode < 0 || mode > 0o7777777 || !Number.isInteger(size) || !Number.isInteger(mode))
    return false;
  let sum = PLAIN_BASE_SUM;
  for (let i = 0; i < path_.length; i++) {
    const c = path_.charCodeAt(i);
    if (c >= 0x80) return false;
    sum += c;
  }
  PLAIN_TEMPLATE.copy(buf, at);
  buf.write(path_, at, 'latin1');
  sum += octalField(buf, at + 100, 8, mode.toString(8));
  sum += octalField(buf, at + 124, 12, size.toString(8));
  buf[at + 156] = PLAIN_TYPES[type];
  sum += PLAIN_TYPES[type];
  octalField(buf, at + 148, 8, sum.toString(8));
  return true;
}

/** The tar bytes of `entries`, in pieces of about BATCH_SIZE. */
async function* tarStream(root: string, entries: PackEntry[], pools: { batch: BufferPool; small: BufferPool }, hashMissing = true): AsyncGenerator<Piece> {
  const files = entries.filter((e) => e.kind === 'file');
  // Large files opened ahead on the thread pool, in archive order (undefined for a small file, read
  // on this thread when its turn comes: no promise per file); a failure surfaces when its turn comes.
  const ahead: (Promise<OpenedFile | undefined> | undefined)[] = [];
  let nextToOpen = 0;
  const fill = () => {
    while (ahead.length < READ_AHEAD && nextToOpen < files.length) {
      const file = files[nextToOpen++]!;
      if (file.size < SMALL_FILE) {
        ahead.push(undefined);
        continue;
      }
      const p = openLarge(path.join(root, file.path));
      p.catch(() => undefined); // observed when taken
      ahead.push(p);
    }
  };
  let batch = pools.batch.get();
  let batched = 0;
  const flush = (): Piece => {
    const piece = { data: batch.subarray(0, batched), pooled: batch };
    batch = pools.batch.get();
    batched = 0;
    return piece;
  };
  /** Copies `pieces` into the batch, handing out full batches. */
  function* add(...pieces: Buffer[]): Generator<Piece> {
    for (const piece of pieces) {
      if (batched + piece.length > batch.length && batched) yield flush();
      if (piece.length > batch.length) {
        yield { data: Buffer.from(piece) };
        continue;
      }
      piece.copy(batch, batched);
      batched += piece.length;
    }
  } /**
   * A member's header, encoded straight into the batch (no 512-byte buffer per member: at 10,000
   * small files those were much of the collector's work), with its pax header first when needed.
   * The block is zeroed first: the encoder reads it (a long prefix) as a fresh one would be.
   */
  function* addHeader(path_: string, type: 'File' | 'Directory' | 'SymbolicLink', mode: number, size: number, linkpath?: string): Generator<Piece> {
    if (batched + 512 > batch.length) yield flush();
    const header = new Header({ path: path_, type, mode, size, linkpath, mtime: ARCHIVE_MTIME, uid: 0, gid: 0, uname: '', gname: '' });
    batch.fill(0, batched, batched + 512);
    if (!header.encode(batch, batched)) {
      batched += 512;
      return;
    }
    // Long or non-ASCII names: the pax header goes before the block.
    const block = Buffer.from(batch.subarray(batched, batched + 512));
    yield* add(new Pax({ path: path_, linkpath, size, mtime: ARCHIVE_MTIME }).encode(), block);
  }

  const prefix = joinPrefix(root);
  try {
    fill();
    for (const e of entries) {
      if (e.kind === 'dir') {
        if (batched + 512 > batch.length) yield flush();
        if (encodePlainHeader(batch, batched, `${e.path}/`, 'Directory', e.mode, 0)) batched += 512;
        else yield* addHeader(`${e.path}/`, 'Directory', e.mode, 0);
      } else if (e.kind === 'symlink') yield* addHeader(e.path, 'SymbolicLink', 0o777, 0, e.linkpath);
      else {
        const early = ahead.shift();
        fill();
        const member = early ?? openMember(`${prefix}${e.path}`, e, pools.small);
        const opened = member instanceof Promise ? await member : member;
        if (!opened) {
          e.vanished = true;
          continue;
        }
        e.size = opened.size;
        e.mode = canonicalMode(opened.mode, 'file');
        e.stamp = opened.stamp;
        const toHash = !e.sha256 && hashMissing;
        // A small file's content is hashed in one call (no Hash object); a large one's as it streams.
        const hash = toHash && !opened.content ? createHash('sha256') : undefined;
        if (batched + 512 > batch.length) yield flush();
        if (encodePlainHeader(batch, batched, e.path, 'File', e.mode, e.size)) batched += 512;
        else yield* addHeader(e.path, 'File', e.mode, e.size);
        if (opened.content) {
          if (toHash) e.sha256 = sha256Of(opened.content);
          // A small file's content, copied into the batch (it is smaller than one) without add's generator.
          if (batched + opened.content.length > batch.length) yield flush();
          opened.content.copy(batch, batched);
          batched += opened.content.length;
          pools.small.put(opened.pooled!);
        } else {
          const fd = opened.fd!;
          // The next read is under way on the thread pool while this one is hashed and compressed.
          const readAt = (pos: number) => {
            const buffer = pools.batch.get();
            const read = readFd(fd, buffer, 0, Math.min(buffer.length, opened.size - pos), pos).then(({ bytesRead }) => ({ buffer, bytesRead }));
            read.catch(() => undefined); // observed when taken
            return read;
          };
          let next = opened.size > 0 ? readAt(0) : undefined;
          try {
            if (batched) yield flush();
            for (let pos = 0; pos < opened.size; ) {
              const { buffer, bytesRead } = await next!;
              next = undefined;
              if (bytesRead === 0) throw new TreeChangedError(`${path.join(root, e.path)} shrank while it was being archived: sync again`);
              const chunk = buffer.subarray(0, bytesRead);
              pos += bytesRead;
              if (pos < opened.size) next = readAt(pos);
              hash?.update(chunk);
              yield { data: chunk, pooled: buffer };
            }
          } finally {
            // A read still under way uses the descriptor: it is closed after.
            if (next) await next.catch(() => undefined);
            await closeFd(fd);
          }
        }
        if (hash) e.sha256 = hash.digest('hex');
        if (e.size % 512) {
          const padding = 512 - (e.size % 512);
          if (batched + padding > batch.length) yield flush();
          batch.fill(0, batched, batched + padding);
          batched += padding;
        }
      }
      if (batched >= BATCH_SIZE - 512) yield flush();
    }
    yield* add(ZERO_BLOCKS);
    if (batched) yield flush();
  } finally {
    // Stopped early (an error, or the consumer went away): close what was opened ahead.
    for (const p of ahead) void p?.then((o) => (o?.fd === undefined ? undefined : closeFd(o.fd))).catch(() => undefined);
  }
}

/** A tar of nothing, compressed: what a filesystem without content serves. */
export function emptyArchive(): Buffer {
  return zlib.zstdCompressSync(Buffer.alloc(1024), { params: { [zlib.constants.ZSTD_c_checksumFlag]: 1 } });
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
  /** With `hashed` false, files' sha256 are '' (and `checksum` is not the tree's). */
  entries: TreeEntry[];
  checksum: string;
  /** Whether file contents were hashed (see ReadArchiveOptions.trustFrameChecksums). */
  hashed: boolean;
  /** Whether the archive is zstd whose every frame has a content checksum zstd checked. */
  framesChecksummed: boolean;
  sizeBytes: number;
  filesCount: number;
}

/**
 * A member's writer that is done with each piece of content when `write` returns (a file written
 * through its descriptor): the reader hands it views of the buffer it decompresses into, no copies.
 * A Writable is given copies instead, since it may keep a piece past its write call.
 */
export interface MemberWriter {
  write(data: Buffer): void;
  end(): void;
  /** The reading failed part-way: the member is abandoned. */
  destroy(): void;
}

/** Where readArchive puts a member's content (syncDown); without one, content is only hashed. */
export interface ArchiveSink {
  dir(entry: TreeEntry): Promise<void>;
  file(entry: TreeEntry): Promise<Writable | MemberWriter>;
  symlink(entry: TreeEntry): Promise<void>;
}

export interface ReadArchiveOptions {
  /** Sees each chunk of the source as it is taken, before it is read (a download's progress). */
  onChunk?: (chunk: Buffer) => void;
  /** Aborting it stops the reading and refuses the archive with its reason (an ArchiveRejected). */
  signal?: AbortSignal;
  /**
   * For a caller that gives the reader its source's chunks, held by nothing else (the server's
   * upload, syncDown's download): each chunk's memory is freed as soon as it is read. Without a sink,
   * each header and piece of content is also handled as the walker reaches it (content hashed and
   * let go) instead of gathered per decompressed piece first. With a sink only zstd chunks are freed
   * (the codec is done with a chunk once it is decompressed; a plain tar's content is the chunk). A
   * freed chunk is empty after. Node.js's HTTP parser (and undici's) gives each body chunk a buffer
   * of its own; left to the garbage collector, an upload's chunks piled up as external memory and set
   * off a full collection every 16-20 MB, and a 200 MiB download's client grew by 76 MiB.
   */
  releaseChunks?: boolean;
  /**
   * For a caller that has each file's sha256 from elsewhere (syncDown: the server's manifest): when
   * the archive's first zstd frame has a content checksum, contents are not hashed, and the summary
   * says whether every frame had one (then zstd checked that the content is what was compressed).
   */
  trustFrameChecksums?: boolean;
}

/**
 * Frees the memory of a chunk that has its ArrayBuffer to itself, now rather than at the next full
 * collection (see ReadArchiveOptions.releaseChunks). A view of part of a buffer is left alone.
 */
function releaseChunk(chunk: Buffer): void {
  // ES2024's resizable-buffer API, in Node.js since 21; the project's TypeScript lib is older.
  const buffer = chunk.buffer as ArrayBuffer & { detached?: boolean; transfer?: (length: number) => ArrayBuffer };
  if (chunk.byteOffset !== 0 || chunk.byteLength !== buffer.byteLength || !(buffer instanceof ArrayBuffer) || buffer.detached) return;
  buffer.transfer?.(0);
}

const isZstd = (head: Buffer) => head.length >= 4 && head.subarray(0, 4).equals(ZSTD_MAGIC);

/** A failure of a stage as the refusal it is: zstd's and the tar package's errors are the archive's fault. */
function asRefusal(error: unknown): unknown {
  if (error instanceof ArchiveRejected) return error;
  const code = (error as { code?: unknown }).code;
  const message = (error as Error).message;
  if (typeof code !== 'string') return error;
  if (code === 'Z_BUF_ERROR')
    return new ArchiveRejected(422, 'invalid_archive', 'The archive is not valid zstd: the stream is cut short (its last frame is unfinished)');
  if (code.startsWith('ERR__ZSTD') || code.startsWith('ZSTD') || code === 'Z_DATA_ERROR')
    return new ArchiveRejected(422, 'invalid_archive', `The archive is not valid zstd: ${message}`);
  if (code.startsWith('TAR_')) return new ArchiveRejected(422, 'invalid_archive', `The archive is not a valid tar: ${message}`);
  return error;
}

/**
 * Reads a (zstd or plain) tar stream, refusing the first member that is unsafe or past a limit,
 * and returns the manifest and tree checksum. Each header is judged as it is decompressed (see
 * TarWalker), before any of its body is; the sink, if any, sees a member only after its header
 * passed every check. An archive cut short (an unfinished zstd frame, a member shorter than its
 * header says, no end-of-archive blocks) is refused, and so is anything after its end but a little
 * zero padding: decompressed bytes are bounded by what the headers declare.
 */
export async function readArchive(
  source: Readable | AsyncIterable<Buffer>,
  limits: ArchiveLimits = DEFAULT_ARCHIVE_LIMITS,
  sink?: ArchiveSink,
  options: ReadArchiveOptions = {},
): Promise<ArchiveSummary> {
  const entries: TreeEntry[] = [];
  const kinds = new Map<string, TreeEntry['kind']>();
  /** Every directory a member lies below, named in the archive or not: nothing else may take its path. */
  const impliedDirs = new Set<string>();
  let members = 0;
  let sizeBytes = 0;
  let failure: unknown;

  const refuse = (status: 413 | 422, message: string, member?: string): never => {
    throw new ArchiveRejected(status, status === 413 ? 'archive_too_large' : 'invalid_archive', message, member);
  };

  const check = (h: MemberHeader): TreeEntry => {
    const rawPath = h.path;
    const type = h.type;
    const kind =
      type === 'File' || type === 'OldFile' || type === 'ContiguousFile'
        ? 'file'
        : type === 'Directory'
          ? 'dir'
          : type === 'SymbolicLink'
            ? 'symlink'
            : undefined;
    if (!kind) refuse(422, `Member ${JSON.stringify(rawPath)} is a ${type}: only regular files, directories and symlinks inside the tree are allowed`, rawPath);
    const p = normalizeMemberPath(rawPath);
    if (rawPath.startsWith('/')) refuse(422, `Member ${JSON.stringify(rawPath)} has an absolute path`, rawPath);
    const unsafe = unsafeMemberPath(p);
    if (unsafe) refuse(422, `Member ${JSON.stringify(rawPath)} is refused: ${unsafe}`, rawPath);
    if (kinds.has(p)) refuse(422, `Member ${JSON.stringify(p)} appears twice`, p);
    // A member below a symlink (or a file) would be written through it...
    for (let i = p.indexOf('/'); i >= 0; i = p.indexOf('/', i + 1)) {
      const parentKind = kinds.get(p.slice(0, i));
      if (parentKind && parentKind !== 'dir')
        refuse(422, `Member ${JSON.stringify(p)} lies below ${JSON.stringify(p.slice(0, i))}, which is not a directory`, p);
    }
    // ...and one that comes after members below its path would turn their directory into something else.
    if (kind !== 'dir' && impliedDirs.has(p))
      refuse(422, `Member ${JSON.stringify(p)} is a ${kind === 'file' ? 'file' : 'symlink'}, but earlier members lie below it, which is not a directory`, p);
    if (kind !== 'file' && h.size > 0) refuse(422, `Member ${JSON.stringify(p)} is a ${kind === 'dir' ? 'directory' : 'symlink'} with content`, p);
    let linkpath: string | undefined;
    if (kind === 'symlink') {
      linkpath = h.linkpath ?? '';
      if (!linkStaysInside(p, linkpath)) refuse(422, `Symlink ${JSON.stringify(p)} points outside the tree (${JSON.stringify(linkpath)})`, p);
    }
    const size = kind === 'file' ? h.size : 0;
    if (members + 1 > limits.maxFiles) refuse(413, `The archive has more than ${limits.maxFiles} members`, p);
    if (sizeBytes + size > limits.maxBytes)
      refuse(413, `The archive's content is larger than ${limits.maxBytes} bytes (member ${JSON.stringify(p)} claims ${size})`, p);
    members++;
    sizeBytes += size;
    kinds.set(p, kind!);
    for (let i = p.lastIndexOf('/'); i > 0 && !impliedDirs.has(p.slice(0, i)); i = p.lastIndexOf('/', i - 1)) impliedDirs.add(p.slice(0, i));
    return { path: p, kind: kind!, mode: canonicalMode(h.mode ?? 0o644, kind!), size, sha256: linkpath === undefined ? '' : sha256Text(linkpath), linkpath };
  };
  // What the walker saw in one chunk, handled in order once the chunk is walked: the sink's calls are
  // asynchronous, the walker is not. Content is slices of the chunk, which is held until then.
  // With releaseChunks and no sink every handling is synchronous, so nothing is gathered: see handle.
  type Event = { kind: 'member'; entry: TreeEntry } | { kind: 'content'; data: Buffer } | { kind: 'end' };
  const events: Event[] = [];
  const direct = options.releaseChunks === true && !sink;
  const walker = new TarWalker(
    (header) => {
      const entry = check(header);
      if (direct) startMember(entry);
      else events.push({ kind: 'member', entry });
    },
    refuse,
    (data) => {
      if (direct) {
        if (current) hashContent(current, data);
      } else events.push({ kind: 'content', data });
    },
    () => {
      if (direct) endMember();
      else events.push({ kind: 'end' });
    },
  );

  /**
   * The member whose content is passing: its hash (unless contents are not hashed), and its writer
   * when there is a sink. Content that comes in one piece is hashed in one call (`sha256`), other
   * content through a Hash: most small files are one slice of a decompressed piece.
   */
  let current: { entry: TreeEntry; hash?: Hash; sha256?: string; out?: Writable | MemberWriter } | undefined;
  const hashContent = (member: NonNullable<typeof current>, data: Buffer) => {
    if (!hashing) return;
    if (!member.hash && data.length === member.entry.size) member.sha256 = sha256Of(data);
    else (member.hash ??= createHash('sha256')).update(data);
  };
  /** Contents are hashed unless trustFrameChecksums and the first frame has a checksum (decided on the first chunk). */
  let hashing = true;
  /** Walks the compressed stream's frame and block headers (trustFrameChecksums). */
  let frames: ChecksummedFrames | undefined;
  /** Whether content lies in a buffer that is reused once the chunk is handled (decompressed output). */
  let reusedBuffer = false;
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
  // Each handler returns a promise only where the sink makes one (without a sink, all is synchronous).
  function startMember(entry: TreeEntry): Promise<void> | undefined {
    entries.push(entry);
    if (entry.kind !== 'file') {
      current = undefined;
      return sink && (entry.kind === 'dir' ? sink.dir(entry) : sink.symlink(entry));
    }
    current = { entry };
    if (sink) return sink.file(entry).then((out) => void (current!.out = out));
    return undefined;
  }
  // Only files have content (check refuses any other member that claims some).
  const passContent = (data: Buffer): Promise<void> | undefined => {
    const member = current;
    if (!member) return undefined;
    hashContent(member, data);
    const out = member.out;
    if (!out) return undefined;
    if (!(out instanceof Writable)) return void out.write(data);
    if (!out.write(reusedBuffer ? Buffer.from(data) : data)) return drained(out);
    return undefined;
  };
  function endMember(): Promise<void> | undefined {
    const member = current;
    if (!member) return undefined;
    const out = member.out;
    member.entry.sha256 = member.hash ? member.hash.digest('hex') : (member.sha256 ?? (hashing ? EMPTY_SHA256 : ''));
    current = undefined;
    if (!out) return undefined;
    out.end();
    if (!(out instanceof Writable)) return undefined;
    return out.writableFinished ? undefined : once(out, 'finish').then(() => undefined);
  }
  const handle = (event: Event): Promise<void> | undefined =>
    event.kind === 'member' ? startMember(event.entry) : event.kind === 'content' ? passContent(event.data) : endMember();
  const handleAll = async (): Promise<void> => {
    for (let i = 0; i < events.length; i++) {
      const pending = handle(events[i]!);
      if (pending) await pending;
    }
    events.length = 0;
  };

  // A backstop behind the walker's own bounds (content, headers, extended headers, padding).
  const decompressedLimit = limits.maxBytes + (limits.maxFiles + 4) * 1536 + 1024 * 1024;
  let decompressed = 0;
  /** Walks one piece of tar and handles what it held; with zstd the piece is the codec's buffer, reused after. */
  let sinceYield = 0;
  const walkTar = async (tar: Buffer): Promise<void> => {
    decompressed += tar.length;
    if (decompressed > decompressedLimit) throw new ArchiveRejected(413, 'archive_too_large', `The archive expands past ${decompressedLimit} bytes`);
    try {
      walker.push(tar);
      if (events.length) await handleAll();
    } finally {
      events.length = 0;
    }
    // Decompressing and hashing run on this thread: let the event loop (other requests, the deadline) in now and then.
    sinceYield += tar.length;
    if (sinceYield >= YIELD_EVERY) {
      sinceYield = 0;
      await yieldToLoop();
    }
    if (stopped) throw stopped;
  };
  /** Why the caller stopped the reading, if it did: that, not how the streams broke off, is the failure. */
  let stopped: Error | undefined;
  /** Ends a wait for the source's next chunk when the reading is stopped. */
  let interruptWait: ((error: Error) => void) | undefined;
  const stop = () => {
    const reason = options.signal!.reason;
    stopped = reason instanceof Error ? reason : new ArchiveRejected(413, 'archive_too_large', 'The archive took too long to read');
    interruptWait?.(stopped);
  };
  const chunks = source[Symbol.asyncIterator]() as AsyncIterator<Buffer>;
  const nextChunk = () =>
    new Promise<IteratorResult<Buffer>>((resolve, reject) => {
      interruptWait = reject;
      chunks.next().then(resolve, reject);
    });
  /** Decompresses on this thread (see zstd.ts), 1 MiB of output at a time; undefined for a plain tar. */
  let codec: ZstdCodec | undefined;
  options.signal?.addEventListener('abort', stop, { once: true });
  try {
    if (options.signal?.aborted) throw options.signal.reason;
    // One chunk at a time, straight from the source: the sink's pace is the reading's.
    let next = await nextChunk();
    if (next.done) refuse(422, 'The archive is empty');
    const onChunk = options.onChunk;
    // The first chunk tells zstd from plain tar.
    if (isZstd(next.value as Buffer)) {
      codec = new ZstdCodec('decompress');
      reusedBuffer = true;
      // Byte 4 is the first frame's descriptor; its bit 2 the content checksum flag.
      const first = next.value as Buffer;
      if (options.trustFrameChecksums && first.length > 4 && (first[4]! & 0x04) !== 0) {
        hashing = false;
        frames = new ChecksummedFrames();
      }
    }
    for (; !next.done; next = await nextChunk()) {
      const chunk = next.value as Buffer;
      onChunk?.(chunk);
      frames?.push(chunk);
      if (!codec) await walkTar(chunk);
      else for (const tar of codec.push(chunk)) await walkTar(tar);
      // Decompressed (or walked) and handled: nothing refers to the chunk any more.
      if (direct || (codec && options.releaseChunks)) releaseChunk(chunk);
    }
    if (codec) for (const tar of codec.end()) await walkTar(tar);
    walker.finish();
  } catch (error) {
    failure ??= stopped ?? asRefusal(error);
    // Stopped early: the source is not read further.
    if (!(source instanceof Readable)) chunks.return?.()?.catch(() => undefined);
    else if (!source.readableEnded) source.destroy();
  } finally {
    options.signal?.removeEventListener('abort', stop);
    codec?.close();
  }
  if (failure) {
    // A member's writer that was open when the reading failed is not finished: it is closed, not ended.
    current?.out?.destroy();
    throw failure;
  }
  return {
    entries,
    checksum: hashing ? treeChecksum(entries) : '',
    hashed: hashing,
    framesChecksummed: frames?.end() ?? false,
    sizeBytes,
    filesCount: entries.filter((e) => e.kind === 'file').length,
  };
}
