// The stat cache and the last synced base of one (directory, remote) pair, kept outside the tree
// so syncing never sees it.
import { createHash, randomBytes } from 'node:crypto';
import { mkdir, readFile, rename, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import type { EntryKind, StatStamp, TreeEntry } from './tree.js';

/**
 * A cached hash is trusted only for files last modified at least this long before the cache was
 * recorded: a rewrite within the file system's timestamp resolution leaves size and mtime alone.
 */
export const TIMESTAMP_RESOLUTION_MS = 1000;

export interface CachedEntry {
  kind: EntryKind;
  mode: number;
  size: number;
  sha256: string;
  linkpath?: string;
  stamp?: StatStamp;
}

export interface SyncState {
  /** The remote checksum this directory last matched; null before the first sync. */
  base: string | null;
  /** When the stamps were taken (ms since the epoch). */
  recordedAt: number;
  entries: Record<string, CachedEntry>;
}

export const emptyState = (): SyncState => ({ base: null, recordedAt: 0, entries: {} });

/** `$XDG_CACHE_HOME/agentctl/sync/<hash of remote and directory>.json`. */
export function defaultStateFile(remote: string, dir: string): string {
  const cacheHome = process.env.XDG_CACHE_HOME || path.join(os.homedir(), '.cache');
  const key = createHash('sha256')
    .update(`${remote}\0${path.resolve(dir)}`)
    .digest('hex')
    .slice(0, 32);
  return path.join(cacheHome, 'agentctl', 'sync', `${key}.json`);
}

export async function loadState(file: string): Promise<SyncState> {
  try {
    const parsed = JSON.parse(await readFile(file, 'utf8')) as SyncState;
    if (parsed && typeof parsed === 'object' && parsed.entries && typeof parsed.recordedAt === 'number') return parsed;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ENOENT' && !(error instanceof SyntaxError)) throw error;
  }
  return emptyState();
}

/** Written to a temporary file and renamed: a crash leaves the old state or the new, never half. */
export async function saveState(file: string, state: SyncState): Promise<void> {
  await mkdir(path.dirname(file), { recursive: true });
  const tmp = `${file}.${randomBytes(4).toString('hex')}.tmp`;
  await writeFile(tmp, JSON.stringify(state));
  await rename(tmp, file);
}

/** The cached hash of an entry, if its stamp still matches and was not taken too soon after a write. */
export function cachedHash(state: SyncState, path_: string, stamp: StatStamp): string | undefined {
  const cached = state.entries[path_];
  if (!cached?.stamp || cached.kind !== 'file') return undefined;
  const s = cached.stamp;
  if (s.size !== stamp.size || s.mtimeMs !== stamp.mtimeMs || s.ctimeMs !== stamp.ctimeMs || s.ino !== stamp.ino) return undefined;
  if (stamp.mtimeMs >= state.recordedAt - TIMESTAMP_RESOLUTION_MS) return undefined;
  return cached.sha256;
}

export function toCachedEntry(e: TreeEntry & { stamp?: StatStamp }): CachedEntry {
  return {
    kind: e.kind,
    mode: e.mode,
    size: e.size,
    sha256: e.sha256,
    ...(e.linkpath !== undefined ? { linkpath: e.linkpath } : {}),
    ...(e.stamp ? { stamp: e.stamp } : {}),
  };
}
