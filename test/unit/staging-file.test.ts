import { createHash, randomBytes } from 'node:crypto';
import { access, open, readFile } from 'node:fs/promises';
import path from 'node:path';
import { afterEach, describe, expect, test, vi } from 'vitest';
import { STAGING_BUFFER_SIZE, StagingFile } from '../../src/server/blobs/staging.js';
import { tempDir } from '../support/trees.js';

/** FileHandle's prototype: its write is what StagingFile calls for each buffer. */
async function fileHandlePrototype(dir: string): Promise<{ write: (...args: unknown[]) => Promise<{ bytesWritten: number }> }> {
  const handle = await open(path.join(dir, 'probe'), 'w');
  await handle.close();
  return Object.getPrototypeOf(handle);
}

/** Holds each write to a file until its release (the returned list's functions, in order). */
function holdWrites(proto: Awaited<ReturnType<typeof fileHandlePrototype>>): (() => void)[] {
  const realWrite = proto.write;
  const held: (() => void)[] = [];
  vi.spyOn(proto, 'write').mockImplementation(function (this: unknown, ...args: unknown[]) {
    return new Promise<void>((resolve) => held.push(resolve)).then(() => realWrite.apply(this, args));
  });
  return held;
}

/** A staging file (64-byte buffers) in a new directory whose next write to disk fails with ENOSPC. */
async function stagingOnAFullDisk() {
  const dir = await tempDir();
  const diskFull = Object.assign(new Error('ENOSPC: no space left on device, write'), { code: 'ENOSPC' });
  vi.spyOn(await fileHandlePrototype(dir), 'write').mockRejectedValueOnce(diskFull);
  const target = path.join(dir, 'upload');
  return { diskFull, target, file: await StagingFile.create(target, 64) };
}

const exists = (file: string) =>
  access(file).then(
    () => true,
    () => false,
  );
const sha256 = (data: Buffer) => createHash('sha256').update(data).digest('hex');
/** Whether `promise` is still pending once the event loop has had a turn (everything ready has run). */
const pending = (promise: Promise<unknown>) => Promise.race([promise.then(() => false), new Promise<boolean>((resolve) => setImmediate(() => resolve(true)))]);

afterEach(() => {
  vi.restoreAllMocks();
});

