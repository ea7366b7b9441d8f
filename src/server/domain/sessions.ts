// The web console's sessions (README "Web console"): a sign-in exchanges an API key, or a one-time
// token made with one, for a session record; the browser keeps only the session's random token in
// an HttpOnly cookie. The session acts as its key on every request: the key's permissions, and the
// key's revocation or expiry ends it.
import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import { AGENT_PERMISSIONS, SESSION_HOURS, SIGN_IN_TOKEN_SECONDS, type Access, type ConsoleSession } from '../../contract/console.js';
import type { Actor, Authenticator } from '../auth/authenticate.js';
import { loadPermissions, type Permissions } from '../auth/policy.js';
import { hashSecret } from '../auth/secrets.js';
import type { Db } from '../store/db.js';
import { newId } from '../store/ids.js';
import { iso } from '../store/mappers.js';
import { agentById } from './lookup.js';
import { forbidden, invalid, missing, unauthenticated } from './errors.js';
import { whoami } from './keys.js';

/** A session's CSRF token: derived from its cookie token, so nothing more is stored and a reload can ask for it again. */
export const csrfTokenFor = (sessionToken: string) => createHash('sha256').update(`agentctl-csrf\0${sessionToken}`).digest('base64url');

/** Whether `header` is the CSRF token of the session `sessionToken` (compared in constant time). */
export function csrfTokenMatches(sessionToken: string, header: string | undefined): boolean {
  if (!header) return false;
  const expected = Buffer.from(csrfTokenFor(sessionToken));
  const given = Buffer.from(header);
  return given.length === expected.length && timingSafeEqual(given, expected);
}

const newToken = () => randomBytes(32).toString('base64url');
const TOKEN_PATTERN = /^[A-Za-z0-9_-]{43}$/;

/** The request's session, as the authentication hook found it. */
export interface SessionRef {
  id: string;
  token: string;
}

/**
 * `POST /sessions`: one of `api_key` (checked as a bearer key is) or `token` (a one-time sign-in
 * token, spent here). Runtime keys (an agent process's own) cannot open a console.
 */
export async function signIn(
  db: Db,
  auth: Authenticator,
  input: { api_key?: string; token?: string },
  userAgent: string,
): Promise<{ session: ConsoleSession; token: string }> {
  if ((input.api_key === undefined) === (input.token === undefined)) throw invalid(['body'], 'Send exactly one of `api_key` and `token`');
  let actor: Actor;
  if (input.api_key !== undefined) {
    actor = await auth.authenticate(`Bearer ${input.api_key}`);
  } else {
    const spent = TOKEN_PATTERN.test(input.token!)
      ? await db
          .updateTable('console_sign_in_tokens')
          .set({ used_at: new Date() })
          .where('token_hash', '=', hashSecret(input.token!))
          .where('used_at', 'is', null)
          .where('expires_at', '>', new Date())
          .returning('key_id')
          .executeTakeFirst()
      : undefined;
    if (!spent) throw unauthenticated('sign_in_token_invalid', 'This sign-in link is unknown, expired or already used: run `agentctl open` again');
    actor = await auth.authenticateKeyId(spent.key_id);
  }
  if (actor.runtimeAgentId !== undefined) throw forbidden('A runtime key (an agent process’s own) cannot sign in to the console');
  const key = await db.selectFrom('api_keys').select('expires_at').where('id', '=', actor.keyId).executeTakeFirstOrThrow();
  const longest = new Date(Date.now() + SESSION_HOURS * 3600_000);
  const expiresAt = key.expires_at && key.expires_at < longest ? key.expires_at : longest;
  const token = newToken();
  const id = newId('consoleSession');
  await db
    .insertInto('console_sessions')
    .values({ id, key_id: actor.keyId, token_hash: hashSecret(token), user_agent: userAgent.slice(0, 500), expires_at: expiresAt })
    .execute();
  return { session: await describeSession(db, await loadPermissions(db, actor), { id, token }), token };
}

/** `GET /sessions/current`. */
export async function describeSession(db: Db, perms: Permissions, ref: SessionRef | undefined): Promise<ConsoleSession> {
  if (!ref) throw missing('This request carries no console session (it was made with an API key)', 'no_session');
  const row = await db.selectFrom('console_sessions').select(['id', 'created_at', 'expires_at']).where('id', '=', ref.id).executeTakeFirst();
  if (!row) throw missing('The console session has ended', 'no_session');
  return {
    id: row.id,
    key: await whoami(db, perms.actor),
    org_admin: perms.isOrgAdmin,
    csrf_token: csrfTokenFor(ref.token),
    created_at: iso(row.created_at)!,
    expires_at: iso(row.expires_at)!,
  };
}

/** `DELETE /sessions/current`: sign-out. */
export async function endSession(db: Db, ref: SessionRef | undefined): Promise<{ id: string; message: string }> {
  if (!ref) throw missing('This request carries no console session (it was made with an API key)', 'no_session');
  await db.updateTable('console_sessions').set({ ended_at: new Date() }).where('id', '=', ref.id).where('ended_at', 'is', null).execute();
  return { id: ref.id, message: 'Signed out' };
}

/** `POST /sessions/sign-in-tokens`: a one-time link for the calling key, used by `agentctl open`. */
export async function createSignInToken(db: Db, actor: Actor): Promise<{ token: string; expires_at: string; path: string }> {
  if (!actor.keyId) throw unauthenticated('unauthorized', 'This request carries no API key');
  if (actor.runtimeAgentId !== undefined) throw forbidden('A runtime key (an agent process’s own) cannot sign in to the console');
  const token = newToken();
  const expiresAt = new Date(Date.now() + SIGN_IN_TOKEN_SECONDS * 1000);
  // Spent and expired tokens of this key go as new ones are made: the table stays small.
  await db
    .deleteFrom('console_sign_in_tokens')
    .where('key_id', '=', actor.keyId)
    .where((eb) => eb.or([eb('used_at', 'is not', null), eb('expires_at', '<', new Date())]))
    .execute();
  await db
    .insertInto('console_sign_in_tokens')
    .values({ token_hash: hashSecret(token), key_id: actor.keyId, expires_at: expiresAt })
    .execute();
  return { token, expires_at: iso(expiresAt)!, path: `/console/sign-in?token=${token}` };
}

/** `GET /access`: what the console offers this key (org administration; its permissions on an agent). */
export async function access(db: Db, perms: Permissions, agentId: string | undefined): Promise<Access> {
  let agent: Access['agent'] = null;
  if (agentId !== undefined) {
    const row = await agentById(db, perms, 'discover', agentId);
    const ref = { type: 'agent' as const, id: row.id, namespaceId: row.namespace_id };
    agent = { id: row.id, permissions: AGENT_PERMISSIONS.filter((p) => perms.can(p, ref)) };
  }
  return { org_admin: perms.isOrgAdmin, agent };
}
