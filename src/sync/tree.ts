// The tree model shared by the archive writer, the archive reader and the sync functions: which
// paths are in a tree, their canonical modes, and the tree hash of README "Filesystems and sync".
import { createHash } from 'node:crypto';
import { createReadStream, lstatSync, readdirSync } from 'node:fs';
import { readFile, readlink } from 'node:fs/promises';
import path from 'node:path';
import ignore, { type Ignore } from 'ignore';

export type EntryKind = 'file' | 'dir' | 'symlink';

/** One member of a tree. `path` is relative, `/`-separated, without a trailing slash. */
export interface TreeEntry {
  path: string;
  kind: EntryKind;
  /** Permission bits as the archive stores them (see canonicalMode). */
  mode: number;
  /** Content bytes (files), 0 otherwise. */
  size: number;
  /** sha256 of the content (files) or of the link target (symlinks); '' for directories. */
  sha256: string;
  linkpath?: string;
}

/** Directory names never synced, matched as whole path components (`.github/` is synced). */
export const DEFAULT_IGNORED_NAMES: readonly string[] = ['.git', 'node_modules'];
export const IGNORE_FILE = '.agentctlignore';

const EMPTY_SHA256 = createHash('sha256').digest('hex');

/** Byte order of the UTF-8 paths: the archive's member order and the tree hash's line order. */
export function comparePaths(a: string, b: string): number {
  // Below the surrogates (U+D800), UTF-16 code units are code points, and UTF-8 keeps code point
  // order: most paths compare without encoding (a sort of 50,000 paths made millions of Buffers).
  const n = Math.min(a.length, b.length);
  for (let i = 0; i < n; i++) {
    const x = a.charCodeAt(i);
    const y = b.charCodeAt(i);
    if (x === y) continue;
    if (x < 0xd800 && y < 0xd800) return x - y;
    return Buffer.compare(Buffer.from(a), Buffer.from(b));
  }
  return a.length - b.length;
}

/**
 * The mode an archive keeps: the owner can always read and write, group/other never write
 * (the `tar` package's portable rule), directories listable where readable. Equal trees on
 * machines with different umasks hash alike; the executable bits survive.
 */
export function canonicalMode(mode: number, kind: EntryKind): number {
  if (kind === 'symlink') return 0o777;
  let m = ((mode & 0o7777) | 0o600) & ~0o22;
  if (kind === 'dir') {
    if (m & 0o400) m |= 0o100;
    if (m & 0o40) m |= 0o10;
    if (m & 0o4) m |= 0o1;
  }
  return m;
}

/**
 * The tree hash: sha256 over the sorted lines `path NUL mode NUL sha256(content)` (kind letter
 * before the octal mode; directories end in `/`), so equal trees have equal checksums whatever
 * the compression or the member order.
 */
export function treeChecksum(entries: Iterable<TreeEntry>): string {
  const sorted = [...entries].sort((a, b) => comparePaths(a.path, b.path));
  const hash = createHash('sha256');
  let text = '';
  for (const e of sorted) {
    const kind = e.kind === 'file' ? 'f' : e.kind === 'dir' ? 'd' : 'l';
    text += `${e.kind === 'dir' ? `${e.path}/` : e.path}\0${kind}${e.mode.toString(8)}\0${e.kind === 'dir' ? EMPTY_SHA256 : e.sha256}\n`;
    // Hashed in pieces: one update per line cost more than the hashing (as in walkDigest).
    if (text.length > 64 * 1024) {
      hash.update(text);
      text = '';
    }
  }
  return hash.update(text).digest('hex');
}

/** The checksum of a filesystem with no content. */
export const EMPTY_TREE_CHECKSUM = treeChecksum([]);

/**
 * Why a member path may not be written, or undefined when it is safe: relative, no `.`/`..`
 * components, no NUL or backslash, not empty.
 */
export function unsafeMemberPath(p: string): string | undefined {
  if (p === '') return 'empty path';
  if (p.includes('\0')) return 'NUL in path';
  if (p.startsWith('/') || /^[A-Za-z]:/.test(p)) return 'absolute path';
  if (p.includes('\\')) return 'backslash in path';
  for (const part of p.split('/')) {
    if (part === '..') return '".." in path';
    if (part === '.' || part === '') return 'empty or "." component';
  }
  return undefined;
}

/** A member path as tar gives it (`./a/`, `a/`) in the tree's form (`a`). */
export function normalizeMemberPath(p: string): string {
  let out = p;
  while (out.startsWith('./')) out = out.slice(2);
  while (out.endsWith('/')) out = out.slice(0, -1);
  return out;
}

/**
 * Whether a symlink at `linkPath` with `target` stays inside the tree: relative, and `..` only as
 * leading components, no more of them than the link's depth. (A `..` after another component could
 * climb out through a symlinked directory, so it is refused.)
 */
export function linkStaysInside(linkPath: string, target: string): boolean {
  if (target === '' || target.startsWith('/') || target.includes('\0') || target.includes('\\')) return false;
  const depth = linkPath.split('/').length - 1;
  let ups = 0;
  let descended = false;
  for (const part of target.split('/')) {
    if (part === '..') {
      if (descended) return false;
      ups++;
    } else if (part !== '.' && part !== '') descended = true;
  }
  return ups <= depth;
}

/**
 * The ignore rules of a tree: every `.agentctlignore` (gitignore syntax, the `ignore` package)
 * applies to its own directory's subtree with patterns relative to that directory, a deeper file's
 * match (or `!` re-inclusion) overriding a shallower one's, as git does with `.gitignore`. The
 * default names are never synced. Directories are asked before their contents, so `forDir` can
 * read a directory's own file when the walk enters it.
 */
