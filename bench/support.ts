// Shared by the benchmarks: a throwaway database per engine, and honest timing helpers.
import { readFileSync } from 'node:fs';
import pg from 'pg';
import type { PGlite } from '@electric-sql/pglite';
import type { Engine, StoreOptions } from '../src/server/store/db.js';
import { createTestDatabase } from '../test/support/service.js';

export const POSTGRES_URL = process.env.TEST_DATABASE_URL ?? process.env.BENCH_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test';

/** Engines to measure: PGlite always, PostgreSQL when its server answers; BENCH_ENGINES=postgres (or pglite) picks one. */
export async function benchEngines(): Promise<Engine[]> {
  const only = process.env.BENCH_ENGINES?.split(',').map((e) => e.trim());
  return (await reachableEngines()).filter((e) => !only || only.includes(e));
}

async function reachableEngines(): Promise<Engine[]> {
  const client = new pg.Client({ connectionString: POSTGRES_URL, connectionTimeoutMillis: 2000 });
  try {
    await client.connect();
    await client.end();
    return ['pglite', 'postgres'];
  } catch {
    console.log(`(PostgreSQL at ${POSTGRES_URL.replace(/\/\/[^@]*@/, '//')} is not reachable: PGlite only)`);
    return ['pglite'];
  }
}

/** A fresh PostgreSQL database for one benchmark; the returned function drops it. */
export const throwawayDatabase = () => createTestDatabase(POSTGRES_URL, 'agentctl_bench');

export const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

export async function timed(fn: () => Promise<unknown>): Promise<number> {
  const start = process.hrtime.bigint();
  await fn();
  return Number(process.hrtime.bigint() - start) / 1e6;
}

/** The p-th percentile (nearest rank, 0-100) of `xs`. */
export const percentile = (xs: number[], p: number) => [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor((xs.length * p) / 100))];

/**
 * Where the time goes: per hop (in path order, with what it is), the median time since the previous
 * hop that was seen in the same sample (p90 beside it), their sum, and that against the floor.
 */
export function hopTable<H extends string>(
  hops: readonly (readonly [H, string])[],
  samples: { start: number; stamps: Partial<Record<H, number>> }[],
  floor: number,
): string {
  const lines: string[] = [];
  let total = 0;
  const width = Math.max(...hops.map(([hop]) => hop.length), 'sum of medians'.length);
  for (const [hop, what] of hops) {
    const gaps: number[] = [];
    for (const { start, stamps } of samples) {
      const at = stamps[hop];
      if (at === undefined) continue;
      let previous = start;
      for (const [earlier] of hops) {
        if (earlier === hop) break;
        if (stamps[earlier] !== undefined) previous = stamps[earlier]!;
      }
      gaps.push(at - previous);
    }
    if (!gaps.length) continue;
    const p50 = percentile(gaps, 50);
    total += p50;
    lines.push(`    ${hop.padEnd(width)} +${fmt(p50, 3).padStart(6)} ms (p90 ${fmt(percentile(gaps, 90), 3).padStart(6)})  ${what} (${gaps.length} samples)`);
  }
  lines.push(`    ${'sum of medians'.padEnd(width)}  ${fmt(total, 3).padStart(6)} ms  (${fmt(total / floor, 1)}x the loopback round trip)`);
  return lines.join('\n');
}

/**
 * Stamps the statements that carry a sample's token: 'statement sent' when one whose text (PGlite's EXECUTE,
 * parameters as literals) or parameters `holds` goes to the database, 'committed' when it answered.
 * Wraps PGlite's `exec` when given one, else pg's `Client.prototype.query`; returns the undo.
 */
export function stampStatements(pglite: PGlite | undefined, holds: (x: unknown) => boolean, stamp: (hop: 'statement sent' | 'committed') => void): () => void {
  const target: any = pglite ?? pg.Client.prototype;
  const name = pglite ? 'exec' : 'query';
  const original = target[name];
  target[name] = function (this: unknown, text: unknown, params?: unknown, ...rest: unknown[]) {
    // A named statement (store/db.ts) comes as pg's config object.
    const config = typeof text === 'object' && text !== null ? (text as { text?: unknown; values?: unknown }) : { text, values: params };
    const mine = holds(typeof config.text === 'string' ? config.text : '') || (Array.isArray(config.values) && config.values.some(holds));
    if (mine) stamp('statement sent');
    const result = original.call(this, text, params, ...rest);
    if (mine && result && typeof result.then === 'function')
      result.then(
        () => stamp('committed'),
        () => {},
      );
    return result;
  };
  return () => {
    target[name] = original;
  };
}

