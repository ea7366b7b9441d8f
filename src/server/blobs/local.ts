import fs from 'node:fs';
import { mkdir, readdir, rename, rm, stat } from 'node:fs/promises';
import { ServerResponse } from 'node:http';
import path from 'node:path';
import { Readable } from 'node:stream';
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
    let fd: number;
    try {
      fd = await new Promise<number>((resolve, reject) => fs.open(file, 'r', (error, opened) => (error ? reject(error) : resolve(opened))));
    } catch {
      throw new BlobNotFound(key);
    }
    return new BlobReadStream(fd);
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

/** Bytes per read of a blob. */
const READ_SIZE = 1024 * 1024;

/**
 * A blob file as a stream of 1 MiB reads. Piped into an HTTP response (a download), it reads
 * through a few buffers it reuses: a fresh 1 MiB buffer per read made the server's garbage
 * collector run full collections for the external memory, about 100 ms per 24 MiB download on the
 * sync bench. A buffer is reused only once the response has nothing left to write (every chunk
 * handed to it is in the kernel) and the buffer is not among the chunks still waiting in this
 * stream; any other consumer (one that may keep chunks) gets a fresh buffer per read.
 */
class BlobReadStream extends Readable {
  private position = 0;
  private response: ServerResponse | undefined;
  /** Buffers pushed and not yet known to be released, oldest first, with the bytes pushed from each. */
  private readonly pushed: { buffer: Buffer; length: number }[] = [];
  private readonly free: Buffer[] = [];
  /** The descriptor's close, deferred while a read is under way (the number could be reused meanwhile). */
  private reading = false;
  private closeAfterRead: (() => void) | undefined;

  constructor(private readonly fd: number) {
    super({ highWaterMark: READ_SIZE });
  }

  override pipe<T extends NodeJS.WritableStream>(destination: T, options?: { end?: boolean }): T {
    // Only a response's writableLength says when the chunks it was given are written out.
    this.response = this.response === undefined && this.listenerCount('data') === 0 && destination instanceof ServerResponse ? destination : undefined;
    return super.pipe(destination, options);
  }

  override _read(): void {
    this.release();
    const buffer = this.free.pop() ?? Buffer.allocUnsafeSlow(READ_SIZE);
    this.reading = true;
    fs.read(this.fd, buffer, 0, READ_SIZE, this.position, (error, bytesRead) => {
      this.reading = false;
      if (this.closeAfterRead) return this.closeAfterRead();
      if (error) return this.destroy(error);
      if (bytesRead === 0) return void this.push(null);
      this.position += bytesRead;
      if (this.response) this.pushed.push({ buffer, length: bytesRead });
      this.push(buffer.subarray(0, bytesRead));
    });
  }

  /** Moves the buffers the response is done with to the free list. */
  private release(): void {
    const response = this.response;
    if (response?.writableLength !== 0 || response.writableCorked) return;
    // The newest chunks may still wait in this stream's own buffer.
    let waiting = this.readableLength;
    let keep = 0;
    for (let i = this.pushed.length - 1; i >= 0 && waiting > 0; i--, keep++) waiting -= this.pushed[i]!.length;
    for (const { buffer } of this.pushed.splice(0, this.pushed.length - keep)) if (this.free.length < 2) this.free.push(buffer);
  }

  override _destroy(error: Error | null, callback: (error?: Error | null) => void): void {
    const close = () => fs.close(this.fd, () => callback(error));
    if (this.reading) this.closeAfterRead = close;
    else close();
  }
}
