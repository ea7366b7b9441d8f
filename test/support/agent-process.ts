import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { signBody } from '../../src/contract/acp.js';

export const repoRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');

/** Builds dist/adk/index.js (what `import 'agentctl/adk'` loads) from the current source. */
export function buildAdkBundle(): void {
  execFileSync(process.execPath, [path.join(repoRoot, 'scripts/build-adk.mjs'), '--no-declarations'], { cwd: repoRoot, stdio: 'pipe' });
}

/** A real agent process: its stdout JSON lines, its stderr, its exit; stopped by pid. */
export interface AgentProcess {
  child: ChildProcess;
  lines: Record<string, any>[];
  stderr(): string;
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  /** Resolves with the first stdout line that matches (rejects after `timeoutMs`). */
  waitFor(match: (line: Record<string, any>) => boolean, timeoutMs?: number): Promise<Record<string, any>>;
  stop(): void;
}

export function startAgentProcess(entry: string, env: Record<string, string>, cwd = repoRoot): AgentProcess {
  const child = spawn(process.execPath, [entry], { cwd, env: { PATH: process.env.PATH ?? '', ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  const lines: Record<string, any>[] = [];
  let err = '';
  let buffered = '';
  const watchers = new Set<() => void>();
  child.stdout!.on('data', (chunk: Buffer) => {
    buffered += chunk.toString('utf8');
    let nl: number;
    while ((nl = buffered.indexOf('\n')) >= 0) {
      const text = buffered.slice(0, nl);
      buffered = buffered.slice(nl + 1);
      try {
        lines.push(JSON.parse(text));
      } catch {
        lines.push({ text });
      }
    }
    for (const w of watchers) w();
  });
  child.stderr!.on('data', (chunk: Buffer) => (err += chunk.toString('utf8')));
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    child.once('exit', (code, signal) => resolve({ code, signal })),
  );
  return {
    child,
    lines,
    stderr: () => err,
    exited,
    waitFor(match, timeoutMs = 15_000) {
      return new Promise((resolve, reject) => {
        const check = () => {
          const found = lines.find(match);
          if (found) {
            watchers.delete(check);
            clearTimeout(timer);
            resolve(found);
          }
        };
        const timer = setTimeout(() => {
          watchers.delete(check);
          reject(new Error(`agent printed no matching line in ${timeoutMs} ms; stdout: ${JSON.stringify(lines).slice(-2000)} stderr: ${err.slice(-2000)}`));
        }, timeoutMs);
        watchers.add(check);
        check();
        void exited.then(() => setTimeout(check, 50));
      });
    },
    stop() {
      if (child.exitCode === null && child.signalCode === null && child.pid) process.kill(child.pid, 'SIGKILL');
    },
  };
}

let deliveries = 0;
/** POSTs one signed JSON-RPC delivery to an agent, as the platform's dispatcher does. */
export async function deliver(
  port: number,
  method: string,
  params: unknown,
  options: { id?: string; secret?: string; timestamp?: number; signature?: string } = {},
): Promise<{ status: number; body: any }> {
  const body = JSON.stringify({ jsonrpc: '2.0', id: options.id ?? `dlv_${process.pid}_${++deliveries}`, method, params });
  const signature = options.signature ?? signBody(options.secret ?? 'test-signing-secret', body, options.timestamp);
  const res = await fetch(`http://127.0.0.1:${port}/api`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-agentctl-signature': signature },
    body,
  });
  return { status: res.status, body: await res.json() };
}
