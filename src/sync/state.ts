// The stat cache and the last synced base of one (directory, remote) pair, kept outside the tree
// so syncing never sees it.
import { createHash, randomBytes } from 'node:crypto';
import { mkdir, readFile, rename, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { comparePaths, treeChecksum, type EntryKind, type StatStamp, type TreeEntry } from './tree.js';

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
  /**
   * Set (by saveState) only when every file's stamp was trusted and the entries hash to `base`:
   * the walkDigest of the tree as recorded. A walk with the same digest is that tree: the clean
   * re-check answers without reading `entries` (read from the file only when asked for).
   */
  digest?: string;
}

export const emptyState = (): SyncState => ({ base: null, recordedAt: 0, entries: {} });

/** What a walk saw of an entry, for walkDigest. */
export interface DigestEntry {
  path: string;
  kind: EntryKind;
  mode: number;
  size: number;
  linkpath?: string;
  stamp?: StatStamp;
}

/**
 * sha256 over what a walk sees of each entry (path, kind, mode, size, link target, and a file's
 * size, mtime, ctime and inode), in the walk's order; undefined when a file has no stamp or one
 * too recent for `recordedAt` to vouch for (see cachedHash). Equal digests mean every file's
 * cached hash holds.
 */
export function walkDigest(entries: readonly DigestEntry[], recordedAt: number): string | undefined {
  const hash = createHash('sha256');
  let text = '';
  for (const e of entries) {
    const s = e.stamp;
    if (e.kind === 'file' && (!s || s.mtimeMs >= recordedAt - TIMESTAMP_RESOLUTION_MS)) return undefined;
    text += `${JSON.stringify(e.path)} ${e.kind} ${e.mode} ${e.size} ${e.linkpath === undefined ? '' : JSON.stringify(e.linkpath)} ${s ? `${s.size} ${s.mtimeMs} ${s.ctimeMs} ${s.ino}` : ''}\n`;
    // Hashed in pieces: one update per entry costs more than the hashing.
    if (text.length > 64 * 1024) {
      hash.update(text);
      text = '';
    }
  }
  return hash.update(text).digest('hex');
}

/** The state file's first line (the version-2 format): the entries follow on the second, parsed only when asked for. */
interface StateHeader {
  version: 2;
  base: string | null;
  recordedAt: number;
  digest?: string;
}

/** `$XDG_CACHE_HOME/agentctl/sync/<hash of remote and directory>.json`. */
export function defaultStateFile(remote: string, dir: string): string {
  const cacheHome = process.env.XDG_CACHE_HOME || path.join(os.homedir(), '.cache');
  const key = createHash('sha256')
    .update(`${remote}\0${path.resolve(dir)}`)
    .digest('hex')
    .slice(0, 32);
  return path.join(cacheHome, 'agentctl', 'sync', `${key}.json`);
}

const isEntries = (v: unknown): v is Record<string, CachedEntry> => typeof v === 'object' && v !== null && !Array.isArray(v);

/** The state of `file`; an unreadable or missing one is the empty state (everything is hashed again). */
export async function loadState(file: string): Promise<SyncState> {
  try {
    const text = await readFile(file, 'utf8');
    const newline = text.indexOf('\n');
    if (newline < 0) {
      // The first format: one JSON object.
      const parsed = JSON.parse(text) as SyncState;
      if (parsed && typeof parsed === 'object' && isEntries(parsed.entries) && typeof parsed.recordedAt === 'number')
        return { base: parsed.base, recordedAt: parsed.recordedAt, entries: parsed.entries };
      return emptyState();
    }
    const header = JSON.parse(text.slice(0, newline)) as StateHeader;
    if (header?.version !== 2 || typeof header.recordedAt !== 'number') return emptyState();
    let entries: Record<string, CachedEntry> | undefined;
    return {
      base: header.base,
      recordedAt: header.recordedAt,
      ...(header.digest ? { digest: header.digest } : {}),
      // A clean re-check needs only the header: 50,000 entries are parsed only when a file changed.
      get entries() {
        if (!entries) {
          let parsed: unknown;
          try {
            parsed = JSON.parse(text.slice(newline + 1));
          } catch {
            /* a damaged state: nothing is vouched for */
          }
          entries = isEntries(parsed) ? parsed : {};
        }
        return entries;
      },
    };
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ENOENT' && !(error instanceof SyntaxError)) throw error;
  }
  return emptyState();
}

/**
 * Written to a temporary file and renamed: a crash leaves the old state or the new, never half.
 * The digest of the tree is recorded when every file's stamp is trusted and the entries are the
 * base's tree (their checksum is `base`).
 */
export async function saveState(file: string, state: Omit<SyncState, 'digest'>): Promise<void> {
  const list = Object.entries(state.entries)
    .map(([p, e]) => ({ ...e, path: p }))
    .sort((a, b) => comparePaths(a.path, b.path));
  const digest = state.base !== null && treeChecksum(list) === state.base ? walkDigest(list, state.recordedAt) : undefined;
  await writeStateFile(file, { version: 2, base: state.base, recordedAt: state.recordedAt, ...(digest ? { digest } : {}) }, JSON.stringify(state.entries));
}

/** The header line and the entries' JSON, to a temporary file renamed into place. */
async function writeStateFile(file: string, header: StateHeader, entriesText: string): Promise<void> {
  await mkdir(path.dirname(file), { recursive: true });
  const tmp = `${file}.${randomBytes(4).toString('hex')}.tmp`;
  await writeFile(tmp, `${JSON.stringify(header)}\n${entriesText}`);
  await rename(tmp, file);
}

/** A state but for its base: what syncUp makes ready while it waits for the server's checksum. */
export interface PreparedState {
  recordedAt: number;
  /** The entries' tree checksum: the digest is recorded only if the base turns out to be this. */
  checksum: string;
  digest: string | undefined;
  /** The entries as saveState writes them (JSON of the toCachedEntry record). */
  entriesText: string;
}

/** The state of `entries` (in path byte order, as a walk gives them, every file hashed), all but its base. */
export function prepareState(entries: readonly (TreeEntry & { stamp?: StatStamp })[], recordedAt: number): PreparedState {
  return {
    recordedAt,
    checksum: treeChecksum(entries),
    digest: walkDigest(entries, recordedAt),
    entriesText: JSON.stringify(Object.fromEntries(entries.map((e) => [e.path, toCachedEntry(e)]))),
  };
}

/** saveState of a prepared state once its base is known (see saveState). */
export async function savePreparedState(file: string, base: string, prepared: PreparedState): Promise<void> {
  const digest = prepared.checksum === base ? prepared.digest : undefined;
  await writeStateFile(file, { version: 2, base, recordedAt: prepared.recordedAt, ...(digest ? { digest } : {}) }, prepared.entriesText);
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