export interface IgnoreRules {
  ignores(relPath: string, isDir: boolean): boolean;
  /** Reads `relDir`'s `.agentctlignore`, if any, before its entries are asked about. */
  enter(relDir: string): Promise<void>;
}

export async function loadIgnoreRules(root: string): Promise<IgnoreRules> {
  // Directory ('' for the root) -> its rules; only directories that have a file are present.
  const levels = new Map<string, Ignore>();
  const read = async (relDir: string) => {
    try {
      levels.set(relDir, ignore().add(await readFile(path.join(root, relDir, IGNORE_FILE), 'utf8')));
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code;
      if (code !== 'ENOENT' && code !== 'ENOTDIR' && code !== 'EISDIR') throw error;
    }
  };
  await read('');
  return {
    enter: (relDir) => (relDir === '' ? Promise.resolve() : read(relDir)),
    ignores(relPath, isDir) {
      const name = relPath.slice(relPath.lastIndexOf('/') + 1);
      if (isDir && DEFAULT_IGNORED_NAMES.includes(name)) return true;
      if (levels.size === 0) return false;
      let ignored = false;
      // From the root down to the path's own directory: the deepest rule that matches decides.
      for (let end = -1; end < relPath.length; end = relPath.indexOf('/', end + 1)) {
        const dir = end < 0 ? '' : relPath.slice(0, end);
        const rules = levels.get(dir);
        if (rules) {
          const rel = relPath.slice(end + 1) + (isDir ? '/' : '');
          const verdict = rules.test(rel);
          if (verdict.ignored) ignored = true;
          else if (verdict.unignored) ignored = false;
        }
        if (relPath.indexOf('/', end + 1) < 0) break;
      }
      return ignored;
    },
  };
}

/** What a walk saw of a path: enough to tell whether a cached hash still holds. */
export interface StatStamp {
  size: number;
  mtimeMs: number;
  ctimeMs: number;
  ino: number;
}

export interface WalkedEntry extends Omit<TreeEntry, 'sha256'> {
  sha256?: string;
  stamp?: StatStamp;
}

/**
 * What `path.join(dir, rel)` puts before `rel`, for relative paths that need no normalizing (a
 * listed name, a walked path: no '.', '..' or empty components): joined by concatenation, without
 * path.join's normalizing of every path.
 */
export function joinPrefix(dir: string): string {
  const normal = path.normalize(dir);
  return normal === '.' ? '' : normal.endsWith('/') ? normal : `${normal}/`;
}

/**
 * Lists a directory tree in path byte order: regular files, directories, and symlinks that stay
 * inside the tree. Ignored paths, other file types and escaping links are left out. Hashes are
 * not computed here (see hashEntries).
 */
export async function walkTree(root: string, rules: IgnoreRules): Promise<WalkedEntry[]> {
  const out: WalkedEntry[] = [];
  const visit = async (rel: string): Promise<void> => {
    const dirPath = rel ? path.join(root, rel) : root;
    // Listed and stat'ed on this thread: a readdir or lstat of cached metadata costs less than its
    // round trip to the thread pool (as the packer's small reads, see archive.ts openMember).
    const names = readdirSync(dirPath).sort(comparePaths);
    // A directory's ignore file is read only when the listing has one: asking every directory for
    // it (a failed open on the thread pool each) kept a walk of 500 directories waiting ~0.1 s.
    if (names.includes(IGNORE_FILE)) await rules.enter(rel);
    const prefix = joinPrefix(dirPath);
    const stats = names.map((name) => lstatSync(prefix + name));
    for (const [i, name] of names.entries()) {
      const childRel = rel ? `${rel}/${name}` : name;
      const st = stats[i]!;
      const stamp = { size: st.size, mtimeMs: st.mtimeMs, ctimeMs: st.ctimeMs, ino: st.ino };
      if (st.isDirectory()) {
        if (rules.ignores(childRel, true)) continue;
        out.push({ path: childRel, kind: 'dir', mode: canonicalMode(st.mode, 'dir'), size: 0, sha256: '' });
        await visit(childRel);
      } else if (st.isFile()) {
        if (rules.ignores(childRel, false)) continue;
        out.push({ path: childRel, kind: 'file', mode: canonicalMode(st.mode, 'file'), size: st.size, stamp });
      } else if (st.isSymbolicLink()) {
        if (rules.ignores(childRel, false)) continue;
        const target = await readlink(path.join(root, childRel));
        if (!linkStaysInside(childRel, target)) continue;
        out.push({ path: childRel, kind: 'symlink', mode: 0o777, size: 0, linkpath: target, sha256: sha256Text(target) });
      }
    }
  };
  await visit('');
  // Depth-first order is not byte order ('a-b' < 'a/b'): sort once at the end.
  return out.sort((a, b) => comparePaths(a.path, b.path));
}

export const sha256Text = (text: string): string => createHash('sha256').update(text).digest('hex');

const SMALL_FILE = 64 * 1024;

/** sha256 of a file's bytes, streamed (memory does not grow with the file). */
export async function hashFile(file: string, size: number): Promise<string> {
  if (size <= SMALL_FILE)
    return createHash('sha256')
      .update(await readFile(file))
      .digest('hex');
  const hash = createHash('sha256');
  for await (const chunk of createReadStream(file, { highWaterMark: 1024 * 1024 })) hash.update(chunk as Buffer);
  return hash.digest('hex');
}

/** Runs `fn` over `items` with at most `limit` in flight. */
export async function eachLimit<T>(items: readonly T[], limit: number, fn: (item: T) => Promise<void>): Promise<void> {
  let next = 0;
  const worker = async () => {
    while (next < items.length) await fn(items[next++]!);
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
}
