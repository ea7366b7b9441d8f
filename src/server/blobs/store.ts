// What every blob store is and shares (the local directory, S3): apart from index.ts, which picks
// one, so the stores import this and index.ts imports them without a circle.
import type { Readable } from 'node:stream';

export interface BlobInfo {
  key: string;
  modifiedAt: Date;
}

export interface BlobStore {
  readonly kind: 'local' | 's3';
  /** A local directory for files being received before they get a key. */
  readonly stagingDir: string;
  /**
   * Stores a finished local file under `key` and removes the file. Storing a key that exists may
   * keep either file: equal keys are equal content (a manifest's sha256; an archive's tree checksum
   * and length, see archiveBlobKey).
   */
  putFile(key: string, file: string): Promise<void>;
  /** The blob's bytes, streamed; throws BlobNotFound. */
  get(key: string): Promise<Readable>;
  delete(key: string): Promise<void>;
  list(): AsyncIterable<BlobInfo>;
  close(): Promise<void>;
}

export class BlobNotFound extends Error {
  constructor(readonly key: string) {
    super(`Blob ${key} was not found`);
  }
}

export const isBlobKey = (key: string) => /^[0-9a-f]{64}$/.test(key);
