import { createServer } from 'node:net';

/** Lines of output kept for failure diagnostics: an agent's stderr tail, a failed build's last lines. */
export const DIAGNOSTIC_LINES = 20;

/** The environment of the server that agents inherit; everything else (keys, DATABASE_URL) stays out. */
const INHERITED_ENV = [
  'PATH',
  'HOME',
  'USER',
  'LANG',
  'LC_ALL',
  'TZ',
  'TMPDIR',
  'HTTPS_PROXY',
  'HTTP_PROXY',
  'NO_PROXY',
  'https_proxy',
  'http_proxy',
  'no_proxy',
  'NODE_EXTRA_CA_CERTS',
];

export function inheritedEnv(): Record<string, string> {
  const env: Record<string, string> = {};
  for (const name of INHERITED_ENV) if (process.env[name] !== undefined) env[name] = process.env[name]!;
  return env;
}

/** Signals a process group started with `detached: true` (the process alone if the group is gone). */
export function signalGroup(pid: number, signal: NodeJS.Signals) {
  try {
    process.kill(-pid, signal);
  } catch {
    try {
      process.kill(pid, signal);
    } catch {
      // Already gone.
    }
  }
}

/** Calls `onLine` with every line of a child's output stream, the last one even without its newline. */
export function pipeLines(stream: NodeJS.ReadableStream, onLine: (line: string) => void) {
  let partial = '';
  stream.setEncoding('utf8');
  stream.on('data', (chunk: string) => {
    const parts = (partial + chunk).split('\n');
    partial = parts.pop()!;
    for (const part of parts) onLine(part.replace(/\r$/, ''));
  });
  stream.on('end', () => {
    if (partial) onLine(partial);
    partial = '';
  });
  stream.on('error', () => {});
}

/** A loopback port that was free a moment ago, for a replica's PORT. */
export function freePort(): Promise<number> {
  return new Promise((done, reject) => {
    const server = createServer();
    server.unref();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const port = (server.address() as { port: number }).port;
      server.close(() => done(port));
    });
  });
}
