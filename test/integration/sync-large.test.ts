import { createHash, randomBytes } from 'node:crypto';
import { createWriteStream } from 'node:fs';
import { mkdir, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { once } from 'node:events';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { syncDown, syncUp, SyncConflictError, type SyncTransport } from '../../src/sync/index.js';
import { engines, useService } from '../support/service.js';
import { describeTree, tempDir } from '../support/trees.js';

const MiB = 1024 * 1024;

/** Big trees: what the sync does with them does not depend on the database, so one engine runs them. */
describe.each(engines.slice(0, 1))('sync of large trees (%s)', (engine) => {
  // One database for both tests: the transport below holds the admin key it opened with.
  const svc = useService(engine, {}, { resetBeforeEach: false });
  let transport: SyncTransport;
  const dirs: string[] = [];
  const dir = async () => {
    const d = await tempDir();
    dirs.push(d);
    return d;
  };

  beforeAll(async () => {
    process.env.XDG_CACHE_HOME = await tempDir('agentctl-cache-');
    transport = { baseUrl: svc.url, apiKey: svc.adminKey };
  });
  afterAll(async () => {
    for (const d of dirs) await rm(d, { recursive: true, force: true });
  });
  const createFs = async () => (await svc.client().createFilesystem({ body: { namespace: 'default' } })).id;
  const getFs = (id: string) => svc.client().getFilesystem({ params: { filesystem_id: id } });

  test('a 100 MiB file round-trips byte for byte', async () => {
    const fsId = await createFs();
    const src = await dir();
    const out = createWriteStream(path.join(src, 'big.bin'));
    const hash = createHash('sha256');
    // Incompressible in parts, repetitive in others: both paths of zstd.
    for (let i = 0; i < 100; i++) {
      const chunk = i % 2 ? randomBytes(MiB) : Buffer.alloc(MiB, i);
      hash.update(chunk);
      if (!out.write(chunk)) await once(out, 'drain');
    }
    out.end();
    await once(out, 'finish');
    const up = await syncUp(transport, fsId, src);
    expect(up).toMatchObject({ added: 1 });
    const dest = await dir();
    expect(await syncDown(transport, fsId, dest)).toMatchObject({ added: 1, checksum: up.checksum });
    expect((await describeTree(dest))['big.bin']).toBe(`file 644 ${hash.digest('hex')}`);
    expect(await getFs(fsId)).toMatchObject({ size_bytes: 100 * MiB, files_count: 1 });
    // A writer with no base is refused before the server reads its body; the push stops there.
    const stranger = await syncUp(transport, fsId, src, { stateFile: path.join(await dir(), 'state.json') }).catch((e) => e);
    expect(stranger).toBeInstanceOf(SyncConflictError);
    expect(stranger).toMatchObject({ status: 428, code: 'precondition_required' });
    expect(await getFs(fsId)).toMatchObject({ archive_checksum: up.checksum });
  }, 120_000);

  test('10,000 small files round-trip; an unchanged second syncUp uploads nothing', async () => {
    const fsId = await createFs();
    const src = await dir();
    for (let d = 0; d < 100; d++) {
      await mkdir(path.join(src, `d${d}`));
      await Promise.all(Array.from({ length: 100 }, (_, f) => writeFile(path.join(src, `d${d}`, `f${f}.txt`), `file ${d}/${f}\n`)));
    }
    const up = await syncUp(transport, fsId, src);
    expect(up).toMatchObject({ added: 10_000, files_changed: 10_000 });
    expect(await syncUp(transport, fsId, src)).toMatchObject({ files_changed: 0, bytes: 0 });
    const dest = await dir();
    expect(await syncDown(transport, fsId, dest)).toMatchObject({ added: 10_000, checksum: up.checksum });
    expect(await describeTree(dest)).toEqual(await describeTree(src));
    const files = await svc.client().listFilesystemFiles({ params: { filesystem_id: fsId } });
    expect(files.files).toHaveLength(10_100);
  }, 120_000);
});
