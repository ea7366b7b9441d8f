import Fastify, { LogController, type FastifyInstance, type FastifyRequest } from 'fastify';
import type { z } from 'zod';
import { endpoints, type Endpoint } from '../contract/endpoints.js';
import { ApiError, ValidationFailure, zodIssuesToItems, type ValidationItem } from './errors.js';
import { Authenticator, type Actor } from './auth/authenticate.js';
import { RateLimiter } from './ratelimit.js';
import { loadPermissions, unrestricted, type Permissions } from './auth/policy.js';
import { buildOpenApiDocument } from '../contract/openapi.js';
import type { Store } from './store/db.js';
import { newId } from './store/ids.js';
import { registerRoutes } from './routes/index.js';
import { RawJson, type RouteHost, type ServiceConfig, type ServiceContext } from './route-host.js';
import { ServiceMetrics } from './metrics.js';

export type { ServiceConfig, ServiceContext } from './route-host.js';

export const SERVICE_VERSION = '0.1.0';
export const BODY_LIMIT_BYTES = 1024 * 1024;

export interface AppOptions {
  store: Store;
  config?: Partial<ServiceConfig>;
  /** Fastify's logger (pino options): one line per request (see the onResponse hook); false for none. */
  logger?: boolean | object;
}

export const defaultConfig = (): ServiceConfig => ({
  imageRetentionDays: Number(process.env.AGENTCTL_IMAGE_RETENTION_DAYS ?? 30),
  rateLimitPerSecond: Number(process.env.AGENTCTL_RATE_LIMIT ?? 100),
  rateLimitBurst: Number(process.env.AGENTCTL_RATE_LIMIT_BURST ?? 500),
});

