// The sync library (README "Filesystems and sync"), shared by the ADK, the CLI and the server. It imports
// nothing from src/server or src/cli.
export {
  syncUp,
  syncDown,
  syncUpSystemFolder,
  syncDownSystemFolder,
  warmUp,
  SyncHttpError,
  SyncConflictError,
  type SyncTransport,
  type SyncOptions,
  type SyncProgress,
  type SyncResult,
} from './sync.js';
export {
  packTree,
  readArchive,
  emptyArchive,
  ArchiveRejected,
  DEFAULT_ARCHIVE_LIMITS,
  ARCHIVE_CONTENT_TYPE,
  type ArchiveLimits,
  type ArchiveSink,
  type MemberWriter,
  type ArchiveSummary,
} from './archive.js';
export { treeChecksum, walkTree, loadIgnoreRules, EMPTY_TREE_CHECKSUM, DEFAULT_IGNORED_NAMES, IGNORE_FILE, type TreeEntry, type EntryKind } from './tree.js';
export { defaultStateFile, TIMESTAMP_RESOLUTION_MS } from './state.js';
