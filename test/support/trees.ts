import { createHash } from 'node:crypto';
import { once } from 'node:events';
import { lstat, mkdir, mkdtemp, readdir, readFile, readlink, symlink, writeFile, chmod } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import zlib from 'node:zlib';
import { Header } from 'tar';

export const tempDir = (prefix = 'agentctl-fs-') => mkdtemp(path.join(os.tmpdir(), prefix));

/** Writes `files` (path -> content, or {content, mode}, or {link}, or {dir: true}) under `root`. */
export async function writeTree(
  root: string,
  files: Record<string, string | Buffer | { content?: string | Buffer; mode?: number; link?: string; dir?: true }>,
): Promise<void> {
  for (const [rel, spec] of Object.entries(files)) {
    const file = path.join(root, rel);
    await mkdir(path.dirname(file), { recursive: true });
    if (typeof spec === 'string' || Buffer.isBuffer(spec)) await writeFile(file, spec);
    else if (spec.dir) await mkdir(file, { recursive: true });
    else if (spec.link !== undefined) await symlink(spec.link, file);
    else {
      await writeFile(file, spec.content ?? '');
      if (spec.mode !== undefined) await chmod(file, spec.mode);
    }
  }
}

/**
 * Everything in a tree, for exact comparison: per path its kind, permission bits and content hash
 * (link target for symlinks). `skip` names top-level entries to leave out.
 */
export async function describeTree(root: string, skip: string[] = []): Promise<Record<string, string>> {
  const out: Record<string, string> = {};
  const visit = async (rel: string) => {
    for (const name of (await readdir(path.join(root, rel))).sort()) {
      const child = rel ? `${rel}/${name}` : name;
      if (!rel && skip.includes(name)) continue;
      const st = await lstat(path.join(root, child));
      if (st.isDirectory()) {
        out[`${child}/`] = `dir ${(st.mode & 0o777).toString(8)}`;
        await visit(child);
      } else if (st.isSymbolicLink()) out[child] = `link ${await readlink(path.join(root, child))}`;
      else
        out[child] = `file ${(st.mode & 0o777).toString(8)} ${createHash('sha256')
          .update(await readFile(path.join(root, child)))
          .digest('hex')}`;
    }
  };
  await visit('');
  return out;
}

export interface RawMember {
  path: string;
  type?: 'File' | 'Directory' | 'SymbolicLink' | 'CharacterDevice' | 'FIFO' | 'Link' | 'ExtendedHeader' | 'NextFileHasLongPath' | 'NextFileHasLongLinkpath';
  body?: Buffer;
  /** The size the header claims (default: the body's length). */
  size?: number;
  linkpath?: string;
  mode?: number;
}

/** A tar built member by member from raw headers, for archives no honest writer makes. */
export function rawTar(members: RawMember[], { end = true }: { end?: boolean } = {}): Buffer {
  const blocks: Buffer[] = [];
  for (const m of members) {
    const body = m.body ?? Buffer.alloc(0);
    const header = new Header({
      path: m.path,
      type: m.type ?? 'File',
      size: m.size ?? body.length,
      mode: m.mode ?? 0o644,
      linkpath: m.linkpath,
      mtime: new Date(0),
      uid: 0,
      gid: 0,
    });
    const block = Buffer.alloc(512);
    header.encode(block, 0);
    blocks.push(block, body);
    if (body.length % 512) blocks.push(Buffer.alloc(512 - (body.length % 512)));
  }
  if (end) blocks.push(Buffer.alloc(1024));
  return Buffer.concat(blocks);
}

export const zstd = (data: Buffer) => zlib.zstdCompressSync(data);

/** One pax record, `<length> <key>=<value>\n`, its length counting itself. */
export function paxRecord(key: string, value: string | Buffer): Buffer {
  const rest = Buffer.concat([Buffer.from(` ${key}=`), Buffer.from(value), Buffer.from('\n')]);
  let length = rest.length + 1;
  while (String(length).length + rest.length !== length) length = String(length).length + rest.length;
  return Buffer.concat([Buffer.from(String(length)), rest]);
}

/**
 * `tar` with the bytes at `offset` of its header block `block` replaced by `bytes`, the header's
 * checksum recomputed: a header no writer makes, but one a reader accepts as intact.
 */
export function patchHeader(tar: Buffer, block: number, offset: number, bytes: Buffer): Buffer {
  const out = Buffer.from(tar);
  const header = out.subarray(block * 512, block * 512 + 512);
  bytes.copy(header, offset);
  header.fill(0x20, 148, 156);
  let sum = 0;
  for (const b of header) sum += b;
  header.write(`${sum.toString(8).padStart(6, '0')}\0 `, 148, 'latin1');
  return out;
}

/** zstd of `head` then `zeros` zero bytes, compressed as a stream: a bomb built without holding it. */
export async function zstdWithZeros(head: Buffer, zeros: number): Promise<Buffer> {
  const z = zlib.createZstdCompress();
  const out: Buffer[] = [];
  z.on('data', (d: Buffer) => out.push(d));
  z.write(head);
  const chunk = Buffer.alloc(16 * 1024 * 1024);
  for (let left = zeros; left > 0; left -= chunk.length) {
    if (!z.write(left >= chunk.length ? chunk : chunk.subarray(0, left))) await once(z, 'drain');
  }
  z.end();
  await once(z, 'end');
  return Buffer.concat(out);
}
