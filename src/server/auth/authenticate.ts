import { sql } from 'kysely';
import type { Db } from '../store/db.js';
import { ApiError } from '../errors.js';
import { hashSecret, isWellFormedSecret } from './secrets.js';
import { generationOf } from './invalidation.js';
import { statementShapes } from '../store/prepared.js';
import { RefreshAhead } from './refresh-ahead.js';

/** Who is calling: an API key acting as a service user of its org. */
export interface Actor {
  keyId: string;
  orgId: string;
  name: string;
  /** A runtime key (an agent process's own key): the one agent it may act for. */
  runtimeAgentId?: string;
}

/** Stands in for a key on the unauthenticated endpoints. */
export const ANONYMOUS: Actor = Object.freeze({ keyId: '', orgId: '', name: 'anonymous' });

const unauthorized = (detail: string) => new ApiError(401, 'unauthorized', detail, { 'WWW-Authenticate': 'Bearer' });

/** How long a key lookup is trusted: revocation reaches every replica within this window. */
const CACHE_TTL_MS = 1000;
/** A key used when its entry is older than this is looked up again in the background. */
const REFRESH_AHEAD_MS = CACHE_TTL_MS / 2;
const LAST_USED_FLUSH_MS = 5000;

type CachedKey = { actor: Actor | null; expiresAt: number | null; cachedAt: number; generation: number; reason: string };

/**
 * Resolves bearer tokens to actors. Lookups are cached for at most one second, so a revoked or
 * rotated-away key stops working on every replica within that; `last_used_at` is written in
 * batches rather than on every request.
 */
export class Authenticator {
  private cache = new Map<string, CachedKey>();
  /**
   * Unknown and revoked keys, apart from the good ones: a client trying many made-up keys fills
   * only this map, so it can neither evict real keys' entries nor make each retry a lookup.
   */
  private negative = new Map<string, CachedKey>();
  private flights = new Map<string, { promise: Promise<CachedKey>; generation: number }>();
  private ahead = new RefreshAhead();
  /** Key id -> when it was last used (ms), written to the database in batches. */
  private used = new Map<string, number>();
  private timer: NodeJS.Timeout;
  private authDisabledOrg: { orgId: string; cachedAt: number } | undefined;

  constructor(
    private db: Db,
    /** Entries per cache (good keys; unknown and revoked ones) before it starts over. */
    private maxEntries = 10_000,
  ) {
    this.timer = setInterval(() => void this.flushLastUsed(), LAST_USED_FLUSH_MS);
    this.timer.unref();
  }

  async authenticate(header: string | undefined): Promise<Actor> {
    if (!header) throw unauthorized('Missing API key: send `Authorization: Bearer <key>`');
    const match = /^Bearer\s+(\S+)\s*$/i.exec(header);
    if (!match) throw unauthorized('Malformed Authorization header: expected `Bearer <key>`');
    const secret = match[1];
    if (!isWellFormedSecret(secret)) throw unauthorized('Invalid API key');
    const hash = hashSecret(secret);
    const now = Date.now();
    const generation = generationOf(this.db);
    let entry = this.cache.get(hash) ?? this.negative.get(hash);
    if (!entry || now - entry.cachedAt > CACHE_TTL_MS || entry.generation !== generation) {
      entry = await this.refresh(hash, now, generation);
    } else if (entry.actor && now - entry.cachedAt > REFRESH_AHEAD_MS && !this.flights.has(hash)) {
      // A key in use is looked up again before its entry expires, off the request's path: a writer
      // streaming deltas never waits for its key. The entry still counts from its lookup's start.
      this.ahead.schedule(hash, () => this.refresh(hash, now, generation));
    }
    if (!entry.actor) throw unauthorized(entry.reason);
    if (entry.expiresAt !== null && entry.expiresAt <= now) throw unauthorized('API key has expired');
    this.used.set(entry.actor.keyId, now);
    return entry.actor;
  }

  /**
   * A console session's cookie token -> the actor of the key that opened it, and the session's id.
   * Read with the key on every request (no cache): a revoked or expired key, an ended or expired
   * session answers 401 at once.
   */
  async authenticateSession(token: string): Promise<{ actor: Actor; sessionId: string }> {
    if (!/^[A-Za-z0-9_-]{43}$/.test(token)) throw unauthorized('Invalid console session: sign in again');
    const row = await this.db
      .selectFrom('console_sessions as s')
      .innerJoin('api_keys as k', 'k.id', 's.key_id')
      .select([
        's.id as session_id',
        's.expires_at as session_expires_at',
        's.ended_at',
        'k.id',
        'k.org_id',
        'k.name',
        'k.expires_at',
        'k.revoked_at',
        'k.runtime_agent_id',
      ])
      .where('s.token_hash', '=', hashSecret(token))
      .executeTakeFirst();
    const now = Date.now();
    if (!row || row.ended_at || new Date(row.session_expires_at).getTime() <= now) throw unauthorized('The console session has ended: sign in again');
    if (row.revoked_at) throw unauthorized('The API key of this console session has been revoked: the session has ended');
    if (row.expires_at && new Date(row.expires_at).getTime() <= now) throw unauthorized('The API key of this console session has expired');
    this.used.set(row.id, now);
    return {
      actor: { keyId: row.id, orgId: row.org_id, name: row.name, ...(row.runtime_agent_id ? { runtimeAgentId: row.runtime_agent_id } : {}) },
      sessionId: row.session_id,
    };
  }

