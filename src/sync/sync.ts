// syncUp / syncDown of README "Filesystems and sync", over a small transport (base URL and key) so the CLI,
// the ADK and tests share them. Archive bodies stream through undici both ways.
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import { chmod, lstat, mkdir, rename, rm, rmdir, symlink } from 'node:fs/promises';
import { setTimeout as sleep } from 'node:timers/promises';
import path from 'node:path';
import type { Readable } from 'node:stream';
import { request } from 'undici';
import { routes } from '../contract/routes.js';
import type { FileManifest, SystemFolderType } from '../contract/filesystems.js';
import {
  ARCHIVE_CONTENT_TYPE,
  DEFAULT_ARCHIVE_LIMITS,
  packedArchive,
  readArchive,
  type ArchiveLimits,
  type ArchiveSink,
  type ArchiveSummary,
  type MemberWriter,
  type PackEntry,
} from './archive.js';
import { cachedHash, defaultStateFile, loadState, prepareState, savePreparedState, saveState, toCachedEntry, walkDigest, type SyncState } from './state.js';
import { eachLimit, hashFile, loadIgnoreRules, treeChecksum, walkTree, type StatStamp, type TreeEntry } from './tree.js';

/** Where the archives live and the key that may read or write them. */
export interface SyncTransport {
  baseUrl: string;
  apiKey?: string;
  userAgent?: string;
}

export interface SyncProgress {
  phase: 'hash' | 'upload' | 'download' | 'apply';
  /** Bytes done in this phase (archive bytes for upload/download, content bytes for hash). */
  bytes: number;
  /** Total bytes of the phase when known. */
  total?: number;
}

export interface SyncOptions {
  /** The stat cache and base checksum; default under $XDG_CACHE_HOME/agentctl/sync/. */
  stateFile?: string;
  onProgress?: (progress: SyncProgress) => void;
  /** syncUp only: replace the remote content whatever it is (`If-Match: *`). */
  force?: boolean;
  /** zstd level of uploads (default 1, see DEFAULT_LEVEL). */
  level?: number;
  /** syncDown only: limits the downloaded archive must keep (default 1 GiB, 100,000 members). */
  limits?: ArchiveLimits;
  signal?: AbortSignal;
}

/** What a sync changed: counts of files and symlinks (directories are not counted), archive bytes moved. */
export interface SyncResult {
  files_changed: number;
  added: number;
  modified: number;
  deleted: number;
  /** Compressed archive bytes sent (syncUp) or received (syncDown); 0 when nothing moved. */
  bytes: number;
  /** The tree checksum both sides now have. */
  checksum: string;
}

/** A non-2xx answer of an archive endpoint, with the server's `{detail, code}`. */
export class SyncHttpError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    readonly detail: unknown,
  ) {
    super(typeof detail === 'string' ? detail : `HTTP ${status}: ${JSON.stringify(detail)}`);
  }
}

/**
 * The remote changed since this directory's base (412), or the directory has no base for a
 * remote that has content (428). Nothing local was changed.
 */
export class SyncConflictError extends SyncHttpError {}

const filesystemArchivePath = (fsId: string) => routes.uploadFilesystemArchive.path.replace(':filesystem_id', encodeURIComponent(fsId));
const filesystemFilesPath = (fsId: string) => routes.listFilesystemFiles.path.replace(':filesystem_id', encodeURIComponent(fsId));
const systemFolderArchivePath = (taskId: string, type: SystemFolderType) =>
  routes.uploadSystemFolderArchive.path.replace(':task_id', encodeURIComponent(taskId)).replace(':folder_type', encodeURIComponent(type));

/** Makes the filesystem `fsId` equal to `dir`: uploads only when the tree differs from the base. */
export function syncUp(transport: SyncTransport, fsId: string, dir: string, options: SyncOptions = {}): Promise<SyncResult> {
  return syncUpTo(transport, filesystemArchivePath(fsId), dir, options, filesystemFilesPath(fsId));
}

/** Makes `dir` equal to the filesystem `fsId`: nothing is downloaded when they already match. */
export function syncDown(transport: SyncTransport, fsId: string, dir: string, options: SyncOptions = {}): Promise<SyncResult> {
  return syncDownFrom(transport, filesystemArchivePath(fsId), dir, options, filesystemFilesPath(fsId));
}

