// Filesystems and system folders (README "Filesystems and sync"): rows, access, archive upload and download.
// Archives live in the blob store; a row names its current archive and manifest blobs.
import { createHash, randomBytes } from 'node:crypto';
import { createWriteStream } from 'node:fs';
import { mkdir, rm, symlink, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { finished, PassThrough, type Readable, Writable } from 'node:stream';
import type { Kysely, Selectable } from 'kysely';
import type { CreateFilesystemRequest, FileManifest, Filesystem, ManifestEntry, SystemFolderType } from '../../contract/filesystems.js';
import { ArchiveRejected, emptyArchive, readArchive, type ArchiveLimits, type ArchiveSummary } from '../../sync/archive.js';
import { EMPTY_TREE_CHECKSUM } from '../../sync/tree.js';
import type { Database, Db, FilesystemsTable } from '../store/db.js';
import { newId } from '../store/ids.js';
import { iso } from '../store/mappers.js';
import {
  type DomainError,
  badRequest,
  conflict,
  forbidden,
  invalid,
  missing,
  notFound,
  preconditionRequired,
  stale,
  tooLarge,
  unprocessable,
  named,
  namedVersion,
} from './errors.js';
import type { Permissions } from '../auth/policy.js';
import { BlobNotFound, type BlobStore } from '../blobs/index.js';
import { StagingFile, type StagedBytes } from '../blobs/staging.js';
import { inCallerOrg, namespaceBySlug, taskById } from './lookup.js';
import { pageOffset } from './paging.js';

type Executor = Db | Kysely<Database>;
type FsRow = Selectable<FilesystemsTable>;

export const toFilesystem = (r: FsRow): Filesystem => ({
  id: r.id,
  namespace_id: r.namespace_id,
  project_id: r.project_id,
  archive_checksum: r.archive_checksum,
  size_bytes: Number(r.size_bytes),
  files_count: r.files_count,
  created_at: iso(r.created_at)!,
  updated_at: iso(r.updated_at)!,
});

/**
 * Who may reach a filesystem (README "Filesystems and sync"): through its project (read to read, write to
 * write); else through an agent whose tasks use it (read; run to write) or whose versions have it
 * as source (read; write to write); else its creating key; namespace admins always. Unknown and
 * undiscoverable filesystems are one 404.
 */
export async function filesystemForAccess(db: Executor, perms: Permissions, fsId: string, need: 'read' | 'write'): Promise<FsRow> {
  const row = await db
    .selectFrom('filesystems')
    .selectAll('filesystems')
    .where('filesystems.id', '=', fsId)
    .where(inCallerOrg(perms, 'filesystems.namespace_id'))
    .executeTakeFirst();
  const describe = `Filesystem ${fsId}`;
  if (!row) throw notFound('Filesystem', fsId);
  if (row.project_id) {
    perms.require(need, { type: 'project', id: row.project_id, namespaceId: row.namespace_id }, describe);
    return row;
  }
  if (perms.can('admin', { type: 'namespace', id: row.namespace_id })) return row;
  if (row.created_by_key_id && row.created_by_key_id === perms.actor.keyId) return row;
  const [taskAgents, versionAgents] = await Promise.all([
    db.selectFrom('tasks').select('agent_id').distinct().where('filesystem_id', '=', fsId).execute(),
    db.selectFrom('versions').select('agent_id').distinct().where('source_filesystem_id', '=', fsId).execute(),
  ]);
  const agent = (id: string) => ({ type: 'agent', id, namespaceId: row.namespace_id }) as const;
  if (taskAgents.some((a) => perms.can(need === 'read' ? 'read' : 'run', agent(a.agent_id)))) return row;
  if (versionAgents.some((a) => perms.can(need === 'read' ? 'read' : 'write', agent(a.agent_id)))) return row;
  const discoverable = [...taskAgents, ...versionAgents].some((a) => perms.can('discover', agent(a.agent_id)));
  if (discoverable) throw forbidden(`This API key may not ${need} ${describe}`);
  throw notFound('Filesystem', fsId);
}

/** `POST /filesystems`: in a project (write on it), or bare in a namespace (its admin, or a key with write on one of its agents). */
export async function createFilesystem(db: Db, perms: Permissions, req: CreateFilesystemRequest): Promise<Filesystem> {
  if (!req.project_id === !req.namespace) throw invalid(['body', req.project_id ? 'namespace' : 'project_id'], 'Give exactly one of project_id and namespace');
  let namespaceId: string;
  if (req.project_id) {
    const project = await db
      .selectFrom('projects')
      .select(['projects.id', 'projects.namespace_id'])
      .where('projects.id', '=', req.project_id)
      .where(inCallerOrg(perms, 'projects.namespace_id'))
      .executeTakeFirst();
    if (!project) throw notFound('Project', req.project_id);
    perms.require('write', { type: 'project', id: project.id, namespaceId: project.namespace_id }, `Project ${project.id}`);
    namespaceId = project.namespace_id;
  } else {
    const ns = await namespaceBySlug(db, perms, req.namespace!);
    if (!perms.can('admin', { type: 'namespace', id: ns.id })) {
      const writable = perms.visible('agent', 'write');
      const ids = writable.all ? [] : writable.ids;
      const agent = ids.length
        ? await db.selectFrom('agents').select('id').where('namespace_id', '=', ns.id).where('id', 'in', ids).executeTakeFirst()
        : undefined;
      if (!agent) perms.require('admin', { type: 'namespace', id: ns.id }, `Namespace ${req.namespace}`);
    }
    namespaceId = ns.id;
  }
  const row = await db
    .insertInto('filesystems')
    .values({ id: newId('filesystem'), namespace_id: namespaceId, project_id: req.project_id ?? null, created_by_key_id: perms.actor.keyId || null })
    .returningAll()
    .executeTakeFirstOrThrow();
  return toFilesystem(row);
}

export async function getFilesystem(db: Db, perms: Permissions, fsId: string): Promise<Filesystem> {
  return toFilesystem(await filesystemForAccess(db, perms, fsId, 'read'));
}

export interface ListFilesystemsQuery {
  project_id?: string;
  namespace?: string;
  limit: number;
  page_number: number;
  order_direction: 'asc' | 'desc';
}

/** `GET /filesystems?project_id=` (read on the project) or `?namespace=` (its bare filesystems: all for its admins, else the key's own). */
export async function listFilesystems(db: Db, perms: Permissions, query: ListFilesystemsQuery): Promise<{ filesystems: Filesystem[]; total: number }> {
  if (!query.project_id === !query.namespace)
    throw invalid(['query', query.project_id ? 'namespace' : 'project_id'], 'Give exactly one of project_id and namespace');
  let select = db.selectFrom('filesystems');
  if (query.project_id) {
    const project = await db
      .selectFrom('projects')
      .select(['projects.id', 'projects.namespace_id'])
      .where('projects.id', '=', query.project_id)
      .where(inCallerOrg(perms, 'projects.namespace_id'))
      .executeTakeFirst();
    if (!project) throw notFound('Project', query.project_id);
    perms.require('read', { type: 'project', id: project.id, namespaceId: project.namespace_id }, `Project ${project.id}`);
    select = select.where('project_id', '=', project.id);
  } else {
    const ns = await namespaceBySlug(db, perms, query.namespace!);
    select = select.where('namespace_id', '=', ns.id).where('project_id', 'is', null);
    if (!perms.can('admin', { type: 'namespace', id: ns.id })) select = select.where('created_by_key_id', '=', perms.actor.keyId);
  }
  const [rows, count] = await Promise.all([
    select.selectAll().orderBy('created_at', query.order_direction).orderBy('id', query.order_direction).limit(query.limit).offset(pageOffset(query)).execute(),
    select.select((eb) => eb.fn.countAll<string>().as('n')).executeTakeFirstOrThrow(),
  ]);
  return { filesystems: rows.map(toFilesystem), total: Number(count.n) };
}

/** `DELETE /filesystems/{id}`: only one no task, version or system folder names; its blobs go with the next sweep. */
export async function deleteFilesystem(db: Db, perms: Permissions, fsId: string): Promise<{ id: string; message: string }> {
  return db.transaction().execute(async (trx) => {
    await filesystemForAccess(trx, perms, fsId, 'write');
    await trx.selectFrom('filesystems').select('id').where('id', '=', fsId).forUpdate().executeTakeFirst();
    const [task, version, folder] = await Promise.all([
      trx.selectFrom('tasks').select(['id', 'name']).where('filesystem_id', '=', fsId).executeTakeFirst(),
      trx.selectFrom('versions').select(['id', 'number']).where('source_filesystem_id', '=', fsId).executeTakeFirst(),
      trx.selectFrom('task_system_folders').select('task_id').where('filesystem_id', '=', fsId).executeTakeFirst(),
    ]);
    const user = task
      ? `task ${named(task.name, task.id)}`
      : version
        ? `version ${namedVersion(version)}`
        : folder
          ? `a system folder of task ${folder.task_id}`
          : undefined;
    if (user) throw conflict('filesystem_in_use', `Filesystem ${fsId} is used by ${user}`);
    await trx.deleteFrom('filesystems').where('id', '=', fsId).execute();
    return { id: fsId, message: `Filesystem ${fsId} deleted` };
  });
}

// ---- archives --------------------------------------------------------------------------------

const currentChecksum = (row: FsRow) => row.archive_checksum ?? EMPTY_TREE_CHECKSUM;

/** The current archive, or only its checksum when the caller already has it. */
export type ArchiveDownload = { checksum: string; notModified: true } | { checksum: string; notModified: false; bytes: number; body: Readable | Buffer };

/**
 * The current archive, or `notModified` when `known` (the checksums the caller has, or `*`) names
 * it. A filesystem without content serves an empty archive.
 */
/**
 * A blob the row names, read from the store. A row can outlive its blob (deleted by hand, a store
 * restored without it): that is the archive being gone, said as such, not a fault of the server.
 */
async function storedBlob(blobs: BlobStore, row: FsRow, key: string): Promise<Readable> {
  try {
    return await blobs.get(key);
  } catch (error) {
    if (!(error instanceof BlobNotFound)) throw error;
    throw missing(
      `The archive of filesystem ${row.id} (checksum ${currentChecksum(row)}) is gone from the blob store, so its content cannot be read; push the content again with If-Match: * to replace it`,
      'archive_missing',
    );
  }
}

export async function downloadArchive(blobs: BlobStore, row: FsRow, known: readonly string[]): Promise<ArchiveDownload> {
  const checksum = currentChecksum(row);
  if (known.includes(checksum) || known.includes('*')) return { checksum, notModified: true };
  if (!row.blob_key) {
    const body = emptyArchive();
    return { checksum, notModified: false, bytes: body.length, body };
  }
  return { checksum, notModified: false, bytes: Number(row.archive_bytes), body: await storedBlob(blobs, row, row.blob_key) };
}

/**
 * Checks the base an upload names (its If-Match) against the row: required once there is
 * content, and it must be current.
 */
function checkBase(row: FsRow, base: readonly string[]): void {
  if (base.includes('*')) return;
  if (base.length === 0) {
    if (row.archive_checksum) {
      throw preconditionRequired(
        `Filesystem ${row.id} has content: send If-Match with the checksum your change is based on (current: ${row.archive_checksum})`,
        row.archive_checksum,
      );
    }
    return;
  }
  if (!base.includes(currentChecksum(row))) {
    throw stale(
      'stale_base',
      `Filesystem ${row.id} changed since your base ${base[0]}: its current checksum is ${currentChecksum(row)}; pull it, then push again`,
      currentChecksum(row),
    );
  }
}

export interface UploadLimits extends ArchiveLimits {
  /** Wall time for receiving and checking one upload (the request timeout): past it the upload is refused. */
  maxMs: number;
}

/** Compressed bytes an upload may have: the content limit plus tar's per-member overhead. */
const maxCompressedBytes = (limits: ArchiveLimits) => limits.maxBytes + (limits.maxFiles + 4) * 1536 + 1024 * 1024;

/**
 * The request body as readArchive's source, read once: each chunk is counted against `cap` and
 * copied into the staging file before the reader is given it, and nothing is kept past that (see
 * StagingFile). The body flows while the reader waits for a chunk; it is paused while a chunk waits
 * for the reader or the staging file waits for the disk.
 */
class StagedBody implements AsyncIterableIterator<Buffer> {
  received = 0;
  /** Chunks staged but not yet taken: rarely more than one, since the body is paused once one waits. */
  private readonly queue: Buffer[] = [];
  private ended = false;
  private failure: unknown;
  private staging: Promise<void> | undefined;
  private waiter: { resolve: (result: IteratorResult<Buffer>) => void; reject: (error: unknown) => void } | undefined;
  private detached = false;
  /** Stops watching the body for its failure (node:stream finished). */
  private readonly unwatch: () => void;

  constructor(
    private readonly body: Readable,
    private readonly file: StagingFile,
    private readonly cap: number,
    /** The body failed (the client went away): this, not the stream's error, is the failure. */
    private readonly onAborted: () => unknown,
  ) {
    body.on('data', this.onData);
    body.once('end', this.onEnd);
    // finished(), not 'error'/'aborted' listeners: a client that went away while the request was
    // authorized and its file staged (before these listeners) left a destroyed body that emits nothing
    // more, and the upload waited for its deadline with its staging file on disk.
    this.unwatch = finished(body, { writable: false }, (error) => error && this.onError());
  }

  [Symbol.asyncIterator](): this {
    return this;
  }

  next(): Promise<IteratorResult<Buffer>> {
    if (this.queue.length) {
      const value = this.queue.shift()!;
      this.flow();
      return Promise.resolve({ value, done: false });
    }
    if (this.failure) return Promise.reject(this.failure);
    if (this.ended && !this.staging) return Promise.resolve({ value: undefined, done: true });
    return new Promise((resolve, reject) => {
      this.waiter = { resolve, reject };
      this.flow();
    });
  }

  /** The reader is done (it refused the archive): the body is no longer taken. */
  async return(): Promise<IteratorResult<Buffer>> {
    this.detach();
    return { value: undefined, done: true };
  }

  /** Stops taking the body; what is left of it is read and dropped, so an answer reaches the client. */
  detach(): void {
    if (this.detached) return;
    this.detached = true;
    this.queue.length = 0;
    this.body.off('data', this.onData);
    this.body.off('end', this.onEnd);
    this.unwatch();
    if (!this.body.readableEnded) this.body.resume();
  }

  private readonly onData = (chunk: Buffer) => {
    if (this.failure || this.detached) return;
    this.received += chunk.length;
    if (this.received > this.cap) return this.fail(new ArchiveRejected(413, 'archive_too_large', `The upload is larger than ${this.cap} bytes`));
    let staging: Promise<void> | undefined;
    try {
      staging = this.file.write(chunk);
    } catch (error) {
      return this.fail(error);
    }
    if (staging) {
      // The disk is behind: nothing more is taken until this chunk is in the file.
      this.body.pause();
      this.staging = staging.then(
        () => {
          this.staging = undefined;
          this.deliver(chunk);
        },
        (error: unknown) => {
          this.staging = undefined;
          this.fail(error);
        },
      );
      return;
    }
    this.deliver(chunk);
  };

  private readonly onEnd = () => {
    this.ended = true;
    if (!this.staging && this.waiter && !this.queue.length) this.settle((w) => w.resolve({ value: undefined, done: true }));
  };

  private readonly onError = () => this.fail(this.onAborted());

  private deliver(chunk: Buffer): void {
    if (this.failure || this.detached) return;
    if (this.waiter) this.settle((w) => w.resolve({ value: chunk, done: false }));
    else {
      this.queue.push(chunk);
      this.body.pause();
    }
    if (this.ended) this.onEnd();
  }

  private fail(error: unknown): void {
    this.failure ??= error;
    this.queue.length = 0;
    if (this.waiter) this.settle((w) => w.reject(this.failure));
  }

  private settle(how: (waiter: NonNullable<StagedBody['waiter']>) => void): void {
    const waiter = this.waiter!;
    this.waiter = undefined;
    how(waiter);
  }

  /** Lets the body flow when the reader waits and nothing is staged or queued. */
  private flow(): void {
    if (!this.detached && !this.failure && !this.staging && !this.queue.length && this.waiter && this.body.isPaused()) this.body.resume();
  }
}

/**
 * Receives an archive into the blob store's staging area (never whole in memory) while validating
 * every member as it arrives, stores the archive and its manifest as blobs, then makes them current
 * in one transaction if the base still matches. Any failure leaves the filesystem as it was.
 */
export async function uploadArchive(
  db: Db,
  blobs: BlobStore,
  fsId: string,
  body: Readable,
  base: readonly string[],
  limits: UploadLimits,
): Promise<Filesystem> {
  const before = await db.selectFrom('filesystems').selectAll().where('id', '=', fsId).executeTakeFirstOrThrow();
  // Refuse a stale or unconditional upload before reading a byte of it.
  checkBase(before, base);
  const staged = path.join(blobs.stagingDir, `upload-${randomBytes(8).toString('hex')}`);
  const manifestFile = `${staged}.manifest`;
  const file = await StagingFile.create(staged);
  try {
    let aborted: DomainError | undefined;
    // The client went away mid-upload: nothing to answer, nothing changed.
    const source = new StagedBody(
      body,
      file,
      maxCompressedBytes(limits),
      () => (aborted ??= badRequest('upload_aborted', 'The upload ended before its last byte')),
    );
    // Whatever the archive makes the reader do, one upload's reading ends within the request timeout.
    const deadline = new AbortController();
    const timer = setTimeout(
      () =>
        deadline.abort(
          new ArchiveRejected(413, 'archive_too_large', `The archive was not received and checked within ${limits.maxMs} ms (AGENTCTL_REQUEST_TIMEOUT_MS)`),
        ),
      limits.maxMs,
    );
    let summary: ArchiveSummary;
    let staging: StagedBytes;
    try {
      // The reader only checks and hashes: its decompressed pieces need not be kept.
      summary = await readArchive(source, limits, undefined, { signal: deadline.signal, releaseChunks: true });
      staging = await file.finish();
    } catch (error) {
      throw refusalOf(aborted ?? error);
    } finally {
      clearTimeout(timer);
      // Refused part-way: the rest of the body is read and dropped, so the answer reaches the client.
      source.detach();
    }
    const archiveKey = archiveBlobKey(summary.checksum, staging.size);
    const manifest = JSON.stringify(summary.entries.map(toManifestEntry));
    const manifestKey = createHash('sha256').update(manifest).digest('hex');
    await writeFile(manifestFile, manifest);
    // Blobs first, then the row that names them: a crash in between leaves only unreferenced blobs.
    await blobs.putFile(archiveKey, staged);
    await blobs.putFile(manifestKey, manifestFile);
    return await db.transaction().execute(async (trx) => {
      const row = await trx.selectFrom('filesystems').selectAll().where('id', '=', fsId).forUpdate().executeTakeFirst();
      if (!row) throw notFound('Filesystem', fsId);
      checkBase(row, base);
      // The archive this replaces is kept for the task's rehearsals by a trigger (schema 026_filesystem_history).
      const updated = await trx
        .updateTable('filesystems')
        .set({
          archive_checksum: summary.checksum,
          size_bytes: summary.sizeBytes,
          files_count: summary.filesCount,
          archive_bytes: staging.size,
          blob_key: archiveKey,
          manifest_key: manifestKey,
          updated_at: new Date(),
        })
        .where('id', '=', fsId)
        .returningAll()
        .executeTakeFirstOrThrow();
      return toFilesystem(updated);
    });
  } catch (error) {
    throw refusalOf(error);
  } finally {
    // Closed (after any write under way) and removed; once putFile has moved it, only closed.
    await file.remove();
    await rm(manifestFile, { force: true });
  }
}

/**
 * An archive's blob key: a sha256 of its tree checksum (computed here, from the decompressed content)
 * and its compressed size, not of its bytes. Equal keys are archives of the same tree with the same
 * length (the row's archive_bytes, a download's Content-Length): a download reads the tree, never
 * the bytes' other details, so either archive serves. Equal trees still share a blob, and the
 * history trigger still fires only when the content changes. Hashing the compressed bytes as well
 * cost the server a third of its hashing: 100 MiB for a 200 MiB tree of the sync bench.
 */
export const archiveBlobKey = (treeChecksum: string, archiveBytes: number) =>
  createHash('sha256').update(`agentctl-archive\0${treeChecksum}\0${archiveBytes}`).digest('hex');

/** An archive the sync library refused, as the domain's refusal; anything else as it is. */
function refusalOf(error: unknown): unknown {
  if (!(error instanceof ArchiveRejected)) return error;
  return error.code === 'archive_too_large' ? tooLarge(error.code, error.message) : unprocessable(error.code, error.message);
}

const toManifestEntry = (e: ArchiveSummary['entries'][number]): ManifestEntry => ({
  path: e.path,
  type: e.kind,
  mode: e.mode,
  size: e.size,
  sha256: e.sha256,
  ...(e.linkpath !== undefined ? { linkpath: e.linkpath } : {}),
});

async function readManifest(blobs: BlobStore, row: FsRow): Promise<ManifestEntry[]> {
  if (!row.manifest_key) return [];
  const chunks: Buffer[] = [];
  for await (const chunk of await storedBlob(blobs, row, row.manifest_key)) chunks.push(chunk as Buffer);
  return JSON.parse(Buffer.concat(chunks).toString('utf8')) as ManifestEntry[];
}

export async function listFiles(blobs: BlobStore, row: FsRow): Promise<FileManifest> {
  return { filesystem_id: row.id, archive_checksum: row.archive_checksum, files: await readManifest(blobs, row) };
}

/** One regular file's bytes, cut from the archive as it streams past. */
export async function readFile(blobs: BlobStore, row: FsRow, filePath: string): Promise<{ body: Readable; size: number }> {
  const entry = (await readManifest(blobs, row)).find((e) => e.path === filePath);
  if (entry?.type !== 'file') throw missing(`File ${filePath} was not found in filesystem ${row.id}`);
  const out = new PassThrough();
  const source = await storedBlob(blobs, row, row.blob_key!);
  const discard = () => new Writable({ write: (_c, _e, done) => done() });
  void readArchive(
    source,
    { maxBytes: Number.MAX_SAFE_INTEGER, maxFiles: Number.MAX_SAFE_INTEGER },
    {
      async dir() {},
      async symlink() {},
      async file(e) {
        if (e.path !== filePath) return discard();
        // Once the file is out, the rest of the archive need not be read.
        out.once('finish', () => source.destroy());
        return out;
      },
    },
  ).catch((error) => {
    if (!out.writableFinished) out.destroy(error as Error);
  });
  return { body: out, size: entry.size };
}

/**
 * Extracts a filesystem's current archive into `dir` (created if missing; it should be empty). For
 * in-process callers (the runtime), who have already decided the caller may read it. Members are
 * validated as on upload, so nothing is written outside `dir`.
 */
export async function extractFilesystem(db: Executor, blobs: BlobStore, fsId: string, dir: string): Promise<void> {
  const row = await db.selectFrom('filesystems').selectAll().where('id', '=', fsId).executeTakeFirst();
  if (!row) throw notFound('Filesystem', fsId);
  await mkdir(dir, { recursive: true });
  if (!row.blob_key) return;
  const root = path.resolve(dir);
  await readArchive(
    await storedBlob(blobs, row, row.blob_key),
    { maxBytes: Number.MAX_SAFE_INTEGER, maxFiles: Number.MAX_SAFE_INTEGER },
    {
      async dir(e) {
        await mkdir(path.join(root, e.path), { recursive: true, mode: e.mode });
      },
      async file(e) {
        await mkdir(path.dirname(path.join(root, e.path)), { recursive: true });
        return createWriteStream(path.join(root, e.path), { mode: e.mode });
      },
      async symlink(e) {
        await mkdir(path.dirname(path.join(root, e.path)), { recursive: true });
        await symlink(e.linkpath!, path.join(root, e.path));
      },
    },
  );
}

// ---- system folders --------------------------------------------------------------------------

/** The filesystem behind a task's system folder: read on the task's agent to read, run to write. Created on first write. */
export async function systemFolderForAccess(
  db: Db,
  perms: Permissions,
  taskId: string,
  type: SystemFolderType,
  need: 'read' | 'write',
): Promise<FsRow | undefined> {
  const task = await taskById(db, perms, need === 'read' ? 'read' : 'run', taskId);
  const find = () =>
    db
      .selectFrom('task_system_folders')
      .innerJoin('filesystems', 'filesystems.id', 'task_system_folders.filesystem_id')
      .selectAll('filesystems')
      .where('task_system_folders.task_id', '=', task.id)
      .where('task_system_folders.type', '=', type)
      .executeTakeFirst();
  const existing = await find();
  if (existing || need === 'read') return existing;
  await db.transaction().execute(async (trx) => {
    const fsId = newId('filesystem');
    await trx.insertInto('filesystems').values({ id: fsId, namespace_id: task.namespace_id, project_id: null, created_by_key_id: null }).execute();
    const inserted = await trx
      .insertInto('task_system_folders')
      .values({ task_id: task.id, type, filesystem_id: fsId })
      .onConflict((oc) => oc.doNothing())
      .returning('filesystem_id')
      .executeTakeFirst();
    // A concurrent first write made it: drop ours.
    if (!inserted) await trx.deleteFrom('filesystems').where('id', '=', fsId).execute();
  });
  return find();
}

/** The empty filesystem a system folder is before its first upload. */
export const emptyFolderRow = (taskId: string): FsRow =>
  ({
    id: taskId,
    namespace_id: '',
    project_id: null,
    created_at: new Date(0),
    archive_checksum: null,
    size_bytes: 0,
    files_count: 0,
    archive_bytes: 0,
    blob_key: null,
    manifest_key: null,
    created_by_key_id: null,
    updated_at: new Date(0),
  }) as FsRow;

// ---- blob collection -------------------------------------------------------------------------

/**
 * Deletes blobs no row names, if older than `graceMs` (an upload in flight has written its blobs
 * but not yet its row). A task's earlier archives (filesystem_history, kept for rehearsals from a
 * sequence) are references too. Returns how many were deleted.
 */
export async function sweepBlobs(db: Db, blobs: BlobStore, graceMs = 60 * 60 * 1000): Promise<number> {
  const rows = await db
    .selectFrom('filesystems')
    .select(['blob_key', 'manifest_key'])
    .where('blob_key', 'is not', null)
    .unionAll(db.selectFrom('filesystem_history').select(['blob_key', 'manifest_key']).where('blob_key', 'is not', null))
    .execute();
  const referenced = new Set<string>();
  for (const r of rows) {
    if (r.blob_key) referenced.add(r.blob_key);
    if (r.manifest_key) referenced.add(r.manifest_key);
  }
  const cutoff = Date.now() - graceMs;
  let deleted = 0;
  for await (const blob of blobs.list()) {
    if (referenced.has(blob.key) || blob.modifiedAt.getTime() > cutoff) continue;
    await blobs.delete(blob.key);
    deleted++;
  }
  return deleted;
}