/**
 * The whole machine's busy share (every core, every process: the server, the agent, the database)
 * from /proc/stat, between this call and the returned function's; NaN where /proc is not there.
 */
export function machineBusy(): () => number {
  const read = () => {
    try {
      const fields = readFileSync('/proc/stat', 'utf8').split('\n', 1)[0].trim().split(/\s+/).slice(1).map(Number);
      // user nice system idle iowait irq softirq steal: idle and iowait are the idle ones.
      const idle = fields[3] + fields[4];
      return { idle, total: fields.slice(0, 8).reduce((a, b) => a + b, 0) };
    } catch {
      return undefined;
    }
  };
  const before = read();
  return () => {
    const after = read();
    if (!before || !after || after.total === before.total) return Number.NaN;
    return 1 - (after.idle - before.idle) / (after.total - before.total);
  };
}

export const fmt = (n: number, digits = 0) => n.toLocaleString('en-US', { maximumFractionDigits: digits, minimumFractionDigits: digits });

/** The deploy every single-agent benchmark starts from (`POST /agents/deploy`): one async agent, `default/bench-bot`. */
export const BENCH_DEPLOY = {
  agent_name: 'bench-bot',
  branch: 'main',
  git_hash: 'c0ffee00',
  author_name: 'Bench',
  author_email: 'bench@example.com',
  image_url: 'img',
  sdk_type: 'alpha_agent_sdk',
  acp_type: 'async',
} as const;

/**
 * The whole service on one engine for a benchmark: a store (a throwaway database on PostgreSQL), the
 * bootstrap admin key, the app listening on loopback with rate limiting off, and `call` for its API
 * over a keep-alive pool of `connections` sockets (16 unless told): the answer parsed, or with
 * `callText` as it arrived (for a timing that ends when the body is in). `close` stops it all and
 * drops the database.
 */
export async function benchService(
  engine: Engine,
  { connections = 16, store: storeOptions = {} }: { connections?: number; store?: Omit<StoreOptions, 'databaseUrl'> } = {},
) {
  const [{ buildApp }, { ensureBootstrap }, { openStore }, { generateSecret }, { Agent, request }] = await Promise.all([
    import('../src/server/app.js'),
    import('../src/server/bootstrap.js'),
    import('../src/server/store/db.js'),
    import('../src/server/auth/secrets.js'),
    import('undici'),
  ]);
  const database = engine === 'postgres' ? await throwawayDatabase() : undefined;
  const store = await openStore({ ...storeOptions, databaseUrl: database?.url });
  const adminKey = generateSecret();
  const { orgId } = await ensureBootstrap(store.db, adminKey);
  const app = await buildApp({ store, config: { rateLimitPerSecond: 0 } });
  await app.listen({ host: '127.0.0.1', port: 0 });
  const serviceUrl = `http://127.0.0.1:${(app.server.address() as import('node:net').AddressInfo).port}`;
  const http = new Agent({ connections });
  const callText = async (method: 'POST' | 'GET' | 'PATCH', path: string, body?: unknown) => {
    const res = await request(serviceUrl + path, {
      method,
      dispatcher: http,
      headers: { authorization: `Bearer ${adminKey}`, 'content-type': 'application/json' },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const text = await res.body.text();
    if (res.statusCode >= 300) throw new Error(`${method} ${path}: ${res.statusCode} ${text.slice(0, 300)}`);
    return text;
  };
  const call = async (method: 'POST' | 'GET' | 'PATCH', path: string, body?: unknown) => JSON.parse(await callText(method, path, body));
  const close = async () => {
    await http.close();
    await app.close();
    await store.close();
    await database?.drop();
  };
  return { database, store, adminKey, orgId, app, serviceUrl, http, call, callText, close };
}
