// Who is calling: each endpoint route (its contract entry in the route's `config.endpoint`) gets
// `request.actor` before its body is read, so an unauthenticated client costs no parsing. Failed
// attempts are limited per client address, so keys cannot be guessed at speed.
import fp from 'fastify-plugin';
import type { FastifyRequest } from 'fastify';
import type { Endpoint } from '../../contract/endpoints.js';
import { ANONYMOUS, type Actor } from '../auth/authenticate.js';
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
      try {
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
    app.addHook('onRequest', async (request) => {
      const endpoint = request.routeOptions.config.endpoint;
      if (endpoint) request.actor = await authenticate(endpoint, request);
    });
  },
  { name: 'agentctl-authentication' },
);

declare module 'fastify' {
  interface FastifyContextConfig {
    /** The contract's entry for an endpoint route (absent on /metrics, /openapi.json and 404s). */
    endpoint?: Endpoint;
  }
  interface FastifyRequest {
    /** Who is calling, on an endpoint route once authenticated (ANONYMOUS on open endpoints). */
    actor: Actor | null;
  }
}
