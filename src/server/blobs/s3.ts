import { createReadStream } from 'node:fs';
import { mkdtemp, rm, stat } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import type { Readable } from 'node:stream';
import { DeleteObjectCommand, GetObjectCommand, HeadObjectCommand, ListObjectsV2Command, PutObjectCommand, S3Client } from '@aws-sdk/client-s3';
import { BlobNotFound, isBlobKey, type BlobInfo, type BlobStore } from './store.js';

/**
 * Blobs as objects `<prefix>/<key>` of one bucket. Endpoint, region and credentials come from the
 * usual AWS_* variables (AWS_ENDPOINT_URL for a local S3-compatible server); path-style addressing
 * so such servers need no DNS.
 */
export class S3BlobStore implements BlobStore {
  readonly kind = 's3';

  private constructor(
    private readonly client: S3Client,
    private readonly bucket: string,
    private readonly prefix: string,
    readonly stagingDir: string,
  ) {}

  static async open(bucket: string, prefix: string, client?: S3Client): Promise<S3BlobStore> {
    const s3 =
      client ??
      new S3Client({
        forcePathStyle: true,
        region: process.env.AWS_REGION ?? process.env.AWS_DEFAULT_REGION ?? 'us-east-1',
        // Checksums only where S3 demands them: streamed bodies otherwise go aws-chunked, which
        // S3-compatible servers (MinIO versions, s3rver) do not all understand. Blobs are
        // content-addressed and verified by their readers anyway.
        requestChecksumCalculation: 'WHEN_REQUIRED',
        responseChecksumValidation: 'WHEN_REQUIRED',
      });
    return new S3BlobStore(s3, bucket, prefix, await mkdtemp(path.join(os.tmpdir(), 'agentctl-s3-staging-')));
  }

  private objectKey(key: string): string {
    if (!isBlobKey(key)) throw new BlobNotFound(key);
    return this.prefix ? `${this.prefix}/${key}` : key;
  }

  async putFile(key: string, file: string): Promise<void> {
    const Key = this.objectKey(key);
    try {
      const exists = await this.client.send(new HeadObjectCommand({ Bucket: this.bucket, Key })).then(
        () => true,
        () => false,
      );
      if (!exists) {
        const { size } = await stat(file);
        await this.client.send(
          new PutObjectCommand({ Bucket: this.bucket, Key, Body: createReadStream(file), ContentLength: size, ContentType: 'application/octet-stream' }),
        );
      }
    } finally {
      await rm(file, { force: true });
    }
  }

  async get(key: string): Promise<Readable> {
    try {
      const out = await this.client.send(new GetObjectCommand({ Bucket: this.bucket, Key: this.objectKey(key) }));
      return out.Body as Readable;
    } catch (error) {
      const name = (error as { name?: string }).name;
      if (name === 'NoSuchKey' || name === 'NotFound') throw new BlobNotFound(key);
      throw error;
    }
  }

  async delete(key: string): Promise<void> {
    await this.client.send(new DeleteObjectCommand({ Bucket: this.bucket, Key: this.objectKey(key) }));
  }

  async *list(): AsyncIterable<BlobInfo> {
    let token: string | undefined;
    do {
      const page = await this.client.send(
        new ListObjectsV2Command({ Bucket: this.bucket, Prefix: this.prefix ? `${this.prefix}/` : undefined, ContinuationToken: token }),
      );
      for (const object of page.Contents ?? []) {
        const key = object.Key!.slice(this.prefix ? this.prefix.length + 1 : 0);
        if (isBlobKey(key)) yield { key, modifiedAt: object.LastModified ?? new Date(0) };
      }
      token = page.IsTruncated ? page.NextContinuationToken : undefined;
    } while (token);
  }

  async close(): Promise<void> {
    await rm(this.stagingDir, { recursive: true, force: true });
    this.client.destroy();
  }
}
