// The two paths outside the endpoint table: Prometheus metrics for org admins (a scraper without a
// key uses --metrics-port instead) and the OpenAPI document, served without a key.
import type { FastifyPluginAsync } from 'fastify';
import { buildOpenApiDocument } from '../../contract/openapi.js';
import { loadPermissions } from '../auth/policy.js';
import type { ServiceContext } from '../route-host.js';

export const metricsAndOpenApi: FastifyPluginAsync<{ service: ServiceContext; serviceVersion: string }> = async (app, { service, serviceVersion }) => {
  const { config } = service;
  app.get('/metrics', async (request, reply) => {
    const actor = config.authDisabled ? await service.auth.authDisabledActor() : await service.auth.authenticate(request.headers.authorization);
    request.keyId = actor.keyId;
    if (!config.authDisabled) (await loadPermissions(service.store.db, actor)).requireOrgAdmin('read the metrics');
    const { contentType, text } = await service.metrics.expose();
    reply.type(contentType).send(text);
  });

  let openapi: string | undefined;
  app.get('/openapi.json', async (_request, reply) => {
    openapi ??= JSON.stringify(buildOpenApiDocument(serviceVersion));
    reply.type('application/json').send(openapi);
  });
};