export async function buildApp(options: AppOptions): Promise<FastifyInstance & { service: ServiceContext }> {
  const config = { ...defaultConfig(), ...options.config };
  const app = Fastify({
    logger: options.logger ?? false,
    bodyLimit: BODY_LIMIT_BYTES,
    requestIdHeader: 'x-request-id',
    // One line per request, written in onResponse below, instead of Fastify's two.
    logController: new LogController({ disableRequestLogging: true }),
    genReqId: () => newId('event').replace('evt_', 'req_'),
  });
  const service: ServiceContext = { store: options.store, config, auth: new Authenticator(options.store.db), metrics: new ServiceMetrics() };
  if (options.store.pool) service.metrics.watchPool(options.store.pool);
  const limiter = new RateLimiter(config.rateLimitPerSecond, config.rateLimitBurst);
  app.decorate('service', service);
  app.addHook('onClose', async () => service.auth.close());

  // Empty JSON bodies are "no body" (some clients send the header on DELETE); malformed JSON is a 422.
  const defaultJson = app.getDefaultJsonParser('error', 'error');
  app.addContentTypeParser('application/json', { parseAs: 'string' }, (request, body, done) => {
    if (body === '' || (typeof body === 'string' && body.trim() === '')) return done(null, undefined);
    defaultJson(request, body as string, (error, value) => {
      if (error) return done(new ValidationFailure([{ loc: ['body'], msg: `Malformed JSON: ${error.message}`, type: 'json_invalid' }]), undefined);
      done(null, value);
    });
  });

  app.addHook('onSend', async (request, reply) => {
    reply.header('X-Request-Id', request.id);
  });

  // The request log line and metrics. The route is the template (ids stay out of metric labels);
  // the path carries no query string and nothing here reads a header, so no secret reaches the log.
  app.decorateRequest('keyId', '');
  app.addHook('onResponse', async (request, reply) => {
    const route = request.routeOptions.url ?? 'unmatched';
    service.metrics.observeRequest(request.method, route, reply.statusCode, reply.elapsedTime / 1000);
    request.log.info(
      { method: request.method, route, path: request.url.split('?')[0], status: reply.statusCode, duration_ms: Math.round(reply.elapsedTime * 10) / 10, key_id: request.keyId || null },
      'request',
    );
  });

  app.setNotFoundHandler((request, reply) => {
    reply.code(404).send({ detail: `No route ${request.method} ${request.url.split('?')[0]}`, code: 'not_found' });
  });

  app.setErrorHandler((error, request, reply) => {
    if (error instanceof ValidationFailure) return reply.code(422).send({ detail: error.items });
    if (error instanceof ApiError) {
      for (const [name, value] of Object.entries(error.headers)) reply.header(name, value);
      return reply.code(error.status).send({ detail: error.detail, code: error.code });
    }
    const fastifyError = error as { code?: string; statusCode?: number; message?: string };
    switch (fastifyError.code) {
      case 'FST_ERR_CTP_BODY_TOO_LARGE':
        return reply.code(413).send({ detail: `Request body is larger than ${BODY_LIMIT_BYTES} bytes`, code: 'payload_too_large' });
      case 'FST_ERR_CTP_INVALID_MEDIA_TYPE':
        return reply.code(415).send({ detail: 'Send request bodies as application/json', code: 'unsupported_media_type' });
      case 'FST_ERR_CTP_INVALID_CONTENT_LENGTH':
        return reply.code(400).send({ detail: 'Content-Length does not match the body', code: 'bad_request' });
    }
    const pgCode = (error as { code?: string }).code;
    if (pgCode === '40P01' || pgCode === '40001') {
      return reply.code(503).header('Retry-After', '1').send({ detail: 'The database was busy; retry the request', code: 'retry' });
    }
    if (fastifyError.statusCode && fastifyError.statusCode >= 400 && fastifyError.statusCode < 500) {
      return reply.code(fastifyError.statusCode).send({ detail: fastifyError.message ?? 'Bad request', code: 'bad_request' });
    }
    request.log.error({ err: error }, 'unhandled error');
    if (!options.logger) process.stderr.write(`[agentctl server] ${request.method} ${request.url}: ${(error as Error).stack ?? error}\n`);
    return reply.code(500).send({ detail: 'Internal server error', code: 'internal_error' });
  });

  const host: RouteHost = {
    handle(name, handler) {
      const e = endpoints[name] as Endpoint;
      app.route({
        method: e.method,
        url: e.path,
        handler: async (request, reply) => {
          const actor =
            e.auth === false ? ANONYMOUS : config.authDisabled ? await service.auth.authDisabledActor() : await service.auth.authenticate(request.headers.authorization);
          request.keyId = actor.keyId;
          if (actor.keyId) limiter.take(actor.keyId);
          const input = validate(e, request);
          let permissions: Promise<Permissions> | undefined;
          const access = () =>
            (permissions ??= config.authDisabled ? Promise.resolve(unrestricted(actor)) : loadPermissions(service.store.db, actor));
          const result = await handler(input as never, { actor, access, service, request, reply });
          reply.code(e.status);
          if (result instanceof RawJson) {
            reply.type('application/json');
            return result.text;
          }
          return result;
        },
      });
    },
  };
  registerRoutes(host, service);
  // Prometheus metrics for org admins (a scraper without a key uses --metrics-port instead).
  app.get('/metrics', async (request, reply) => {
    const actor = config.authDisabled ? await service.auth.authDisabledActor() : await service.auth.authenticate(request.headers.authorization);
    request.keyId = actor.keyId;
    if (!config.authDisabled) (await loadPermissions(service.store.db, actor)).requireOrgAdmin('read the metrics');
    const { contentType, text } = await service.metrics.expose();
    reply.type(contentType).send(text);
  });
  let openapi: string | undefined;
  app.get('/openapi.json', async (_request, reply) => {
    openapi ??= JSON.stringify(buildOpenApiDocument(SERVICE_VERSION));
    reply.type('application/json').send(openapi);
  });
  await app.ready();
  return app as unknown as FastifyInstance & { service: ServiceContext };
}

/** Stands in for a key on the unauthenticated endpoints. */
export const ANONYMOUS: Actor = Object.freeze({ keyId: '', orgId: '', name: 'anonymous' });

function validate(e: Endpoint, request: FastifyRequest): { params: unknown; query: unknown; body: unknown } {
  const items: ValidationItem[] = [];
  const parse = (where: 'path' | 'query' | 'body', schema: z.ZodType | undefined, value: unknown) => {
    if (!schema) return where === 'body' ? undefined : {};
    // reportInput: lets zodIssuesToItems tell a missing field (no input) from a wrong-typed one.
    const result = schema.safeParse(value, { reportInput: true });
    if (!result.success) {
      items.push(...zodIssuesToItems(where, result.error.issues));
      return undefined;
    }
    return result.data;
  };
  const params = parse('path', e.params, request.params);
  const query = parse('query', e.query, request.query);
  const body = parse('body', e.body, request.body);
  if (items.length) throw new ValidationFailure(items);
  return { params, query, body };
}

declare module 'fastify' {
  interface FastifyRequest {
    /** The id of the key that made the request ('' before authentication), for the request log. */
    keyId: string;
  }
}