export function syncUpSystemFolder(
  transport: SyncTransport,
  taskId: string,
  type: SystemFolderType,
  dir: string,
  options: SyncOptions = {},
): Promise<SyncResult> {
  return syncUpTo(transport, systemFolderArchivePath(taskId, type), dir, options);
}

export function syncDownSystemFolder(
  transport: SyncTransport,
  taskId: string,
  type: SystemFolderType,
  dir: string,
  options: SyncOptions = {},
): Promise<SyncResult> {
  return syncDownFrom(transport, systemFolderArchivePath(taskId, type), dir, options);
}

type LocalEntry = TreeEntry & { stamp?: StatStamp };

/**
 * Walks `dir`, taking unchanged files' hashes from the stat cache; the other files have none yet.
 * `unchanged` says the walk saw exactly the tree the state recorded (its digest): then every hash
 * holds and the tree is the state's base. With `trustDigest` such a walk's entries are left
 * unhashed: the caller (syncUp's clean re-check) reads nothing but the base.
 */
async function walkLocal(dir: string, state: SyncState, trustDigest = false): Promise<{ entries: PackEntry[]; unhashed: PackEntry[]; unchanged: boolean }> {
  const walked: PackEntry[] = await walkTree(dir, await loadIgnoreRules(dir));
  if (trustDigest && state.digest && walkDigest(walked, state.recordedAt) === state.digest) return { entries: walked, unhashed: [], unchanged: true };
  const unhashed = walked.filter((e) => e.kind === 'file' && !(e.sha256 = cachedHash(state, e.path, e.stamp!)));
  return { entries: walked, unhashed, unchanged: false };
}

/** Hashes the files the stat cache could not vouch for, a few at a time. */
async function hashFiles(dir: string, files: PackEntry[], onProgress?: SyncOptions['onProgress']): Promise<void> {
  const total = files.reduce((n, e) => n + e.size, 0);
  let done = 0;
  await eachLimit(files, 8, async (e) => {
    e.sha256 = await hashFile(path.join(dir, e.path), e.size);
    done += e.size;
    onProgress?.({ phase: 'hash', bytes: done, total });
  });
}

/** Walks and hashes `dir` (syncDown's view of the local tree). */
async function scanTree(
  dir: string,
  state: SyncState,
  onProgress?: SyncOptions['onProgress'],
): Promise<{ entries: LocalEntry[]; checksum: string; rehashed: number }> {
  const { entries, unhashed } = await walkLocal(dir, state);
  await hashFiles(dir, unhashed, onProgress);
  return { entries: entries as LocalEntry[], checksum: treeChecksum(entries as LocalEntry[]), rehashed: unhashed.length };
}

const isContent = (e: { kind: string }) => e.kind !== 'dir';

function countChanges(before: Map<string, { kind: string; mode: number; sha256: string }>, after: Map<string, { kind: string; mode: number; sha256: string }>) {
  let added = 0;
  let modified = 0;
  let deleted = 0;
  for (const [p, e] of after) {
    if (!isContent(e)) continue;
    const old = before.get(p);
    if (!old || !isContent(old)) added++;
    else if (old.kind !== e.kind || old.mode !== e.mode || old.sha256 !== e.sha256) modified++;
  }
  for (const [p, e] of before) if (isContent(e) && !after.get(p)) deleted++;
  return { files_changed: added + modified + deleted, added, modified, deleted };
}

function headers(transport: SyncTransport, extra: Record<string, string>): Record<string, string> {
  return {
    ...(transport.apiKey ? { authorization: `Bearer ${transport.apiKey}` } : {}),
    ...(transport.userAgent ? { 'user-agent': transport.userAgent } : {}),
    ...extra,
  };
}

async function failure(statusCode: number, body: Readable & { text(): Promise<string> }): Promise<SyncHttpError> {
  const text = await body.text().catch(() => '');
  let detail: unknown = text || `HTTP ${statusCode}`;
  let code = 'http_error';
  try {
    const parsed = JSON.parse(text) as { detail?: unknown; code?: string };
    detail = parsed.detail ?? detail;
    code = parsed.code ?? code;
  } catch {
    /* not JSON */
  }
  return statusCode === 412 || statusCode === 428 ? new SyncConflictError(statusCode, code, detail) : new SyncHttpError(statusCode, code, detail);
}

