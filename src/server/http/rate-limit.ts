// Requests per API key: a token bucket per key id (src/server/ratelimit.ts), taken once a request
// is authenticated; open endpoints and a server without authentication are not limited here.
import fp from 'fastify-plugin';
import { RateLimiter } from '../ratelimit.js';
import type { ServiceConfig } from '../route-host.js';

export const rateLimit = fp<{ config: ServiceConfig }>(
  async (app, { config }) => {
    const limiter = new RateLimiter(config.rateLimitPerSecond, config.rateLimitBurst);
    // After authentication's onRequest hook: only a real key has a key id.
    app.addHook('onRequest', async (request) => {
      if (request.actor?.keyId) limiter.take(request.actor.keyId);
    });
  },
  { name: 'agentctl-rate-limit', dependencies: ['agentctl-authentication'] },
);