describe('StagingFile', () => {
  test('the size is that of the bytes written, across buffer boundaries, and the file holds them', async () => {
    const dir = await tempDir();
    // Chunks smaller than, equal to, just past and many times the buffer, and empty ones.
    const sizes = [1, 0, 100, STAGING_BUFFER_SIZE - 101, STAGING_BUFFER_SIZE, 1, STAGING_BUFFER_SIZE + 1, 3 * STAGING_BUFFER_SIZE + 7, 0, 65536, 5];
    const chunks = sizes.map((n) => randomBytes(n));
    const all = Buffer.concat(chunks);
    const file = await StagingFile.create(path.join(dir, 'upload'));
    for (const chunk of chunks) {
      const wait = file.write(chunk);
      if (wait) await wait;
    }
    expect(await file.finish()).toEqual({ size: all.length });
    expect(sha256(await readFile(path.join(dir, 'upload')))).toBe(sha256(all));
  });

  test('a small buffer: every chunk boundary against every buffer boundary', async () => {
    const dir = await tempDir();
    const all = randomBytes(10_000);
    for (const step of [1, 7, 63, 64, 65, 128, 1000]) {
      const target = path.join(dir, `upload-${step}`);
      const file = await StagingFile.create(target, 64);
      for (let at = 0; at < all.length; at += step) {
        const wait = file.write(all.subarray(at, at + step));
        if (wait) await wait;
      }
      expect(await file.finish()).toEqual({ size: all.length });
      expect((await readFile(target)).equals(all)).toBe(true);
    }
  });

  test('nothing written is an empty file of size 0', async () => {
    const dir = await tempDir();
    const file = await StagingFile.create(path.join(dir, 'upload'));
    expect(await file.finish()).toEqual({ size: 0 });
    expect((await readFile(path.join(dir, 'upload'))).length).toBe(0);
  });

  test('the file must be new', async () => {
    const dir = await tempDir();
    await (await StagingFile.create(path.join(dir, 'upload'))).finish();
    await expect(StagingFile.create(path.join(dir, 'upload'))).rejects.toMatchObject({ code: 'EEXIST' });
  });

  test('remove part-way (a refused upload) closes and deletes the file', async () => {
    const dir = await tempDir();
    const target = path.join(dir, 'upload');
    const file = await StagingFile.create(target, 64);
    for (let i = 0; i < 10; i++) {
      const wait = file.write(randomBytes(50));
      if (wait) await wait;
    }
    expect(await exists(target)).toBe(true);
    await file.remove();
    expect(await exists(target)).toBe(false);
    expect(() => file.write(Buffer.from('more'))).toThrow(/closed/);
    await file.remove(); // twice is fine
  });

  test('a failed write fails the next write or the finish, and remove deletes the file', async () => {
    const { diskFull, target, file } = await stagingOnAFullDisk();
    // The first full buffer goes to the (failing) write; the one after waits for it, then reports it.
    expect(file.write(randomBytes(64))).toBeUndefined();
    const waited = file.write(randomBytes(64));
    expect(waited).toBeInstanceOf(Promise);
    await expect(waited).rejects.toBe(diskFull);
    expect(() => file.write(randomBytes(1))).toThrow(diskFull);
    await expect(file.finish()).rejects.toBe(diskFull);
    await file.remove();
    expect(await exists(target)).toBe(false);
  });

  test('a failed last write fails the finish', async () => {
    const { diskFull, target, file } = await stagingOnAFullDisk();
    expect(file.write(randomBytes(10))).toBeUndefined();
    await expect(file.finish()).rejects.toBe(diskFull);
    await file.remove();
    expect(await exists(target)).toBe(false);
  });

  test('backpressure: with both buffers taken, a write waits for the disk, and no other write is taken meanwhile', async () => {
    const dir = await tempDir();
    const held = holdWrites(await fileHandlePrototype(dir));
    const target = path.join(dir, 'upload');
    const file = await StagingFile.create(target, 64);
    const chunks = [randomBytes(64), randomBytes(30), randomBytes(34), randomBytes(20)];
    // The first buffer fills and goes out; the second fills while it is held.
    expect(file.write(chunks[0]!)).toBeUndefined();
    expect(file.write(chunks[1]!)).toBeUndefined();
    const waiting = file.write(chunks[2]!);
    expect(waiting).toBeInstanceOf(Promise);
    expect(await pending(waiting!)).toBe(true);
    expect(() => file.write(chunks[3]!)).toThrow(/before the previous one was done waiting/);
    expect(held.length).toBe(1);
    held.shift()!();
    await waiting;
    // The second buffer went out in turn (held too); what follows fills the first one again.
    expect(held.length).toBe(1);
    expect(file.write(chunks[3]!)).toBeUndefined();
    const finishing = file.finish();
    expect(await pending(finishing)).toBe(true);
    held.shift()!();
    await vi.waitFor(() => expect(held.length).toBe(1));
    held.shift()!();
    const all = Buffer.concat(chunks);
    expect(await finishing).toEqual({ size: all.length });
    expect((await readFile(target)).equals(all)).toBe(true);
  });

  test('remove while a write waits for the disk: the waiting write fails and the file is gone', async () => {
    const dir = await tempDir();
    const held = holdWrites(await fileHandlePrototype(dir));
    const target = path.join(dir, 'upload');
    const file = await StagingFile.create(target, 64);
    expect(file.write(randomBytes(64))).toBeUndefined();
    const waiting = file.write(randomBytes(64))!;
    waiting.catch(() => undefined);
    const removing = file.remove();
    held.shift()!();
    await removing;
    await expect(waiting).rejects.toThrow(/closed/);
    expect(held.length).toBe(0);
    expect(await exists(target)).toBe(false);
  });
});
