import type { Readable } from 'node:stream';
import { ARCHIVE_MEDIA_TYPES } from '../../contract/filesystems.js';
import { ApiError, entityTag, entityTags } from '../errors.js';
import { Streamed, type Call, type RouteHost, type ServiceContext } from '../route-host.js';
import {
  createFilesystem,
  deleteFilesystem,
  downloadArchive,
  emptyFolderRow,
  filesystemForAccess,
  getFilesystem,
  listFiles,
  listFilesystems,
  readFile,
  systemFolderForAccess,
  uploadArchive,
  type ArchiveDownload,
} from '../domain/filesystems.js';

/** The raw request body of an archive upload, refused unless it is one of the archive media types. */
function archiveBody(call: Call): Readable {
  const type = (call.request.headers['content-type'] ?? '').split(';')[0]!.trim().toLowerCase();
  if (!(ARCHIVE_MEDIA_TYPES as readonly string[]).includes(type)) {
    throw new ApiError(415, 'unsupported_media_type', `Send archives as ${ARCHIVE_MEDIA_TYPES.join(' or ')}`);
  }
  return call.request.body as Readable;
}

const tagsOf = (call: Call, name: 'if-match' | 'if-none-match') => entityTags(call.request.headers[name]);

/** A download as HTTP: the checksum is the ETag; 304 when the caller has it. */
function archiveAnswer(download: ArchiveDownload): Streamed {
  const headers = { etag: entityTag(download.checksum), 'cache-control': 'no-cache' };
  if (download.notModified) return new Streamed(304, headers);
  return new Streamed(200, { ...headers, 'content-type': 'application/zstd', 'content-length': String(download.bytes) }, download.body);
}

export function registerFilesystemRoutes(host: RouteHost, service: ServiceContext): void {
  const db = service.store.db;
  const limits = () => ({ maxBytes: service.config.archiveMaxBytes, maxFiles: service.config.archiveMaxFiles, maxMs: service.config.requestTimeoutMs });
  host.handle('createFilesystem', async ({ body }, call) => createFilesystem(db, await call.access(), body));
  host.handle('listFilesystems', async ({ query }, call) => listFilesystems(db, await call.access(), query));
  host.handle('getFilesystem', async ({ params }, call) => getFilesystem(db, await call.access(), params.filesystem_id));
  host.handle('deleteFilesystem', async ({ params }, call) => deleteFilesystem(db, await call.access(), params.filesystem_id));
  host.handle('downloadFilesystemArchive', async ({ params }, call) => {
    const row = await filesystemForAccess(db, await call.access(), params.filesystem_id, 'read');
    return archiveAnswer(await downloadArchive(service.blobs, row, tagsOf(call, 'if-none-match')));
  });
  host.handle('uploadFilesystemArchive', async ({ params }, call) => {
    const row = await filesystemForAccess(db, await call.access(), params.filesystem_id, 'write');
    return uploadArchive(db, service.blobs, row.id, archiveBody(call), tagsOf(call, 'if-match'), limits());
  });
  host.handle('listFilesystemFiles', async ({ params }, call) =>
    listFiles(service.blobs, await filesystemForAccess(db, await call.access(), params.filesystem_id, 'read')),
  );
  host.handle('getFilesystemFile', async ({ params }, call) => {
    const row = await filesystemForAccess(db, await call.access(), params.filesystem_id, 'read');
    const file = await readFile(service.blobs, row, params['*']);
    return new Streamed(
      200,
      { 'content-type': 'application/octet-stream', 'content-length': String(file.size), etag: entityTag(row.archive_checksum ?? '') },
      file.body,
    );
  });
  host.handle('downloadSystemFolderArchive', async ({ params }, call) => {
    const row = (await systemFolderForAccess(db, await call.access(), params.task_id, params.folder_type, 'read')) ?? emptyFolderRow(params.task_id);
    return archiveAnswer(await downloadArchive(service.blobs, row, tagsOf(call, 'if-none-match')));
  });
  host.handle('uploadSystemFolderArchive', async ({ params }, call) => {
    const row = (await systemFolderForAccess(db, await call.access(), params.task_id, params.folder_type, 'write'))!;
    return uploadArchive(db, service.blobs, row.id, archiveBody(call), tagsOf(call, 'if-match'), limits());
  });
}
