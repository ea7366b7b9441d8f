// Who is calling: each endpoint route (its contract entry in the route's `config.endpoint`) gets
// `request.actor` before its body is read, so an unauthenticated client costs no parsing. Failed
// attempts are limited per client address, so keys cannot be guessed at speed. A request without an
// Authorization header may instead carry the web console's session cookie: it acts as the session's
// key, and when it changes something it must carry the session's CSRF token too.
import fp from 'fastify-plugin';
import type { FastifyRequest } from 'fastify';
import type { Endpoint } from '../../contract/endpoints.js';
import { CSRF_HEADER, SESSION_COOKIE } from '../../contract/console.js';
import { ANONYMOUS, type Actor } from '../auth/authenticate.js';
import { csrfTokenMatches, type SessionRef } from '../domain/sessions.js';
import { ApiError } from '../errors.js';
import { RateLimiter } from '../ratelimit.js';
import type { ServiceContext } from '../route-host.js';

export const authentication = fp<{ service: ServiceContext }>(
  async (app, { service }) => {
    const { config, auth } = service;
    const failures = new RateLimiter(config.authFailuresPerSecond, config.authFailureBurst, 'this client address: too many failed authentications');

    async function authenticate(endpoint: Endpoint, request: FastifyRequest): Promise<Actor> {
      if (endpoint.auth === false) return ANONYMOUS;
      // 'optional': a body credential (a registration token) stands in for the key.
      if (endpoint.auth === 'optional' && !request.headers.authorization) return ANONYMOUS;
      if (config.authDisabled) return auth.authDisabledActor();
      const address = request.ip ?? '';
      if (!failures.allows(address)) failures.take(address);
      const sessionToken = request.headers.authorization ? undefined : readCookie(request.headers.cookie, SESSION_COOKIE);
      try {
        if (sessionToken !== undefined) {
          const { actor, sessionId } = await auth.authenticateSession(sessionToken);
          // SameSite=Strict keeps the cookie off other sites' requests; the token is the second lock.
          if (!SAFE_METHODS.has(request.method) && !csrfTokenMatches(sessionToken, headerValue(request.headers[CSRF_HEADER])))
            throw new ApiError(
              403,
              'csrf_token_invalid',
              `A console request that changes something must carry the session's ${CSRF_HEADER} header: reload the page`,
            );
          request.consoleSession = { id: sessionId, token: sessionToken };
          return actor;
        }
        return await auth.authenticate(request.headers.authorization);
      } catch (error) {
        if (error instanceof ApiError && error.status === 401) {
          try {
            failures.take(address);
          } catch {
            // This failure used the address's last token: the next attempt hears 429.
          }
        }
        throw error;
      }
    }

    app.decorateRequest('actor', null);
    app.decorateRequest('consoleSession', undefined);
    app.addHook('onRequest', async (request) => {
      const endpoint = request.routeOptions.config.endpoint;
      if (endpoint) request.actor = await authenticate(endpoint, request);
    });
  },
  { name: 'agentctl-authentication' },
);

const SAFE_METHODS = new Set(['GET', 'HEAD', 'OPTIONS']);
const headerValue = (value: string | string[] | undefined) => (Array.isArray(value) ? value[0] : value);

/** One cookie's value from a `Cookie` header (the console's session is the only cookie the server reads). */
export function readCookie(header: string | undefined, name: string): string | undefined {
  if (!header) return undefined;
  for (const part of header.split(';')) {
    const eq = part.indexOf('=');
    if (eq > 0 && part.slice(0, eq).trim() === name) return part.slice(eq + 1).trim();
  }
  return undefined;
}

declare module 'fastify' {
  interface FastifyContextConfig {
    /** The contract's entry for an endpoint route (absent on /metrics, /openapi.json and 404s). */
    endpoint?: Endpoint;
  }
  interface FastifyRequest {
    /** Who is calling, on an endpoint route once authenticated (ANONYMOUS on open endpoints). */
    actor: Actor | null;
    /** The web console's session, when the request was authenticated by its cookie. */
    consoleSession: SessionRef | undefined;
  }
}