/** How often a download asks again after 429 or 503 (nothing has changed yet: a GET can be repeated). */
const DOWNLOAD_ATTEMPTS = 5;
const MAX_RETRY_WAIT_MS = 30_000;

/**
 * The archive GET, asked again when the server says "later" (429 from a key's rate limit, 503 while it
 * is busy): an agent's burst of workspace syncs waits for its turn instead of failing its handlers.
 */
async function getWithRetries(url: string, requestHeaders: Record<string, string>, signal: AbortSignal | undefined) {
  for (let attempt = 1; ; attempt++) {
    const response = await request(url, { method: 'GET', headers: requestHeaders, signal });
    if ((response.statusCode !== 429 && response.statusCode !== 503) || attempt >= DOWNLOAD_ATTEMPTS) return response;
    await response.body.dump();
    const retryAfter = Number(response.headers['retry-after']);
    const waitMs = Number.isFinite(retryAfter) && retryAfter >= 0 ? retryAfter * 1000 : 250 * 2 ** attempt;
    await sleep(Math.min(waitMs, MAX_RETRY_WAIT_MS), undefined, { signal });
  }
}

/**
 * One GET of the server's /healthz on the HTTP stack the archives take (undici's global
 * dispatcher): its parser (WebAssembly) compiles, its first-request code runs and a connection
 * opens now, for a process started ahead of its work (`Adk.warmUp`). Any failure is ignored:
 * the first sync connects as it would have.
 */
export async function warmUp(transport: SyncTransport, signal?: AbortSignal): Promise<void> {
  try {
    const response = await request(new URL('/healthz', transport.baseUrl), { method: 'GET', headers: headers(transport, {}), signal });
    await response.body.dump();
  } catch {
    /* the server is away: nothing to warm */
  }
}