  /** The actor of a key by its id (a spent sign-in token names one): 401 when revoked or expired. */
  async authenticateKeyId(keyId: string): Promise<Actor> {
    const row = await this.db
      .selectFrom('api_keys')
      .select(['id', 'org_id', 'name', 'expires_at', 'revoked_at', 'runtime_agent_id'])
      .where('id', '=', keyId)
      .executeTakeFirst();
    if (!row) throw unauthorized('Invalid API key');
    if (row.revoked_at) throw unauthorized('API key has been revoked');
    if (row.expires_at && new Date(row.expires_at).getTime() <= Date.now()) throw unauthorized('API key has expired');
    return { keyId: row.id, orgId: row.org_id, name: row.name, ...(row.runtime_agent_id ? { runtimeAgentId: row.runtime_agent_id } : {}) };
  }

  /** Drops cached lookups now (this process's own revocations take effect at once). */
  invalidate(): void {
    this.cache.clear();
    this.negative.clear();
  }

  /** Looks the key up and caches the answer; concurrent lookups of one key share one. */
  private refresh(hash: string, now: number, generation: number): Promise<CachedKey> {
    let flight = this.flights.get(hash);
    if (!flight || flight.generation !== generation) {
      const promise = this.lookup(hash, now, generation).then((entry) => {
        const cache = entry.actor ? this.cache : this.negative;
        if (cache.size >= this.maxEntries) cache.clear();
        (entry.actor ? this.negative : this.cache).delete(hash);
        cache.set(hash, entry);
        return entry;
      });
      flight = { promise, generation };
      this.flights.set(hash, flight);
      const done = () => {
        if (this.flights.get(hash)?.promise === promise) this.flights.delete(hash);
      };
      promise.then(done, done);
    }
    return flight.promise;
  }

  private async lookup(hash: string, now: number, generation: number): Promise<CachedKey> {
    // Prepared on PGlite, compiled once (store/prepared.ts): each key is looked up again every second it is used.
    const [row] = (
      await statementShapes.execute(this.db, 'key', [hash], () =>
        this.db.selectFrom('api_keys').select(['id', 'org_id', 'name', 'expires_at', 'revoked_at', 'runtime_agent_id']).where('key_hash', '=', hash),
      )
    ).rows;
    if (!row) return { actor: null, expiresAt: null, cachedAt: now, generation, reason: 'Invalid API key' };
    if (row.revoked_at) return { actor: null, expiresAt: null, cachedAt: now, generation, reason: 'API key has been revoked' };
    return {
      actor: { keyId: row.id, orgId: row.org_id, name: row.name, ...(row.runtime_agent_id ? { runtimeAgentId: row.runtime_agent_id } : {}) },
      expiresAt: row.expires_at ? new Date(row.expires_at).getTime() : null,
      cachedAt: now,
      generation,
      reason: '',
    };
  }

  async flushLastUsed(): Promise<void> {
    if (this.used.size === 0) return;
    const ids = [...this.used.keys()];
    const times = ids.map((id) => new Date(this.used.get(id)!).toISOString());
    this.used.clear();
    try {
      await sql`
        UPDATE api_keys k SET last_used_at = u.used_at
        FROM unnest(${ids}::text[], ${times}::timestamptz[]) AS u(id, used_at)
        WHERE k.id = u.id AND (k.last_used_at IS NULL OR k.last_used_at < u.used_at)`.execute(this.db);
    } catch {
      // Best effort: a missed last_used_at update is not worth failing anything for.
    }
  }

  /**
   * The actor when authentication is switched off (the benchmark baseline): acts in the first org,
   * as no key.
   */
  async authDisabledActor(): Promise<Actor> {
    const now = Date.now();
    if (!this.authDisabledOrg || now - this.authDisabledOrg.cachedAt > CACHE_TTL_MS) {
      const org = await this.db.selectFrom('orgs').select('id').orderBy('created_at').orderBy('id').executeTakeFirst();
      this.authDisabledOrg = { orgId: org?.id ?? '', cachedAt: now };
    }
    return { keyId: '', orgId: this.authDisabledOrg.orgId, name: 'authentication disabled' };
  }

  async close(): Promise<void> {
    clearInterval(this.timer);
    await this.flushLastUsed();
  }
}
