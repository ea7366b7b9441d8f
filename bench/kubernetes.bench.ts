// The kubernetes runtime driver's costs, each against a floor measured in the same run:
// 1. loading it (what `--runtime kubernetes` adds to server start-up, and why it loads lazily):
//    a Node process that imports the driver module, against one that imports nothing; time and peak RSS.
// 2. applying a version (start: Secret, Deployment, Service through @kubernetes/client-node) against
//    the same three POSTs sent with plain fetch, to the same in-process Kubernetes API (test/support).
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import path from 'node:path';
import type { LaunchSecrets, VersionSpec } from '../src/server/runtime/driver.js';
import { createKubernetesDriver } from '../src/server/runtime/kubernetes/index.js';
import { buildDeployment, buildSecret, buildService } from '../src/server/runtime/kubernetes/manifests.js';
import { FakeKubeApi } from '../test/support/kube-api.js';
import { fmt, median, timed } from './support.js';

const root = path.dirname(path.dirname(fileURLToPath(import.meta.url)));
const LOAD_RUNS = Number(process.env.BENCH_K8S_LOAD_RUNS ?? 3);
const APPLY_ROUNDS = Number(process.env.BENCH_K8S_APPLY_ROUNDS ?? 100);

/** Median wall time and peak RSS of a Node process (with tsx, as the benchmarks run) that runs `code`. */
function processCost(code: string): { ms: number; rssMb: number } {
  const times: number[] = [];
  const rss: number[] = [];
  for (let i = 0; i < LOAD_RUNS; i++) {
    const start = process.hrtime.bigint();
    const result = spawnSync(
      process.execPath,
      ['--import', 'tsx', '--input-type=module', '-e', `${code}\nprocess.stdout.write(String(process.resourceUsage().maxRSS));`],
      { cwd: root, encoding: 'utf8' },
    );
    times.push(Number(process.hrtime.bigint() - start) / 1e6);
    if (result.status !== 0) throw new Error(result.stderr);
    rss.push(Number(result.stdout) / 1024);
  }
  return { ms: median(times), rssMb: median(rss) };
}

const floor = processCost('');
const loaded = processCost("await import('./src/server/runtime/kubernetes/index.ts');");
console.log(
  `load: an empty process ${fmt(floor.ms)} ms, ${fmt(floor.rssMb)} MB; one importing the kubernetes driver ${fmt(loaded.ms)} ms, ${fmt(loaded.rssMb)} MB`,
);
console.log(`load: ${fmt(loaded.ms / floor.ms, 1)}x the time, +${fmt(loaded.rssMb - floor.rssMb)} MB peak RSS (paid only with --runtime kubernetes)`);

const api = await new FakeKubeApi().start();
const driver = createKubernetesDriver({ kubeConfig: api.kubeConfig(), namespace: 'agentctl', pollIntervalMs: 60_000 });
const secrets: LaunchSecrets = { baseUrl: 'http://agentctl.agentctl.svc:7420', signingSecret: 'sig_bench', registrationToken: async () => 'rt_bench' };
const spec = (i: number): VersionSpec => ({
  versionId: `ver_01JDBENCH${String(i).padStart(16, '0')}`,
  branchId: 'br_01JDBENCH0000000000000000',
  agentId: 'agt_01JDBENCH000000000000000',
  agentName: 'default/bench',
  imageUrl: 'registry.example.com/bots/echo:1',
  sourceFilesystemId: null,
  replicas: 1,
  acpType: 'async',
  env: {},
});

async function bareApply(i: number): Promise<void> {
  const s = spec(i);
  const headers = { 'content-type': 'application/json', authorization: 'Bearer test-token' };
  const post = async (url: string, body: unknown) => {
    const response = await fetch(`${api.url}${url}`, { method: 'POST', headers, body: JSON.stringify(body) });
    await response.text();
  };
  await post(
    '/api/v1/namespaces/agentctl/secrets',
    buildSecret(s, { namespace: 'agentctl', baseUrl: secrets.baseUrl, registrationToken: 'rt_bench', signingSecret: 'sig_bench' }),
  );
  await post('/apis/apps/v1/namespaces/agentctl/deployments', buildDeployment(s, { namespace: 'agentctl', terminationGracePeriodSeconds: 30 }));
  await post('/api/v1/namespaces/agentctl/services', buildService(s, { namespace: 'agentctl' }));
}

// Warm both paths, then alternate rounds so drift weighs on both alike.
await driver.start(spec(0), secrets);
await bareApply(1_000_000);
const driverTimes: number[] = [];
const bareTimes: number[] = [];
for (let i = 1; i <= APPLY_ROUNDS; i++) {
  driverTimes.push(await timed(() => driver.start(spec(i), secrets)));
  bareTimes.push(await timed(() => bareApply(1_000_000 + i)));
}
const driverMs = median(driverTimes);
const bareMs = median(bareTimes);
console.log(`apply: driver start ${fmt(driverMs, 2)} ms, the same three POSTs with fetch ${fmt(bareMs, 2)} ms (median of ${APPLY_ROUNDS})`);
console.log(`apply: ${fmt(driverMs / bareMs, 2)}x the bare requests`);
await driver.close();
await api.close();
