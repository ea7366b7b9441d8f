// Server memory at rest: the resident set size of a real `agentctl server start` process, settled
// (the last of its samples over 6 s after it answered /readyz), against a bare `node` process at rest
// as the floor. PGlite both on its first start (an empty data directory: initdb and the schema) and
// on a second start on the same directory, each with `--runtime none` and the default local
// runtime; PostgreSQL (DATABASE_URL) when it is reachable.
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { benchEngines, fmt, throwawayDatabase } from './support.js';

const bin = path.resolve('bin/agentctl.js');
const SETTLE_MS = 6000;
const rssMiB = (pid: number) => Number(/VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))![1]) / 1024;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Starts `args` under node, waits for `listening` on stderr (and /readyz), lets it settle, returns its RSS. */
async function measure(args: string[], env: NodeJS.ProcessEnv, listening?: RegExp): Promise<number> {
  const child = spawn(process.execPath, args, { env: { ...process.env, ...env }, stdio: ['ignore', 'ignore', 'pipe'] });
  try {
    if (listening) {
      const url = await new Promise<string>((resolve, reject) => {
        let err = '';
        child.stderr!.on('data', (d) => {
          err += d;
          const m = listening.exec(err);
          if (m) resolve(m[1]);
        });
        child.on('exit', (code) => reject(new Error(`exited ${code}: ${err}`)));
      });
      await fetch(`${url}/readyz`).then((r) => r.text());
    }
    let rss = 0;
    for (let waited = 0; waited < SETTLE_MS; waited += 500) {
      await sleep(500);
      rss = rssMiB(child.pid!);
    }
    return rss;
  } finally {
    child.kill('SIGTERM');
    await new Promise((r) => child.once('exit', r));
  }
}

const floor = await measure(['-e', 'setInterval(() => {}, 1000)'], {});
console.log(`floor: bare node at rest ${fmt(floor, 1)} MiB`);
const print = (label: string, rss: number) => console.log(`${label.padEnd(40)} ${fmt(rss, 1).padStart(7)} MiB | ${fmt(rss / floor, 1)}x the floor`);

for (const engine of await benchEngines()) {
  for (const runtime of ['none', 'local']) {
    const scratch = mkdtempSync(path.join(tmpdir(), 'agentctl-bench-'));
    const database = engine === 'postgres' ? await throwawayDatabase() : undefined;
    // An empty cache of its own: the first start makes the database from scratch (no PGlite template yet).
    const env = {
      AGENTCTL_CONFIG_DIR: path.join(scratch, 'config'),
      AGENTCTL_CACHE_DIR: path.join(scratch, 'cache'),
      DATABASE_URL: database?.url ?? '',
      CI: 'true',
    };
    const args = [
      bin,
      'server',
      'start',
      '--port',
      '0',
      '--data-dir',
      path.join(scratch, 'data'),
      '--log-level',
      'silent',
      ...(runtime === 'none' ? ['--runtime', 'none'] : []),
    ];
    try {
      const first = await measure(args, env, /listening on (\S+)/);
      if (engine === 'pglite') {
        print(`pglite, runtime ${runtime}: first start`, first);
        print(`pglite, runtime ${runtime}: second start`, await measure(args, env, /listening on (\S+)/));
      } else print(`postgres, runtime ${runtime}`, first);
    } finally {
      await database?.drop();
      rmSync(scratch, { recursive: true, force: true });
    }
  }
}
