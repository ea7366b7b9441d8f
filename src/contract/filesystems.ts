import { z } from 'zod';
import { Slug, Timestamp } from './common.js';

/** Task-scoped SDK configuration folders, one per SDK kind (README "Filesystems and sync"). */
export const SYSTEM_FOLDER_TYPES = ['dot_alpha', 'dot_beta'] as const;
export const SystemFolderType = z.enum(SYSTEM_FOLDER_TYPES);
export type SystemFolderType = z.infer<typeof SystemFolderType>;
/** The directory name each system folder has inside a task's home. */
export const SYSTEM_FOLDER_DIRS: Record<SystemFolderType, string> = { dot_alpha: '.alpha', dot_beta: '.beta' };

/** Media types an archive upload may have: zstd-compressed tar, or plain tar as octet-stream. */
export const ARCHIVE_MEDIA_TYPES = ['application/zstd', 'application/octet-stream'] as const;

export const Filesystem = z
  .object({
    id: z.string(),
    namespace_id: z.string(),
    project_id: z.string().nullable(),
    /** Tree hash of the current archive; null until the first upload. */
    archive_checksum: z.string().nullable(),
    size_bytes: z.number().int(),
    files_count: z.number().int(),
    created_at: Timestamp,
    updated_at: Timestamp,
  })
  .meta({ id: 'Filesystem' });
export type Filesystem = z.infer<typeof Filesystem>;

export const FilesystemList = z.object({ filesystems: z.array(Filesystem), total: z.number().int() });
export type FilesystemList = z.infer<typeof FilesystemList>;

export const CreateFilesystemRequest = z
  .object({
    project_id: z.string().min(1).optional(),
    namespace: Slug.optional(),
  })
  .meta({ id: 'CreateFilesystemRequest' });
export type CreateFilesystemRequest = z.infer<typeof CreateFilesystemRequest>;

export const ManifestEntry = z
  .object({
    path: z.string(),
    type: z.enum(['file', 'dir', 'symlink']),
    mode: z.number().int(),
    size: z.number().int(),
    sha256: z.string(),
    linkpath: z.string().optional(),
  })
  .meta({ id: 'ManifestEntry' });
export type ManifestEntry = z.infer<typeof ManifestEntry>;

export const FileManifest = z
  .object({ filesystem_id: z.string(), archive_checksum: z.string().nullable(), files: z.array(ManifestEntry) })
  .meta({ id: 'FileManifest' });
export type FileManifest = z.infer<typeof FileManifest>;

/** The binary body of archive downloads and uploads, as openapi.json shows it. */
export const ArchiveBody = z
  .string()
  .meta({ format: 'binary', description: 'A tar archive, zstd-compressed (application/zstd) or plain (application/octet-stream)' });
