// The cost of access control: an authenticated `GET /branches/{id}/versions` (a scoped, non-admin
// key: authentication, its grants, the permission check) against the same route with authentication
// switched off (`config.authDisabled`), in one run, with autocannon on loopback. Prints requests per
// second of each and their ratio (target >= 0.85).
//
// The two apps share one store and run in a child process, so the load generator does not compete
// with them for the event loop; rounds alternate between the two to spread any drift evenly.
import { fork, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import type { AddressInfo } from 'node:net';
import autocannon from 'autocannon';
import type { Engine } from '../src/server/store/db.js';
import { benchEngines, fmt, throwawayDatabase } from './support.js';

const ROUND_SECONDS = Number(process.env.BENCH_AUTH_SECONDS ?? 2);
const ROUNDS = Number(process.env.BENCH_AUTH_ROUNDS ?? 6);
const CONNECTIONS = Number(process.env.BENCH_AUTH_CONNECTIONS ?? 10);
const VERSIONS = 20;

type Ready = { authedUrl: string; openUrl: string; path: string; key: string };

/** Child: both apps on one store, seeded with an agent of VERSIONS versions and a Read-Only key. */
async function serve(engine: Engine, databaseUrl: string | undefined): Promise<void> {
  const [{ buildApp }, { ensureBootstrap }, { openStore }, { generateSecret }] = await Promise.all([
    import('../src/server/app.js'),
    import('../src/server/bootstrap.js'),
    import('../src/server/store/db.js'),
    import('../src/server/auth/secrets.js'),
  ]);
  const store = await openStore({ databaseUrl: engine === 'postgres' ? databaseUrl : undefined });
  const admin = generateSecret();
  await ensureBootstrap(store.db, admin);
  const authed = await buildApp({ store, config: { rateLimitPerSecond: 0 } });
  const open = await buildApp({ store, config: { rateLimitPerSecond: 0, authDisabled: true } });
  await authed.listen({ host: '127.0.0.1', port: 0 });
  await open.listen({ host: '127.0.0.1', port: 0 });
  const authedUrl = `http://127.0.0.1:${(authed.server.address() as AddressInfo).port}`;
  const openUrl = `http://127.0.0.1:${(open.server.address() as AddressInfo).port}`;

  const call = async (method: string, path: string, body?: unknown) => {
    const res = await fetch(authedUrl + path, {
      method,
      headers: { authorization: `Bearer ${admin}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const json = await res.json();
    if (!res.ok) throw new Error(`${method} ${path}: ${res.status} ${JSON.stringify(json).slice(0, 300)}`);
    return json;
  };
  let branchId = '';
  let agentId = '';
  for (let i = 0; i < VERSIONS; i++) {
    const d = await call('POST', '/agents/deploy', {
      agent_name: 'bench-bot',
      branch: 'main',
      git_hash: (i + 1).toString(16).padStart(8, '0'),
      author_name: 'Bench',
      author_email: 'bench@example.com',
      image_url: 'img',
      sdk_type: 'alpha_agent_sdk',
      acp_type: 'async',
    });
    await call('POST', '/versions/register', { version_id: d.version_id });
    branchId = d.branch_id;
    agentId = d.agent_id;
  }
  // A Read-Only key on the agent: the realistic case, with grants to load and check (an org admin short-cuts).
  const created = await call('POST', '/api_keys', {
    name: 'reader',
    scopes: [
      { resource_type: 'agent', resource_id: agentId, role: 'viewer' },
      { resource_type: 'project', resource_id: (await call('POST', '/projects', { name: 'docs' })).id, role: 'viewer' },
    ],
  });
  const ready: Ready = { authedUrl, openUrl, path: `/branches/${branchId}/versions`, key: created.secret };
  process.send!(ready);
  process.on('disconnect', async () => {
    // autocannon drops its last requests unanswered; let their handlers finish before the store closes.
    await new Promise((resolve) => setTimeout(resolve, 500));
    await authed.close();
    await open.close();
    await store.close();
    process.exit(0);
  });
}

function run(url: string, headers: Record<string, string>, seconds: number): Promise<autocannon.Result> {
  return new Promise((resolve, reject) => {
    autocannon({ url, headers, connections: CONNECTIONS, duration: seconds }, (error, result) => (error ? reject(error) : resolve(result)));
  });
}

async function benchEngine(engine: Engine): Promise<void> {
  const database = engine === 'postgres' ? await throwawayDatabase() : undefined;
  const child: ChildProcess = fork(fileURLToPath(import.meta.url), ['serve', engine, database?.url ?? ''], {
    execArgv: ['--import', 'tsx'],
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  try {
    const ready = await new Promise<Ready>((resolve, reject) => {
      child.once('message', (m) => resolve(m as Ready));
      child.once('exit', (code) => reject(new Error(`the server process exited (${code})`)));
    });
    const authedHeaders = { authorization: `Bearer ${ready.key}` };
    // Both answer the same body: a check that the baseline does the same work.
    const [a, b] = await Promise.all([
      fetch(ready.authedUrl + ready.path, { headers: authedHeaders }).then((r) => r.json()),
      fetch(ready.openUrl + ready.path).then((r) => r.json()),
    ]);
    if (a.total !== VERSIONS || JSON.stringify(a) !== JSON.stringify(b))
      throw new Error(`the two servers answer differently: ${JSON.stringify(a).slice(0, 200)} / ${JSON.stringify(b).slice(0, 200)}`);

    await run(ready.authedUrl + ready.path, authedHeaders, 1);
    await run(ready.openUrl + ready.path, {}, 1);
    let authedRequests = 0;
    let openRequests = 0;
    let errors = 0;
    for (let round = 0; round < ROUNDS; round++) {
      const withAuth = await run(ready.authedUrl + ready.path, authedHeaders, ROUND_SECONDS);
      const without = await run(ready.openUrl + ready.path, {}, ROUND_SECONDS);
      authedRequests += withAuth['2xx'];
      openRequests += without['2xx'];
      errors += withAuth.non2xx + withAuth.errors + without.non2xx + without.errors;
    }
    if (errors > 0) throw new Error(`${errors} requests failed`);
    const seconds = ROUNDS * ROUND_SECONDS;
    const authedRps = authedRequests / seconds;
    const openRps = openRequests / seconds;
    console.log(
      `${engine.padEnd(8)} GET /branches/{id}/versions (${VERSIONS} versions, ${CONNECTIONS} connections, ${ROUNDS}x${ROUND_SECONDS}s each): ` +
        `authenticated ${fmt(authedRps)} req/s, auth off ${fmt(openRps)} req/s, ratio ${fmt(authedRps / openRps, 3)} (target >= 0.85)`,
    );
  } finally {
    child.disconnect?.();
    await new Promise((resolve) => (child.exitCode === null ? child.once('exit', resolve) : resolve(undefined)));
    await database?.drop();
  }
}

if (process.argv[2] === 'serve') {
  await serve(process.argv[3] as Engine, process.argv[4] || undefined);
} else {
  for (const engine of await benchEngines()) await benchEngine(engine);
}
