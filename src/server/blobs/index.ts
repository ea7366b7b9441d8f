// Content-addressed blob storage for archives and manifests (README "Filesystems and sync"): a local directory
// by default, S3-compatible storage when AGENTCTL_BLOB_URL=s3://bucket/prefix names a bucket.
import { mkdtemp } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import type { Readable } from 'node:stream';
import { LocalBlobStore } from './local.js';

export interface BlobInfo {
  key: string;
  modifiedAt: Date;
}

export interface BlobStore {
  readonly kind: 'local' | 's3';
  /** A local directory for files being received before they get a key. */
  readonly stagingDir: string;
  /**
   * Stores a finished local file under `key` (the sha256 of its bytes) and removes the file.
   * Storing a key that exists is a no-op: equal keys are equal bytes.
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

export interface BlobStoreOptions {
  /** `s3://bucket/prefix`; else the local directory is used. */
  url?: string;
  /** The local directory (default: a temporary one, removed on close). */
  dir?: string;
}

/** The store named by the options: S3 for an `s3://` URL, else the directory (or a temporary one). */
export async function openBlobStore(options: BlobStoreOptions = {}): Promise<BlobStore> {
  if (options.url) {
    const url = new URL(options.url);
    if (url.protocol !== 's3:') throw new Error(`AGENTCTL_BLOB_URL must be s3://bucket/prefix, not ${options.url}`);
    const { S3BlobStore } = await import('./s3.js');
    return S3BlobStore.open(url.hostname, url.pathname.replace(/^\/+|\/+$/g, ''));
  }
  if (options.dir) return LocalBlobStore.open(options.dir, false);
  return LocalBlobStore.open(await mkdtemp(path.join(os.tmpdir(), 'agentctl-blobs-')), true);
}
