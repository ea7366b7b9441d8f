// An upload's staging file: the incoming archive's bytes written as they arrive. They are not hashed:
// the archive's blob key comes from the tree checksum the reader computes (see uploadArchive), and a
// sha256 of the compressed bytes cost the server about a third of its hashing (100 MiB per 200 MiB tree).
// A write stream (and the Transform that fed it) kept each socket chunk queued until the file took
// it, long enough for the garbage collector to move it out of the young generation: on the sync
// bench the server's collector threads spent 0.34-0.41 s per 200 MiB upload. Here each chunk is
// copied into one of two buffers and dropped at once; one buffer fills while the other is written.
import { open, rm, type FileHandle } from 'node:fs/promises';

/** Bytes per write: each buffer goes to the file whole (the last one as far as it is filled). */
export const STAGING_BUFFER_SIZE = 256 * 1024;

/** The staged bytes: their count. */
export interface StagedBytes {
  size: number;
}

/**
 * A file in the blob store's staging area, written through two buffers. `write` copies a chunk in
 * and returns at once, or returns a promise when it must wait for the other buffer's write (the
 * caller waits before taking more: that is the backpressure). `finish` writes the rest and closes;
 * `remove` closes and deletes the file, whatever state it is in (a refused or aborted upload leaves
 * nothing behind; after the blob store moved the file it only closes).
 */
export class StagingFile {
  private filling: Buffer;
  private spare: Buffer;
  private filled = 0;
  private size = 0;
  /** The write of the spare buffer under way, if any. It never rejects: a failure is kept in `failure`. */
  private writing: Promise<void> | undefined;
  private failure: unknown;
  private closed = false;
  /** A write is waiting for the other buffer: the next may only come after it. */
  private waiting = false;

  private constructor(
    readonly path: string,
    private readonly handle: FileHandle,
    bufferSize: number,
  ) {
    this.filling = Buffer.allocUnsafeSlow(bufferSize);
    this.spare = Buffer.allocUnsafeSlow(bufferSize);
  }

  /** Creates the file (it must not exist). */
  static async create(file: string, bufferSize = STAGING_BUFFER_SIZE): Promise<StagingFile> {
    return new StagingFile(file, await open(file, 'wx'), bufferSize);
  }

  /** Copies `chunk` in; a promise when the caller must wait before the next write. The chunk is not kept. */
  write(chunk: Buffer): Promise<void> | undefined {
    if (this.failure) throw this.failure;
    if (this.closed) throw new Error('The staging file is closed');
    if (this.waiting) throw new Error('A write to the staging file came before the previous one was done waiting');
    let at = 0;
    while (at < chunk.length) {
      const n = chunk.copy(this.filling, this.filled, at);
      at += n;
      this.filled += n;
      this.size += n;
      if (this.filled < this.filling.length) break;
      // The filling buffer is full: it goes out once the other one is written.
      if (this.writing) return this.writeAfter(chunk, at);
      this.flush();
    }
    return undefined;
  }

  /** Waits for the write under way, then copies the rest of `chunk` from `at` (the buffer is full). */
  private async writeAfter(chunk: Buffer, at: number): Promise<void> {
    this.waiting = true;
    try {
      await this.writing;
      if (this.failure) throw this.failure;
      if (this.closed) throw new Error('The staging file was closed during a write');
      this.flush();
    } finally {
      this.waiting = false;
    }
    const more = this.write(chunk.subarray(at));
    if (more) await more;
  }

  /** Starts the write of the filled part of the filling buffer; the other buffer (written by now) fills next. */
  private flush(): void {
    const full = this.filling;
    const data = full.subarray(0, this.filled);
    this.filling = this.spare;
    this.spare = full;
    this.filled = 0;
    this.writing = this.writeAll(data).then(
      () => {
        this.writing = undefined;
      },
      (error: unknown) => {
        this.failure ??= error;
        this.writing = undefined;
      },
    );
  }

  private async writeAll(data: Buffer): Promise<void> {
    for (let at = 0; at < data.length; ) {
      const { bytesWritten } = await this.handle.write(data, at, data.length - at);
      at += bytesWritten;
    }
  }

  /** Writes what is left, closes the file, and gives the size of everything written. */
  async finish(): Promise<StagedBytes> {
    if (this.waiting) throw new Error('The staging file was finished before its last write was done waiting');
    if (this.writing) await this.writing;
    if (this.failure) throw this.failure;
    if (this.filled) {
      this.flush();
      await this.writing;
      if (this.failure) throw this.failure;
    }
    this.closed = true;
    await this.handle.close();
    return { size: this.size };
  }

  /** Closes the file if it is open (after the write under way) and deletes it if it is still there. */
  async remove(): Promise<void> {
    if (!this.closed) {
      this.closed = true;
      while (this.writing) await this.writing;
      await this.handle.close().catch(() => undefined);
    }
    await rm(this.path, { force: true });
  }
}
