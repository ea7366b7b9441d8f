// Content-addressed blob storage for archives and manifests (README "Filesystems and sync"): a local directory
// by default, S3-compatible storage when AGENTCTL_BLOB_URL=s3://bucket/prefix names a bucket.
import { mkdtemp } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { LocalBlobStore } from './local.js';
import type { BlobStore } from './store.js';

export { BlobNotFound, isBlobKey, type BlobInfo, type BlobStore } from './store.js';

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
