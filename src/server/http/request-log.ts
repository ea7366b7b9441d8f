// Every response carries its request id (X-Request-Id), and every request ends in one log line
// and one observation in the metrics.
import fp from 'fastify-plugin';
import type { ServiceMetrics } from '../metrics.js';

export const requestLog = fp<{ metrics: ServiceMetrics }>(
  async (app, { metrics }) => {
    app.addHook('onSend', async (request, reply) => {
      reply.header('X-Request-Id', request.id);
    });

    // The route is the template (ids stay out of metric labels); the path carries no query string
    // and nothing here reads a header, so no secret reaches the log.
    app.decorateRequest('keyId', '');
    app.addHook('onResponse', async (request, reply) => {
      const route = request.routeOptions.url ?? 'unmatched';
      metrics.observeRequest(request.method, route, reply.statusCode, reply.elapsedTime / 1000);
      request.log.info(
        {
          method: request.method,
          route,
          path: request.url.split('?')[0],
          status: reply.statusCode,
          duration_ms: Math.round(reply.elapsedTime * 10) / 10,
          key_id: request.keyId || null,
        },
        'request',
      );
    });
  },
  { name: 'agentctl-request-log' },
);

declare module 'fastify' {
  interface FastifyRequest {
    /** The id of the key that made the request ('' until a handler knows it), for the request log. */
    keyId: string;
  }
}