const unquote = (etag: string | string[] | undefined) => (Array.isArray(etag) ? etag[0] : etag)?.replace(/^W\//, '').replace(/^"|"$/g, '');

const cacheOf = (entries: LocalEntry[]) => Object.fromEntries(entries.map((e) => [e.path, toCachedEntry(e)]));

type ManifestMap = Map<string, FileManifest['files'][number]>;

/**
 * The server's sha256 of each file of the archive it has as `checksum`, from its manifest
 * (`GET .../files`): undefined when that cannot be had (another upload came first, an error).
 */
async function serverHashes(
  transport: SyncTransport,
  manifestPath: string,
  checksum: string,
  signal: AbortSignal | undefined,
): Promise<ManifestMap | undefined> {
  try {
    const response = await request(new URL(manifestPath, transport.baseUrl), { method: 'GET', headers: headers(transport, {}), signal });
    if (response.statusCode !== 200) {
      await response.body.dump();
      return undefined;
    }
    const manifest = (await response.body.json()) as FileManifest;
    if (manifest.archive_checksum !== checksum || !Array.isArray(manifest.files)) return undefined;
    return new Map(manifest.files.map((f) => [f.path, f]));
  } catch (error) {
    if (signal?.aborted) throw error;
    return undefined;
  }
}

/**
 * Gives each of `files` the server's sha256 from its manifest where the manifest has the file as it is
 * here (size, mode); true when every one got one and the tree's hashes then make `checksum`. Otherwise
 * the hashes taken are dropped again (the caller hashes the files itself).
 */
function adoptServerHashes(files: TreeEntry[], manifest: ManifestMap, tree: TreeEntry[], checksum: string): boolean {
  for (const e of files) {
    const m = manifest.get(e.path);
    if (m && m.type === 'file' && m.size === e.size && m.mode === e.mode) e.sha256 = m.sha256;
  }
  if (files.every((e) => e.sha256) && treeChecksum(tree) === checksum) return true;
  for (const e of files) e.sha256 = '';
  return false;
}

/**
 * Gives each packed file without a sha256 the server's, when its manifest has the file as packed
 * (size, mode) and the hashes make the server's checksum; otherwise the files are hashed here. A
 * file gone since it was packed keeps no hash: the stat cache will not vouch for it.
 */
async function hashesAfterUpload(
  transport: SyncTransport,
  manifestPath: string | undefined,
  checksum: string,
  dir: string,
  packed: LocalEntry[],
  options: SyncOptions,
): Promise<void> {
  const missing = packed.filter((e) => e.kind === 'file' && !e.sha256);
  if (!missing.length) return;
  const manifest = manifestPath ? await serverHashes(transport, manifestPath, checksum, options.signal) : undefined;
  if (manifest && adoptServerHashes(missing, manifest, packed, checksum)) return;
  await eachLimit(missing, 8, async (e) => {
    e.sha256 = await hashFile(path.join(dir, e.path), e.size).catch(() => '');
  });
}

async function syncUpTo(transport: SyncTransport, archivePath: string, dir: string, options: SyncOptions, manifestPath?: string): Promise<SyncResult> {
  const url = new URL(archivePath, transport.baseUrl).toString();
  const stateFile = options.stateFile ?? defaultStateFile(url, dir);
  const state = await loadState(stateFile);
  const startedAt = Date.now();
  const { entries, unhashed, unchanged } = await walkLocal(dir, state, Boolean(state.base) && !options.force);
  // The clean re-check: the walk is the recorded tree, whose checksum is the base.
  if (unchanged && state.base) return { files_changed: 0, added: 0, modified: 0, deleted: 0, bytes: 0, checksum: state.base };
  // With a base, the tree may equal it: hash what the cache cannot vouch for, and upload only on a
  // difference. Without one (or forced) the upload happens anyway: packing hashes as it reads, or
  // (a filesystem, whose manifest can be read) not at all, and the server's hashes of the bytes it
  // took are recorded (see hashesAfterUpload): the server hashes every member anyway, and a second
  // sha256 of the content here cost the client about a third of its CPU (200 MiB: 181 ms of 577 ms).
  if (state.base && !options.force) {
    await hashFiles(dir, unhashed, options.onProgress);
    const checksum = treeChecksum(entries as LocalEntry[]);
    if (checksum === state.base) {
      if (unhashed.length) await saveState(stateFile, { base: state.base, recordedAt: startedAt, entries: cacheOf(entries as LocalEntry[]) });
      return { files_changed: 0, added: 0, modified: 0, deleted: 0, bytes: 0, checksum };
    }
  }

  // Small uploads hash while packing (see SERVER_HASHES_MIN); so do all when the hashing was done above.
  const unhashedBytes = unhashed.reduce((n, e) => n + (e.sha256 ? 0 : e.size), 0);
  const serverHashed =
    unhashedBytes >= SERVER_HASHES_MIN.uploadContentBytes && unhashedBytes >= SERVER_HASHES_MIN.uploadBytesPerEntry * entries.length ? manifestPath : undefined;
  let sent = 0;
  let archiveError: Error | undefined;
  // What was archived: sizes, modes and hashes as read, files gone since the walk left out.
  const archived = () => (entries as (LocalEntry & { vanished?: boolean })[]).filter((e) => !e.vanished);
  const changesTo = (packed: LocalEntry[]) => countChanges(new Map(Object.entries(state.entries)), new Map(packed.map((e) => [e.path, e])));
  const prepareUpload = () => {
    const packed = archived();
    return { counts: changesTo(packed), state: prepareState(packed, startedAt) };
  };
  let prepared: ReturnType<typeof prepareUpload> | undefined;
  // The archive goes to undici as an async iterable, the consumer packedArchive's reused output
  // buffers need (see there). undici ends the iteration (and so the packing, its files closed) when
  // the request ends first: an early 412, a dropped connection.
  async function* body(): AsyncGenerator<Buffer> {
    try {
      for await (const piece of packedArchive(dir, entries, options.level, true, !serverHashed)) {
        sent += piece.length;
        options.onProgress?.({ phase: 'upload', bytes: sent });
        yield piece;
      }
      // Every file is hashed now: the state is made ready while the server finishes (its checks of
      // the last bytes, its blob and database writes), once undici has sent the request's end. Made
      // after the answer, the state of 50,000 files cost 110-140 ms of CPU there; now 11-14 ms are left.
      if (!serverHashed)
        setImmediate(() => {
          try {
            prepared ??= prepareUpload();
          } catch {
            /* made again after the answer, where a failure is the sync's */
          }
        });
    } catch (error) {
      archiveError = error as Error;
      throw error;
    }
  }
  const ifMatch = options.force ? '*' : state.base ? `"${state.base}"` : undefined;
  const response = await request(url, {
    method: 'PUT',
    headers: headers(transport, { 'content-type': ARCHIVE_CONTENT_TYPE, ...(ifMatch ? { 'if-match': ifMatch } : {}) }),
    // undici's request takes an async iterable (writeIterable); its types name only Readable.
    body: body() as AsyncIterable<Buffer> as unknown as Readable,
    signal: options.signal,
  }).catch((error: unknown) => {
    throw archiveError ?? error;
  });
  if (response.statusCode >= 300) throw await failure(response.statusCode, response.body);
  const accepted = (await response.body.json()) as { archive_checksum: string };
  if (!serverHashed) {
    const ready = prepared ?? prepareUpload();
    // The server's checksum is the base: if a file changed while it was packed, the next syncUp sees it.
    await savePreparedState(stateFile, accepted.archive_checksum, ready.state);
    return { ...ready.counts, bytes: sent, checksum: accepted.archive_checksum };
  }
  const packed = archived();
  await hashesAfterUpload(transport, serverHashed, accepted.archive_checksum, dir, packed, options);
  const counts = changesTo(packed);
  // The server's checksum is the base: if a file changed while it was packed, the next syncUp sees it.
  await saveState(stateFile, { base: accepted.archive_checksum, recordedAt: startedAt, entries: cacheOf(packed) });
  return { ...counts, bytes: sent, checksum: accepted.archive_checksum };
}

/**
 * Below these sizes a sync hashes the files itself rather than ask for the server's manifest: a
 * second request costs about what hashing a few MiB does, and counts against the key's rate limit
 * (a burst of small syncs on one runtime key stays at one request each). The manifest's own cost
 * grows with its entries (JSON on both sides): an upload takes it only with at least
 * uploadBytesPerEntry to hash per entry of the tree: for 50,000 files of 4 KiB the manifest gained
 * nothing (syncUp with force, client and server in one process, medians of 3 alternating runs, twice:
 * 4.3 s through the manifest against 4.0 s hashing, then 3.2 s against 3.3 s).
 */
export const SERVER_HASHES_MIN = { uploadContentBytes: 4 * 1024 * 1024, uploadBytesPerEntry: 64 * 1024, downloadArchiveBytes: 1024 * 1024 };

/**
 * Gives each file of a download the server's sha256 when the zstd frames were all checksummed (so
 * the content is what the server compressed) and the manifest has the file with the same size and
 * mode, and the hashes make the server's checksum; otherwise hashes the staged files. Then the
 * summary's checksum is the tree's.
 */
async function hashesAfterDownload(
  summary: ArchiveSummary,
  manifest: Promise<ManifestMap | undefined>,
  staging: string,
  remoteChecksum: string,
): Promise<void> {
  const files = summary.entries.filter((e) => e.kind === 'file');
  const byPath = summary.framesChecksummed ? await manifest : undefined;
  if (byPath && adoptServerHashes(files, byPath, summary.entries, remoteChecksum)) {
    summary.checksum = remoteChecksum;
    return;
  }
  await eachLimit(files, 8, async (e) => {
    e.sha256 = await hashFile(path.join(staging, e.path), e.size);
  });
  summary.checksum = treeChecksum(summary.entries);
}

async function syncDownFrom(transport: SyncTransport, archivePath: string, dir: string, options: SyncOptions, manifestPath?: string): Promise<SyncResult> {
  const url = new URL(archivePath, transport.baseUrl).toString();
  const stateFile = options.stateFile ?? defaultStateFile(url, dir);
  const state = await loadState(stateFile);
  await mkdir(dir, { recursive: true });
  const startedAt = Date.now();
  const local = await scanTree(dir, state, options.onProgress);
  const response = await getWithRetries(url, headers(transport, { 'if-none-match': `"${local.checksum}"` }), options.signal);
  if (response.statusCode === 304) {
    await response.body.dump();
    await saveState(stateFile, {
      base: local.checksum,
      recordedAt: startedAt,
      entries: Object.fromEntries(local.entries.map((e) => [e.path, toCachedEntry(e)])),
    });
    return { files_changed: 0, added: 0, modified: 0, deleted: 0, bytes: 0, checksum: local.checksum };
  }
  if (response.statusCode >= 300) throw await failure(response.statusCode, response.body);
  const remoteChecksum = unquote(response.headers.etag);
  const total = Number(response.headers['content-length']) || undefined;

  const absolute = path.resolve(dir);
  const staging = path.join(path.dirname(absolute), `.${path.basename(absolute)}.agentctl-staging-${randomBytes(6).toString('hex')}`);
  await mkdir(staging, { mode: 0o700 });
  try {
    let received = 0;
    const onChunk = (chunk: Buffer) => {
      received += chunk.length;
      options.onProgress?.({ phase: 'download', bytes: received, total });
    };
    // Read straight from the response: its chunks need no other stream on their way.
    // A large filesystem's download takes the server's per-file hashes (its manifest, asked for
    // meanwhile) when zstd checked every frame's content checksum: the members are not hashed here.
    // On the sync bench's 200 MiB tree that hashing was 159 ms of the client's 547 ms sampled.
    const manifest =
      manifestPath && remoteChecksum && (total ?? 0) >= SERVER_HASHES_MIN.downloadArchiveBytes
        ? serverHashes(transport, manifestPath, remoteChecksum, options.signal)
        : undefined;
    manifest?.catch(() => undefined); // observed after the reading
    const summary = await readArchive(response.body, options.limits ?? DEFAULT_ARCHIVE_LIMITS, stagingSink(staging), {
      onChunk,
      trustFrameChecksums: manifest !== undefined,
      // undici's body chunks are this reading's alone (onChunk only counts them).
      releaseChunks: true,
    });
    if (!summary.hashed) await hashesAfterDownload(summary, manifest!, staging, remoteChecksum!);
    if (remoteChecksum && summary.checksum !== remoteChecksum) {
      throw new SyncHttpError(502, 'checksum_mismatch', `The downloaded archive's checksum ${summary.checksum} is not the server's ${remoteChecksum}`);
    }
    options.onProgress?.({ phase: 'apply', bytes: received, total });
    const localMap = new Map(local.entries.map((e) => [e.path, e]));
    const remoteMap = new Map(summary.entries.map((e) => [e.path, e]));
    await applyStaged(absolute, staging, summary.entries, local.entries, localMap);
    const counts = countChanges(localMap, remoteMap);
    // Stamps of what is now in place: unchanged files keep theirs, new ones are stat'ed afresh.
    const entries: SyncState['entries'] = {};
    await eachLimit(summary.entries, 16, async (e) => {
      const before = localMap.get(e.path);
      const same = before && before.kind === e.kind && before.sha256 === e.sha256 && before.mode === e.mode;
      let stamp = same ? before.stamp : undefined;
      if (!same && e.kind === 'file') {
        const st = await lstat(path.join(absolute, e.path));
        stamp = { size: st.size, mtimeMs: st.mtimeMs, ctimeMs: st.ctimeMs, ino: st.ino };
      }
      entries[e.path] = toCachedEntry({ ...e, stamp });
    });
    await saveState(stateFile, { base: summary.checksum, recordedAt: Date.now(), entries });
    return { ...counts, bytes: received, checksum: summary.checksum };
  } finally {
    await rm(staging, { recursive: true, force: true });
  }
}

/**
 * Where syncDown's readArchive puts members: under `staging`, with their final modes, so a staged
 * directory can be moved into place whole. A file is written through its descriptor on this thread
 * (open, a write per piece, close: no stream or promise per member), so each piece of content is
 * written before the reader reuses its buffer.
 */
function stagingSink(staging: string): ArchiveSink {
  // Directories made so far: most members share their parent with the one before.
  const made = new Set<string>([staging]);
  const parentOf = async (p: string) => {
    const parent = path.dirname(p);
    if (!made.has(parent)) {
      await mkdir(parent, { recursive: true });
      made.add(parent);
    }
    return p;
  };
  const exactMode = async (p: string, mode: number) => {
    if ((mode & umask()) !== 0) await chmod(p, mode);
  };
  return {
    async dir(entry) {
      const p = await parentOf(path.join(staging, entry.path));
      await mkdir(p, { mode: entry.mode }).catch((error: NodeJS.ErrnoException) => {
        if (error.code !== 'EEXIST') throw error;
        return chmod(p, entry.mode);
      });
      await exactMode(p, entry.mode);
      made.add(p);
    },
    async file(entry): Promise<MemberWriter> {
      const fd = fs.openSync(await parentOf(path.join(staging, entry.path)), 'wx', entry.mode);
      let open = true;
      const close = () => {
        if (!open) return;
        open = false;
        fs.closeSync(fd);
      };
      return {
        write(data) {
          for (let at = 0; at < data.length; ) at += fs.writeSync(fd, data, at, data.length - at);
        },
        end() {
          try {
            if ((entry.mode & umask()) !== 0) fs.fchmodSync(fd, entry.mode);
          } finally {
            close();
          }
        },
        destroy() {
          try {
            close();
          } catch {
            /* the reading already failed: that is the error */
          }
        },
      };
    },
    async symlink(entry) {
      await symlink(entry.linkpath!, await parentOf(path.join(staging, entry.path)));
    },
  };
}

let processUmask: number | undefined;
/** The process's umask, read once (reading it sets it, briefly). */
const umask = () => (processUmask ??= process.umask());

/** Removes whatever is at `p` unless it is a real directory, then makes sure one is there. */
async function ensureRealDir(p: string, mode: number): Promise<void> {
  const st = await lstat(p).catch(() => undefined);
  if (st && !st.isDirectory()) await rm(p, { recursive: true, force: true });
  if (!st?.isDirectory()) await mkdir(p, { mode });
  if (st?.isDirectory() && (st.mode & 0o7777) !== mode) await chmod(p, mode);
}

/** Makes every parent of `rel` a real directory; `checked` remembers the ones already made sure of. */
async function ensureParents(root: string, rel: string, checked: Set<string>): Promise<void> {
  const parts = rel.split('/');
  for (let i = 1; i < parts.length; i++) {
    const dir = parts.slice(0, i).join('/');
    if (checked.has(dir)) continue;
    const st = await lstat(path.join(root, dir)).catch(() => undefined);
    if (!st?.isDirectory()) await ensureRealDir(path.join(root, dir), 0o755);
    checked.add(dir);
  }
}

/**
 * Renames changed members from staging into `root` and removes local entries the remote lacks. A
 * remote directory with nothing of the local tree at or below it (and nothing on disk there) is
 * moved in whole.
 */
async function applyStaged(root: string, staging: string, remote: TreeEntry[], local: TreeEntry[], localMap: Map<string, TreeEntry>): Promise<void> {
  const remotePaths = new Set(remote.map((e) => e.path));
  const checked = new Set<string>();
  // Deletions first (deepest first), so a path that changes kind is free for its new entry.
  for (const e of [...local].reverse()) {
    if (remotePaths.has(e.path)) continue;
    const p = path.join(root, e.path);
    if (e.kind === 'dir')
      await rmdir(p).catch(() => undefined); // keeps directories holding ignored files
    else await rm(p, { force: true });
  }
  // Every local path and its ancestors: a remote directory outside this set is new here.
  const occupied = new Set<string>();
  for (const e of local) {
    for (let i = e.path.indexOf('/'); i >= 0; i = e.path.indexOf('/', i + 1)) occupied.add(e.path.slice(0, i));
    occupied.add(e.path);
  }
  const movedWhole = new Set<string>();
  const insideMoved = (p: string) => {
    for (let i = p.indexOf('/'); i >= 0; i = p.indexOf('/', i + 1)) if (movedWhole.has(p.slice(0, i))) return true;
    return false;
  };
  for (const e of remote) {
    // Byte order puts `a-b` between `a` and `a/x`: what lies below a moved directory is not contiguous.
    if (movedWhole.size && insideMoved(e.path)) continue;
    const dest = path.join(root, e.path);
    const before = localMap.get(e.path);
    if (e.kind === 'dir') {
      await ensureParents(root, e.path, checked);
      if (!occupied.has(e.path) && !(await lstat(dest).catch(() => undefined))) {
        await rename(path.join(staging, e.path), dest);
        movedWhole.add(e.path);
        continue;
      }
      await ensureRealDir(dest, e.mode);
      checked.add(e.path);
      continue;
    }
    if (before && before.kind === e.kind && before.sha256 === e.sha256) {
      if (before.mode !== e.mode && e.kind === 'file') await chmod(dest, e.mode);
      continue;
    }
    await ensureParents(root, e.path, checked);
    // rename replaces a file or link in place; only a directory in the way must go first.
    if (before?.kind === 'dir') await rm(dest, { recursive: true, force: true });
    await rename(path.join(staging, e.path), dest).catch(async (error: NodeJS.ErrnoException) => {
      if (error.code !== 'EISDIR' && error.code !== 'ENOTEMPTY' && error.code !== 'EEXIST') throw error;
      await rm(dest, { recursive: true, force: true });
      await rename(path.join(staging, e.path), dest);
    });
  }
}
