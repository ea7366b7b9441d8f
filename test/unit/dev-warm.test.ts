import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { createAdk } from '../../src/adk/adk.js';
import { GO_FD, warmSource } from '../../src/cli/dev/warm.js';

// `agentctl dev`'s spare process: what its preload loads before the save must still be loaded in
// the process of every later save, and the ADK's warm-up must do the first turn's first-use work.

const scratch = mkdtempSync(path.join(os.tmpdir(), 'agentctl-dev-warm-'));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

/** Runs a process the way the runner starts a spare (the warm preload, the go pipe), gives it the go, and returns what its entry printed. */
function runSpare(preload: string, entry: string, env: NodeJS.ProcessEnv): Promise<string> {
  return new Promise((resolve, reject) => {
    const proc = spawn(process.execPath, ['--import', pathToFileURL(preload).href, entry], {
      env,
      stdio: ['ignore', 'pipe', 'inherit', 'ignore', 'pipe'],
    });
    let out = '';
    proc.stdout!.on('data', (chunk) => (out += chunk));
    const go = proc.stdio[GO_FD] as unknown as NodeJS.ReadWriteStream;
    go.once('data', () => go.end(`${JSON.stringify({ port: 1 })}\n`));
    proc.once('error', reject);
    proc.once('close', (code) => (code === 0 ? resolve(out.trim()) : reject(new Error(`exit ${code}`))));
  });
}

describe('the spare process of agentctl dev', () => {
  it("has Node's type stripper loaded before the go, also once the compile cache holds the warm file", async () => {
    const typed = path.join(scratch, 'warm-types.ts');
    writeFileSync(typed, 'export const warm: boolean = true;\n');
    const preload = path.join(scratch, 'warm.mjs');
    writeFileSync(preload, warmSource([pathToFileURL(typed).href]));
    // The entry runs after the go: it says whether the stripper was loaded by then (by the preload).
    const entry = path.join(scratch, 'entry.mjs');
    writeFileSync(entry, "console.log(process.moduleLoadList.some((m) => m.includes('amaro')));\n");
    const env: NodeJS.ProcessEnv = { ...process.env, NODE_COMPILE_CACHE: path.join(scratch, 'compile-cache') };
    delete env.NODE_DISABLE_COMPILE_CACHE;
    // The first process fills the cache as it exits; the next ones start with it.
    for (let i = 0; i < 3; i++) expect(await runSpare(preload, entry, env)).toBe('true');
  });
});

describe('Adk.warmUp', () => {
  let server: Server | undefined;
  afterAll(() => server?.close());

  it("sends one GET /healthz on each HTTP stack a turn uses (the toolkit's pool, the sync library's)", async () => {
    const seen: string[] = [];
    server = createServer((req, res) => {
      seen.push(`${req.method} ${req.url}`);
      res.writeHead(200, { 'content-type': 'application/json' }).end('{"status":"ok"}');
    });
    await new Promise<void>((resolve) => server!.listen(0, '127.0.0.1', resolve));
    const adk = createAdk({ baseUrl: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, apiKey: 'k' });
    await adk.warmUp();
    expect(seen).toEqual(['GET /healthz', 'GET /healthz']);
  });

  it('resolves when the server is away', async () => {
    const closed = createServer();
    await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve));
    const port = (closed.address() as AddressInfo).port;
    await new Promise<void>((resolve) => closed.close(() => resolve()));
    await expect(createAdk({ baseUrl: `http://127.0.0.1:${port}`, apiKey: 'k', retries: 0 }).warmUp()).resolves.toBeUndefined();
  });
});
