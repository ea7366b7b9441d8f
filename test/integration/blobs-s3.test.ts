import path from 'node:path';
import { rm, writeFile, utimes } from 'node:fs/promises';
import { afterAll, beforeAll, beforeEach, describe, expect, test } from 'vitest';
// @ts-expect-error s3rver ships no types
import S3rver from 's3rver';
import { openBlobStore, BlobNotFound, type BlobStore } from '../../src/server/blobs/index.js';
import { sweepBlobs } from '../../src/server/domain/filesystems.js';
import { syncDown, syncUp } from '../../src/sync/index.js';
import { engines, useService } from '../support/service.js';
import { describeTree, tempDir, writeTree } from '../support/trees.js';

/** The S3 blob store against s3rver (an S3-compatible server from npm), started here on port 0. */
describe.each(engines)('S3 blob store (%s)', (engine) => {
  let s3: { run(): Promise<{ port: number }>; close(): Promise<void> };
  let s3Dir: string;
  let blobs: BlobStore;
  const saved = { ...process.env };

  beforeAll(async () => {
    s3Dir = await tempDir('agentctl-s3rver-');
    s3 = new S3rver({ address: '127.0.0.1', port: 0, silent: true, directory: s3Dir, configureBuckets: [{ name: 'agentctl-test' }] });
    const { port } = await s3.run();
    Object.assign(process.env, {
      AWS_ENDPOINT_URL: `http://127.0.0.1:${port}`,
      AWS_ACCESS_KEY_ID: 'S3RVER',
      AWS_SECRET_ACCESS_KEY: 'S3RVER',
      AWS_REGION: 'us-east-1',
      XDG_CACHE_HOME: await tempDir('agentctl-cache-'),
    });
    blobs = await openBlobStore({ url: 's3://agentctl-test/archives' });
  });
  afterAll(async () => {
    await blobs?.close();
    await s3?.close();
    await rm(s3Dir, { recursive: true, force: true });
    for (const name of ['AWS_ENDPOINT_URL', 'AWS_ACCESS_KEY_ID', 'AWS_SECRET_ACCESS_KEY', 'AWS_REGION']) {
      if (saved[name] === undefined) delete process.env[name];
      else process.env[name] = saved[name];
    }
  });
  // Opens after the blob store above and closes before it (after-hooks run in reverse).
  const svc = useService(engine, {}, { blobs: () => blobs });
  beforeEach(async () => {
    for await (const blob of blobs.list()) await blobs.delete(blob.key);
  });

  test('archives round-trip through the bucket; blobs are content-addressed objects under the prefix', async () => {
    expect(blobs.kind).toBe('s3');
    const fs = await svc.client().createFilesystem({ body: { namespace: 'default' } });
    const transport = { baseUrl: svc.url, apiKey: svc.adminKey };
    const src = await tempDir();
    await writeTree(src, { 'a.txt': 'alpha', 'bin/run': { content: '#!/bin/sh\n', mode: 0o755 } });
    const up = await syncUp(transport, fs.id, src);
    const dest = await tempDir();
    expect(await syncDown(transport, fs.id, dest)).toMatchObject({ added: 2, checksum: up.checksum });
    expect(await describeTree(dest)).toEqual(await describeTree(src));
    const keys: string[] = [];
    for await (const blob of blobs.list()) keys.push(blob.key);
    expect(keys).toHaveLength(2); // the archive and its manifest
    expect(keys.every((k) => /^[0-9a-f]{64}$/.test(k))).toBe(true);
  });

  test('the sweep deletes unreferenced blobs past the grace period and keeps the current ones', async () => {
    const fs = await svc.client().createFilesystem({ body: { namespace: 'default' } });
    const transport = { baseUrl: svc.url, apiKey: svc.adminKey };
    const src = await tempDir();
    await writeTree(src, { 'v.txt': 'one' });
    await syncUp(transport, fs.id, src);
    await writeFile(path.join(src, 'v.txt'), 'two!');
    const later = new Date(Date.now() + 5000);
    await utimes(path.join(src, 'v.txt'), later, later);
    await syncUp(transport, fs.id, src);
    const all: string[] = [];
    for await (const blob of blobs.list()) all.push(blob.key);
    expect(all).toHaveLength(4);
    expect(await sweepBlobs(svc.store.db, blobs, 60_000)).toBe(0); // within the grace period
    expect(await sweepBlobs(svc.store.db, blobs, -1000)).toBe(2);
    const dest = await tempDir();
    await syncDown(transport, fs.id, dest);
    expect(await describeTree(dest)).toEqual(await describeTree(src));
    await expect(blobs.get('0'.repeat(64))).rejects.toBeInstanceOf(BlobNotFound);
  });
});
