// Server memory at rest (resident set size, 3 s after it starts listening and has served one request),
// on PGlite and on PostgreSQL, against a bare Node process with the same loader as the floor.
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { benchEngines, fmt, throwawayDatabase } from './support.js';

const rssMiB = (pid: number) => Number(/VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))![1]) / 1024;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function measure(args: string[], env: NodeJS.ProcessEnv, waitFor?: RegExp): Promise<number> {
  const child = spawn(process.execPath, ['--import', 'tsx', ...args], { env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'inherit'] });
  try {
    if (waitFor) {
      const url = await new Promise<string>((resolve, reject) => {
        let out = '';
        child.stdout!.on('data', (d) => {
          out += d;
          const m = waitFor.exec(out);
          if (m) resolve(m[1]);
        });
        child.on('exit', (code) => reject(new Error(`exited ${code}`)));
      });
      await fetch(`${url}/readyz`).then((r) => r.text());
    }
    await sleep(3000);
    return rssMiB(child.pid!);
  } finally {
    child.kill('SIGTERM');
    await new Promise((r) => child.once('exit', r));
  }
}

const floor = await measure(['-e', 'setInterval(() => {}, 1000)'], {});
console.log(`floor: bare node (same loader) at rest ${fmt(floor, 1)} MiB`);
for (const engine of await benchEngines()) {
  const dataDir = mkdtempSync(path.join(tmpdir(), 'agentctl-bench-'));
  const database = engine === 'postgres' ? await throwawayDatabase() : undefined;
  try {
    const rss = await measure(['bench/serve-at-rest.ts'], { DATABASE_URL: database?.url ?? '', AGENTCTL_DATA_DIR: dataDir }, /listening (\S+)/);
    console.log(`${engine.padEnd(8)} server at rest ${fmt(rss, 1)} MiB | ${fmt(rss / floor, 1)}x the floor`);
  } finally {
    await database?.drop();
    rmSync(dataDir, { recursive: true, force: true });
  }
}
