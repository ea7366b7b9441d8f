// Streamed messages, end to end (README "Writing agents: the ADK", streaming):
// 1. Latency: a delta written by the ADK's writer (`ctx.messages.stream()`, default coalescing) until
//    a `tasks watch`-like reader (the client's undici SSE stream) sees it, p50/p99, against two floors
//    measured next to each sample: a bare loopback HTTP round trip on the same kind of connection, and a
//    committed write round trip (the same HTTP round trip whose server INSERTs one row on the same
//    engine and answers once it committed): what any durable append costs before anyone is told.
//    On PostgreSQL also the database alone, right after each sample: a committed one-row INSERT
//    straight through the driver, and (every other sample) the same INSERT on a session whose commits
//    do not wait for the WAL flush (synchronous_commit off). Their difference is the flush wait of a commit,
//    which no client of a durable write avoids; the line says how much of the delta's time it is.
// 2. Coalescing: 20 concurrent streams of 100 tokens/s each; requests per token with the writer's
//    coalescing against a writer that sends every token as its own request, and the process CPU per
//    token of each (server and writers share this process). Prints figures and ratios; asserts nothing.
import diagnostics from 'node:diagnostics_channel';
import { createServer, type IncomingMessage, ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { sql } from 'kysely';
import pg from 'pg';
import { Agent, request } from 'undici';
import { createAdk } from '../src/adk/index.js';
import { MessageStream, STREAM_FLUSH_INTERVAL_MS } from '../src/adk/stream.js';
import { createClient } from '../src/client/index.js';
import { buildApp } from '../src/server/app.js';
import { ensureBootstrap } from '../src/server/bootstrap.js';
import { generateSecret } from '../src/server/auth/secrets.js';
import { onCommitted } from '../src/server/domain/conversation.js';
import { openStore, type Db, type Engine, type Store } from '../src/server/store/db.js';
import { BENCH_DEPLOY, benchEngines, fmt, hopTable, stampStatements, percentile, throwawayDatabase } from './support.js';

const SAMPLES = Number(process.env.BENCH_STREAMING_SAMPLES ?? 100);
const STREAMS = Number(process.env.BENCH_STREAMING_STREAMS ?? 20);
const TOKENS_PER_SECOND = Number(process.env.BENCH_STREAMING_RATE ?? 100);
const SECONDS = Number(process.env.BENCH_STREAMING_SECONDS ?? 2);

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * A floor server on loopback: a bare node:http server that answers `{}` once `handle` is done with
 * the request's body (nothing, for the bare floor); `roundTrip` times one POST to it (undici, keep-alive).
 */
async function floorServer(handle: (body: string) => Promise<void> = async () => {}) {
  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    let body = '';
    req.setEncoding('utf8').on('data', (chunk: string) => (body += chunk));
    req.on('end', () => void handle(body).then(() => res.end('{}')));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/`;
  const http = new Agent({ keepAliveTimeout: 10_000 });
  return {
    async roundTrip(): Promise<number> {
      const start = performance.now();
      const res = await request(url, { method: 'POST', body: '{"delta":"x"}', dispatcher: http });
      await res.body.text();
      return performance.now() - start;
    },
    async close(): Promise<void> {
      await http.close();
      server.close();
    },
  };
}

/**
 * Where a delta's time goes, hop by hop: the first moment each hop is seen for the sample's token,
 * after `write()` (t0). Hooks only outside the code measured: undici's and Node's diagnostics
 * channels, Fastify's handler tracing channel, the service's authenticator (wrapped on the instance),
 * the database driver (pg's Client.query, PGlite's exec: the statement whose text or parameters hold
 * the token), the committed-record listener (registered after the hub's, so it fires once the hub
 * has handed the record over), the SSE response's write, and the reader's body chunk.
 */
const HOPS = [
  ['request sent', 'ADK write() -> request on the socket (undici bodySent)'],
  ['server got it', '-> the server parsed the request head (http.server.request.start)'],
  ['auth done', '-> authentication hook done (key lookup, cached)'],
  ['handler entered', '-> body parsed, hooks run, route handler called (Fastify)'],
  ['statement sent', '-> validation, permissions, the statement handed to the driver'],
  ['committed', '-> the driver returned the committed statement (the database round trip)'],
  ['hub handed', '-> the record handed to the stream hub and its watchers (onCommitted)'],
  ['SSE written', "-> the SSE frame written to the reader's response"],
  ['reader got bytes', "-> the reader received the frame's bytes (undici body chunk)"],
  ['reader parsed', '-> the reader parsed the record (what the latency counts)'],
] as const;
type Hop = (typeof HOPS)[number][0];

function hopProbe(store: Store, app: { service: { auth: { authenticate: (header: string | undefined) => Promise<unknown> } } }) {
  let current: { token: string; at: Partial<Record<Hop, number>> } | undefined;
  const stamp = (hop: Hop) => {
    if (current && current.at[hop] === undefined) current.at[hop] = performance.now();
  };
  const holds = (x: unknown) => current !== undefined && (typeof x === 'string' ? x : Buffer.isBuffer(x) ? x.toString('latin1') : '').includes(current.token);
  const undo: Array<() => void> = [];
  const on = (channel: string, fn: (message: any) => void) => {
    diagnostics.subscribe(channel, fn);
    undo.push(() => diagnostics.unsubscribe(channel, fn));
  };
  const isDelta = (method: string, path: string) => method === 'POST' && /\/messages\/[^/]+\/deltas$/.test(path);
  on('undici:request:bodySent', ({ request }) => isDelta(request.method, request.path) && stamp('request sent'));
  on('http.server.request.start', ({ request }) => isDelta(request.method, request.url) && stamp('server got it'));
  on('tracing:fastify.request.handler:start', ({ request }) => isDelta(request.method, request.url) && stamp('handler entered'));
  on('undici:request:bodyChunkReceived', ({ chunk }) => holds(chunk) && stamp('reader got bytes'));
  const auth = app.service.auth;
  const authenticate = auth.authenticate;
  auth.authenticate = async (header) => {
    const actor = await authenticate.call(auth, header);
    if (current?.at['server got it'] !== undefined) stamp('auth done');
    return actor;
  };
  undo.push(() => (auth.authenticate = authenticate));
  const write = ServerResponse.prototype.write;
  ServerResponse.prototype.write = function (this: ServerResponse, chunk: any, ...rest: any[]) {
    if (typeof chunk === 'string' && chunk.startsWith('id: ') && holds(chunk)) stamp('SSE written');
    return (write as any).call(this, chunk, ...rest);
  } as typeof write;
  undo.push(() => (ServerResponse.prototype.write = write));
  undo.push(onCommitted(store.db, (_taskId, record) => record.kind === 'message_delta' && holds(record.data.delta) && stamp('hub handed')));
  // The database: the statement that carries the token.
  undo.push(stampStatements(store.pglite, holds, stamp));
  return {
    begin(token: string, at: number) {
      current = { token, at: {} };
      return (seenAt: number) => {
        const at0 = at;
        const stamps = current!.at;
        stamps['reader parsed'] = seenAt;
        current = undefined;
        return { start: at0, stamps };
      };
    },
    close: () => {
      for (const u of undo) u();
    },
  };
}

/**
 * The database alone (PostgreSQL): one committed one-row INSERT through the driver, no HTTP, on a
 * session that waits for the commit's WAL flush (the default) and on one that does not.
 */
async function commitFloor(url: string) {
  const connect = async (options?: string) => {
    const client = new pg.Client({ connectionString: url, options });
    await client.connect();
    return client;
  };
  const [flushed, unflushed] = [await connect(), await connect('-c synchronous_commit=off')];
  await flushed.query('CREATE TABLE bench_commit_floor (id bigserial PRIMARY KEY, body text NOT NULL)');
  const insert = async (client: pg.Client) => {
    const start = performance.now();
    await client.query('INSERT INTO bench_commit_floor (body) VALUES ($1)', ['{"delta":"x"}']);
    return performance.now() - start;
  };
  return {
    flushed: () => insert(flushed),
    unflushed: () => insert(unflushed),
    close: async () => void (await Promise.all([flushed.end(), unflushed.end()])),
  };
}

/** The write floor's server: each request INSERTs one row (committed on its own) before the answer. */
async function writeFloorServer(db: Db) {
  await sql`CREATE TABLE bench_write_floor (id bigserial PRIMARY KEY, body text NOT NULL)`.execute(db);
  return floorServer(async (body) => void (await sql`INSERT INTO bench_write_floor (body) VALUES (${body})`.execute(db)));
}

async function benchEngine(engine: Engine): Promise<void> {
  const database = engine === 'postgres' ? await throwawayDatabase() : undefined;
  const store = await openStore({ databaseUrl: database?.url });
  const key = generateSecret();
  await ensureBootstrap(store.db, key);
  const app = await buildApp({ store, config: { rateLimitPerSecond: 0 } });
  await app.listen({ host: '127.0.0.1', port: 0 });
  const url = `http://127.0.0.1:${(app.server.address() as AddressInfo).port}`;
  const adk = createAdk({ baseUrl: url, apiKey: key });
  const client = createClient({ baseUrl: url, apiKey: key });
  try {
    const bare = await floorServer();
    const writing = await writeFloorServer(store.db);
    const commits = database ? await commitFloor(database.url) : undefined;
    const deployed = await adk.call('deploy', { body: BENCH_DEPLOY as never });
    await adk.call('registerVersion', { body: { version_id: deployed.version_id } as never });
    const newTask = async () => (await adk.call('createTask', { body: { agent_name: 'default/bench-bot' } as never })).id;

    // 1. Latency: one token at a time, after a quiet spell (so it goes at once, as the first token of a
    // burst does). Each sample is taken next to one round trip to each floor server, so the floors
    // see the same load as the deltas (the machine is shared).
    const taskId = await newTask();
    const seen = new Map<string, number>();
    // Told when the reader saw a record (no polling timer to wake the event loop meanwhile).
    let onSeen = () => {};
    const see = (text: string) => {
      seen.set(text, performance.now());
      onSeen();
    };
    const stop = new AbortController();
    const reading = (async () => {
      for await (const record of client.streamTask(taskId, { signal: stop.signal })) {
        if (record.kind === 'message_delta') see(record.data.delta);
        if (record.kind === 'message') {
          const content = record.data.content;
          if (content.type === 'text') see(content.text);
        }
      }
    })().catch(() => {});
    const stream = new MessageStream(adk, taskId);
    const latencies: number[] = [];
    const loopback: number[] = [];
    const written: number[] = [];
    const flushedCommits: number[] = [];
    const unflushedCommits: number[] = [];
    const probe = hopProbe(store, app);
    const hops: Array<ReturnType<ReturnType<typeof probe.begin>>> = [];
    for (let i = 0; i < SAMPLES + 10; i++) {
      const floors = [await bare.roundTrip(), await writing.roundTrip()];
      const token = `t${i} `;
      const start = performance.now();
      const finish = probe.begin(token, start);
      stream.write(token);
      while (!seen.has(token)) await new Promise<void>((resolve) => (onSeen = resolve));
      const sample = finish(seen.get(token)!);
      if (i >= 10) {
        hops.push(sample);
        latencies.push(seen.get(token)! - start);
        loopback.push(floors[0]!);
        written.push(floors[1]!);
      }
      // Right after the delta, as the delta came right after the write floor's commit: one kind per sample, in turn.
      if (commits && i >= 10) (i % 2 ? flushedCommits : unflushedCommits).push(await (i % 2 ? commits.flushed() : commits.unflushed()));
      await sleep(STREAM_FLUSH_INTERVAL_MS + 10); // past the flush interval: the next write starts a request at once
    }
    probe.close();
    await bare.close();
    await writing.close();
    await commits?.close();
    const floor = { p50: percentile(loopback, 50), p99: percentile(loopback, 99) };
    const write = { p50: percentile(written, 50), p99: percentile(written, 99) };
    // The write alone: one POST /messages/{id}/deltas round trip, for where the time goes.
    const writes: number[] = [];
    const sofar = (await adk.call('getMessage', { params: { message_id: stream.id! } })).content;
    let offset = sofar.type === 'text' ? [...sofar.text].length : 0;
    for (let i = 0; i < SAMPLES; i++) {
      const start = performance.now();
      await adk.call('appendMessageDelta', { params: { message_id: stream.id! }, body: { delta: 'x', offset: offset++ } });
      writes.push(performance.now() - start);
    }
    await stream.done();
    stop.abort();
    await reading;
    const p50 = percentile(latencies, 50);
    const p99 = percentile(latencies, 99);
    console.log(
      `[${engine}] delta written by the ADK -> seen on the task stream: p50 ${fmt(p50, 2)} ms, p99 ${fmt(p99, 2)} ms; ` +
        `loopback round trip p50 ${fmt(floor.p50, 2)} ms, p99 ${fmt(floor.p99, 2)} ms; ratio p50 ${fmt(p50 / floor.p50, 1)}x, p99 ${fmt(p99 / floor.p99, 1)}x; ` +
        `committed write round trip p50 ${fmt(write.p50, 2)} ms, p99 ${fmt(write.p99, 2)} ms; ratio p50 ${fmt(p50 / write.p50, 1)}x, p99 ${fmt(p99 / write.p99, 1)}x; ` +
        `(the delta POST alone: p50 ${fmt(percentile(writes, 50), 2)} ms, p99 ${fmt(percentile(writes, 99), 2)} ms)`,
    );
    if (commits) {
      const flushedP50 = percentile(flushedCommits, 50);
      const unflushedP50 = percentile(unflushedCommits, 50);
      const flushWait = Math.max(0, flushedP50 - unflushedP50);
      console.log(
        `[${engine}] the database alone (pg driver, no HTTP, right after each delta): a committed one-row INSERT p50 ${fmt(flushedP50, 2)} ms, ` +
          `${fmt(unflushedP50, 2)} ms when its commit does not wait for the WAL flush; that flush wait, ${fmt(flushWait, 2)} ms ` +
          `(${fmt(flushWait / floor.p50, 1)}x the loopback round trip), is ${fmt((100 * flushWait) / p50, 0)}% of the delta's p50; ` +
          `the delta without it: ${fmt((p50 - flushWait) / floor.p50, 1)}x the loopback round trip`,
      );
    }
    console.log(`[${engine}] where a delta's time goes (median per hop):\n${hopTable(HOPS, hops, floor.p50)}`);

    // 2. Coalescing: STREAMS streams of TOKENS_PER_SECOND tokens/s for SECONDS.
    const tokens = TOKENS_PER_SECOND * SECONDS;
    const run = async (coalesced: boolean) => {
      const tasks = await Promise.all(Array.from({ length: STREAMS }, () => newTask()));
      let requests = 0;
      const cpu = process.cpuUsage();
      const started = performance.now();
      await Promise.all(
        tasks.map(async (id) => {
          // Tokens come at TOKENS_PER_SECOND by the wall clock, whatever else holds the event loop
          // (on PGlite the database shares this thread): each tick writes every token due by now.
          const begun = performance.now();
          const due = () => Math.min(tokens, Math.floor(((performance.now() - begun) * TOKENS_PER_SECOND) / 1000));
          if (coalesced) {
            const writer = new MessageStream(adk, id);
            for (let i = 0; i < tokens; ) {
              for (const upTo = due(); i < upTo; i++) writer.write(`tok${i} `);
              await sleep(5);
            }
            await writer.done();
            requests += writer.requests;
            return;
          }
          // Every token its own request, in order, as a writer without coalescing sends them.
          const message = await adk.call('createMessage', { body: { task_id: id, content: { type: 'text', text: '' }, streaming_status: 'IN_PROGRESS' } });
          requests++;
          for (let sent = 0, offset = 0; sent < tokens; ) {
            if (sent >= due()) {
              await sleep(1);
              continue;
            }
            const delta = `tok${sent} `;
            await adk.call('appendMessageDelta', { params: { message_id: message.id }, body: { delta, offset } });
            offset += delta.length;
            requests++;
            sent++;
          }
          await adk.call('updateMessage', { params: { message_id: message.id }, body: { streaming_status: 'DONE' } });
          requests++;
        }),
      );
      const used = process.cpuUsage(cpu);
      return { requests, wallMs: performance.now() - started, cpuMsPerToken: (used.user + used.system) / 1000 / (tokens * STREAMS) };
    };
    const plain = await run(false);
    const coalesced = await run(true);
    const perToken = (r: { requests: number }) => r.requests / (tokens * STREAMS);
    console.log(
      `[${engine}] ${STREAMS} streams x ${TOKENS_PER_SECOND} tokens/s x ${SECONDS} s: requests per token ${fmt(perToken(plain), 3)} without coalescing ` +
        `(${fmt(plain.wallMs / 1000, 1)} s to send them), ${fmt(perToken(coalesced), 3)} with it: ${fmt(perToken(plain) / perToken(coalesced), 1)}x fewer requests; ` +
        `process CPU per token ${fmt(plain.cpuMsPerToken, 3)} ms without, ${fmt(coalesced.cpuMsPerToken, 3)} ms with (${fmt(plain.cpuMsPerToken / coalesced.cpuMsPerToken, 1)}x)`,
    );
  } finally {
    await app.close();
    await store.close();
    await database?.drop();
  }
}

for (const engine of await benchEngines()) await benchEngine(engine);
process.exit(0);
