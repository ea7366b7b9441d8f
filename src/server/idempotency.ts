// Idempotency-Key for the creating POSTs (routes marked `idempotencyKey` in the contract). One
// record per (key id, route, Idempotency-Key): the first request claims it, runs, and stores its
// response; a retry with the same body gets that response again, a different body a 422. A
// concurrent duplicate finds the claim (primary key) and waits for the winner's response.
import { createHash } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import type { FastifyReply } from 'fastify';
import { sql } from 'kysely';
import type { Db } from './store/db.js';
import { executePrepared } from './store/prepared.js';
import { conflict, invalid } from './domain/errors.js';
import { RawJson } from './route-host.js';

export const IDEMPOTENCY_HEADER = 'idempotency-key';
/** How long a stored response answers retries. */
export const IDEMPOTENCY_TTL_HOURS = 24;
/** How long a duplicate waits for the first request to finish before giving up with a 409. */
const WAIT_FOR_WINNER_MS = 30_000;
const POLL_MS = 25;

export type Claim = { kind: 'claimed' } | { kind: 'replay'; status: number; body: string };

export interface IdempotencyScope {
  keyId: string;
  route: string;
  key: string;
  requestHash: string;
}

/** The header's value, checked: 1..255 visible ASCII characters; undefined when absent. */
export function readIdempotencyKey(header: string | string[] | undefined): string | undefined {
  if (header === undefined) return undefined;
  const value = Array.isArray(header) ? header[0] : header;
  if (value === undefined || !/^[\x21-\x7e]{1,255}$/.test(value)) {
    throw invalid(['header', IDEMPOTENCY_HEADER], 'Idempotency-Key must be 1 to 255 visible ASCII characters');
  }
  return value;
}

/** A hash of what the request asks for (path parameters and body), independent of key order in the JSON. */
export function requestHash(params: unknown, body: unknown): string {
  return createHash('sha256').update(canonicalJson({ params, body })).digest('hex');
}

function canonicalJson(value: unknown): string {
  if (value === null || typeof value !== 'object') return JSON.stringify(value) ?? 'null';
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  const entries = Object.entries(value as Record<string, unknown>)
    .filter(([, v]) => v !== undefined)
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonicalJson(v)}`).join(',')}}`;
}

/**
 * The answer to a request that carries an Idempotency-Key: for a retry, the response stored for the
 * first request (with `Idempotent-Replayed: true`); else `run`'s, stored before it is sent. A run
 * that fails releases the key, so a retry runs again.
 */
export async function answerIdempotently(db: Db, scope: IdempotencyScope, status: number, reply: FastifyReply, run: () => Promise<unknown>): Promise<string> {
  const claim = await claimIdempotencyKey(db, scope);
  reply.type('application/json');
  if (claim.kind === 'replay') {
    reply.code(claim.status).header('Idempotent-Replayed', 'true');
    return claim.body;
  }
  let text: string;
  try {
    const result = await run();
    text = result instanceof RawJson ? result.text : JSON.stringify(result);
  } catch (error) {
    await releaseIdempotencyKey(db, scope);
    throw error;
  }
  await completeIdempotencyKey(db, scope, status, text);
  reply.code(status);
  return text;
}

/**
 * Claims the key for this request, or returns the response stored for it. A record older than the
 * TTL is taken over as if absent.
 */
export async function claimIdempotencyKey(db: Db, scope: IdempotencyScope): Promise<Claim> {
  const deadline = Date.now() + WAIT_FOR_WINNER_MS;
  for (;;) {
    // Prepared on PGlite (store/prepared.ts): this and the completion go with every creating POST.
    const claimed = await executePrepared(
      db,
      sql<{ claimed: boolean }>`
      INSERT INTO idempotency_records (key_id, route, idempotency_key, request_hash)
      VALUES (${scope.keyId}, ${scope.route}, ${scope.key}, ${scope.requestHash})
      ON CONFLICT (key_id, route, idempotency_key) DO UPDATE
        SET request_hash = EXCLUDED.request_hash, status = NULL, response = NULL, created_at = now()
        WHERE idempotency_records.created_at < now() - make_interval(hours => ${IDEMPOTENCY_TTL_HOURS})
      RETURNING true AS claimed`,
    );
    if (claimed.rows.length) return { kind: 'claimed' };
    const existing = await db
      .selectFrom('idempotency_records')
      .select(['request_hash', 'status', 'response'])
      .where('key_id', '=', scope.keyId)
      .where('route', '=', scope.route)
      .where('idempotency_key', '=', scope.key)
      .executeTakeFirst();
    // Gone: the first request failed and released the key; claim it again.
    if (!existing) continue;
    if (existing.request_hash !== scope.requestHash) {
      throw invalid(['header', IDEMPOTENCY_HEADER], 'This Idempotency-Key was already used with a different request body', 'idempotency_key_reused');
    }
    if (existing.status !== null && existing.response !== null) return { kind: 'replay', status: existing.status, body: existing.response };
    if (Date.now() > deadline) {
      throw conflict('idempotency_key_in_use', 'A request with this Idempotency-Key is still in progress; retry later');
    }
    await sleep(POLL_MS);
  }
}

/** Stores the first response for retries to get. */
export async function completeIdempotencyKey(db: Db, scope: IdempotencyScope, status: number, body: string): Promise<void> {
  await executePrepared(
    db,
    sql`UPDATE idempotency_records SET status = ${status}, response = ${body}
      WHERE key_id = ${scope.keyId} AND route = ${scope.route} AND idempotency_key = ${scope.key}`,
  );
}

/** The request failed: nothing was created, so a retry runs again. */
export async function releaseIdempotencyKey(db: Db, scope: IdempotencyScope): Promise<void> {
  await db
    .deleteFrom('idempotency_records')
    .where('key_id', '=', scope.keyId)
    .where('route', '=', scope.route)
    .where('idempotency_key', '=', scope.key)
    .where('status', 'is', null)
    .execute();
}

/** Deletes records past the TTL (they no longer answer retries); returns how many went. */
export async function sweepIdempotencyRecords(db: Db): Promise<number> {
  const result = await db
    .deleteFrom('idempotency_records')
    .where('created_at', '<', sql<Date>`now() - make_interval(hours => ${IDEMPOTENCY_TTL_HOURS})`)
    .executeTakeFirst();
  return Number(result.numDeletedRows);
}
