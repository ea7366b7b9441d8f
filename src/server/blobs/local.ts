import { createReadStream } from 'node:fs';
import { mkdir, readdir, rename, rm, stat } from 'node:fs/promises';
import path from 'node:path';
import type { Readable } from 'node:stream';
import { BlobNotFound, isBlobKey, type BlobInfo, type BlobStore } from './store.js';

/** Blobs as files `<dir>/<first two hex digits>/<key>`; staging in `<dir>/.staging` (same file system, so renames are atomic). */
export class LocalBlobStore implements BlobStore {
  readonly kind = 'local';
  readonly stagingDir: string;

  private constructor(
    readonly dir: string,
    private readonly removeOnClose: boolean,
  ) {
    this.stagingDir = path.join(dir, '.staging');
  }

  static async open(dir: string, removeOnClose: boolean): Promise<LocalBlobStore> {
    await mkdir(path.join(dir, '.staging'), { recursive: true });
    return new LocalBlobStore(dir, removeOnClose);
  }

  private file(key: string): string {
    if (!isBlobKey(key)) throw new BlobNotFound(key);
    return path.join(this.dir, key.slice(0, 2), key);
  }

  async putFile(key: string, file: string): Promise<void> {
    const target = this.file(key);
    await mkdir(path.dirname(target), { recursive: true });
    await rename(file, target);
  }

  async get(key: string): Promise<Readable> {
    const file = this.file(key);
    try {
      await stat(file);
    } catch {
      throw new BlobNotFound(key);
    }
    return createReadStream(file, { highWaterMark: 1024 * 1024 });
  }

  async delete(key: string): Promise<void> {
    await rm(this.file(key), { force: true });
  }

  async *list(): AsyncIterable<BlobInfo> {
    for (const shard of await readdir(this.dir)) {
      if (!/^[0-9a-f]{2}$/.test(shard)) continue;
      for (const key of await readdir(path.join(this.dir, shard))) {
        if (!isBlobKey(key)) continue;
        const st = await stat(path.join(this.dir, shard, key)).catch(() => undefined);
        if (st) yield { key, modifiedAt: st.mtime };
      }
    }
  }

  async close(): Promise<void> {
    if (this.removeOnClose) await rm(this.dir, { recursive: true, force: true });
  }
}
