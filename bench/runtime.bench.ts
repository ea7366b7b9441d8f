// The local runtime: agent process start to ready, deploy to ACTIVE for the echo example, and
// server memory with 10 running versions. Floors measured in the same run: `node -e 0` (spawn to
// exit) for the times, a bare Node process at rest for agent memory.
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { openBlobStore } from '../src/server/blobs/index.js';
import { createLocalDriver } from '../src/server/runtime/local/index.js';
import { startReconciler } from '../src/server/runtime/reconciler.js';
import { registrationSecrets, sourceFromFilesystem } from '../src/server/runtime/wiring.js';
import { syncUp } from '../src/sync/index.js';
import { openTestService } from '../test/support/service.js';
import { copyFixture, recordHappenings, specFor, tempDir, testSecrets } from '../test/runtime/support/agents.js';
import { benchEngines, fmt, median, POSTGRES_URL, timed } from './support.js';

const ROUNDS = 7;
const ECHO = fileURLToPath(new URL('../examples/echo/', import.meta.url));
const rssMiB = (pid: number) => Number(/VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))![1]) / 1024;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

const run = (args: string[]) =>
  new Promise<void>((done, fail) =>
    spawn(process.execPath, args, { stdio: 'ignore' }).once('exit', (code) => (code === 0 ? done() : fail(new Error(`exit ${code}`)))),
  );
const floorTimes: number[] = [];
for (let i = 0; i < ROUNDS; i++) floorTimes.push(await timed(() => run(['-e', '0'])));
const floor = median(floorTimes);
console.log(`floor: node -e 0, spawn to exit, median of ${ROUNDS}: ${fmt(floor, 1)} ms`);

// 1. Agent process start to ready (a fresh version each round: copy, spawn, first /healthz OK).
{
  const data = tempDir('agentctl-bench-runtime-');
  const driver = createLocalDriver({ dataDir: data.path, prepareSource: copyFixture });
  const happenings = recordHappenings(driver);
  const times: number[] = [];
  for (let i = 0; i < ROUNDS; i++) {
    const spec = specFor('plain');
    times.push(
      await timed(async () => {
        await driver.start(spec, testSecrets());
        await happenings.next(spec.versionId, 'ready');
      }),
    );
    await driver.stop(spec.versionId, { graceMs: 2_000 });
  }
  const m = median(times);
  console.log(`agent start to ready (plain TypeScript agent), median of ${ROUNDS}: ${fmt(m, 1)} ms | ${fmt(m / floor, 1)}x the floor`);

  // 3. Memory: this process is the server's runtime; 10 versions running.
  global.gc?.();
  await sleep(500);
  const before = rssMiB(process.pid);
  const specs = Array.from({ length: 10 }, () => specFor('plain'));
  for (const spec of specs) await driver.start(spec, testSecrets());
  for (const spec of specs) await happenings.next(spec.versionId, 'ready');
  await sleep(2_000);
  global.gc?.();
  const after = rssMiB(process.pid);
  const agents = specs.map((s) => rssMiB(driver.status(s.versionId)!.replicas[0]!.pid!));
  const bare = spawn(process.execPath, ['-e', 'setInterval(() => {}, 1000)'], { stdio: 'ignore' });
  await sleep(1_500);
  const bareRss = rssMiB(bare.pid!);
  bare.kill('SIGKILL');
  console.log(
    `server process with 10 running versions: ${fmt(after, 1)} MiB (${fmt(before, 1)} MiB with none) | ${fmt((after - before) / 10, 2)} MiB per version`,
  );
  console.log(
    `agent process at rest: median ${fmt(median(agents), 1)} MiB | ${fmt(median(agents) / bareRss, 2)}x a bare node process (${fmt(bareRss, 1)} MiB)`,
  );
  await driver.close();
  data.remove();
}

// 2. Deploy to ACTIVE for the echo example (source snapshot extracted, agent registers with its token).
for (const engine of await benchEngines()) {
  const data = tempDir('agentctl-bench-deploy-');
  // openTestService makes (and drops) its own PostgreSQL database on this server.
  if (engine === 'postgres') process.env.TEST_DATABASE_URL ??= POSTGRES_URL;
  const blobs = await openBlobStore({ dir: `${data.path}/blobs` });
  const svc = await openTestService(engine, {}, { blobs });
  const driver = createLocalDriver({ dataDir: data.path, prepareSource: sourceFromFilesystem(svc.store, blobs) });
  const reconciler = await startReconciler({
    store: svc.store,
    driver,
    baseUrl: svc.url,
    secrets: registrationSecrets(svc.store, svc.service.secretsKey),
    intervalMs: 60_000,
  });
  try {
    const fs = await svc.api('POST', '/filesystems', { body: { namespace: 'default' } });
    await syncUp({ baseUrl: svc.url, apiKey: svc.adminKey }, fs.body.id, ECHO);
    const times: number[] = [];
    for (let i = 0; i < ROUNDS; i++) {
      times.push(
        await timed(async () => {
          const d = await svc.api('POST', '/agents/deploy', {
            body: {
              agent_name: 'echo',
              branch: 'main',
              git_hash: `${i}`.padStart(40, 'a'),
              author_name: 'Ada',
              author_email: 'ada@example.com',
              image_url: `local://${fs.body.id}`,
              source_filesystem_id: fs.body.id,
              sdk_type: 'alpha_agent_sdk',
              acp_type: 'async',
            },
          });
          await reconciler.reconcileNow();
          while ((await svc.api('GET', `/versions/${d.body.version_id}`)).body.status !== 'ACTIVE') await sleep(5);
        }),
      );
    }
    const m = median(times);
    console.log(`${engine.padEnd(8)} deploy to ACTIVE (echo example), median of ${ROUNDS}: ${fmt(m, 0)} ms | ${fmt(m / floor, 1)}x the floor`);
  } finally {
    await reconciler.close();
    await svc.close();
    await blobs.close();
    data.remove();
  }
}
