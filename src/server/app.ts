import Fastify, { type FastifyInstance, type FastifyRequest } from 'fastify';
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
import { StreamHub } from './delivery/stream-hub.js';
import { claimIdempotencyKey, completeIdempotencyKey, IDEMPOTENCY_HEADER, readIdempotencyKey, releaseIdempotencyKey, requestHash } from './idempotency.js';
import { RawJson, Streamed, type RouteHost, type ServiceConfig, type ServiceContext } from './route-host.js';
import { openBlobStore, type BlobStore } from './blobs/index.js';
import { ARCHIVE_MEDIA_TYPES } from '../contract/filesystems.js';
import { DEFAULT_ARCHIVE_LIMITS } from '../sync/archive.js';

export type { ServiceConfig, ServiceContext } from './route-host.js';

export const SERVICE_VERSION = '0.1.0';
export const BODY_LIMIT_BYTES = 1024 * 1024;

export interface AppOptions {
  store: Store;
  config?: Partial<ServiceConfig>;
  logger?: boolean | object;
  /** Archive storage; default: AGENTCTL_BLOB_URL, else a temporary directory removed on close. */
  blobs?: BlobStore;
}

export const defaultConfig = (): ServiceConfig => ({
  imageRetentionDays: Number(process.env.AGENTCTL_IMAGE_RETENTION_DAYS ?? 30),
  rateLimitPerSecond: Number(process.env.AGENTCTL_RATE_LIMIT ?? 100),
  rateLimitBurst: Number(process.env.AGENTCTL_RATE_LIMIT_BURST ?? 500),
  archiveMaxBytes: Number(process.env.AGENTCTL_ARCHIVE_MAX_BYTES ?? DEFAULT_ARCHIVE_LIMITS.maxBytes),
  archiveMaxFiles: Number(process.env.AGENTCTL_ARCHIVE_MAX_FILES ?? DEFAULT_ARCHIVE_LIMITS.maxFiles),
});

export async function buildApp(options: AppOptions): Promise<FastifyInstance & { service: ServiceContext }> {
  const config = { ...defaultConfig(), ...options.config };
  const app = Fastify({
    logger: options.logger ?? false,
    bodyLimit: BODY_LIMIT_BYTES,
    requestIdHeader: 'x-request-id',
    genReqId: () => newId('event').replace('evt_', 'req_'),
  });
  const blobs = options.blobs ?? (await openBlobStore({ url: process.env.AGENTCTL_BLOB_URL }));
  const service: ServiceContext = {
    store: options.store,
    config,
    auth: new Authenticator(options.store.db),
    streamHub: new StreamHub(options.store, { pollMs: config.streamPollMs }),
    blobs,
  };
  const limiter = new RateLimiter(config.rateLimitPerSecond, config.rateLimitBurst);
  app.decorate('service', service);
  app.addHook('onClose', async () => service.auth.close());
  // Before the server waits for open connections: ends every live stream.
  app.addHook('preClose', async () => service.streamHub.close());
  // A store the app opened itself is the app's to close.
  if (!options.blobs) app.addHook('onClose', async () => blobs.close());

  // Archive uploads stream to the blob store: the handler gets the raw body, no size limit here
  // (the upload enforces its own archive limits as it reads).
  app.addContentTypeParser([...ARCHIVE_MEDIA_TYPES], (_request, payload, done) => done(null, payload));

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
          // auth 'optional': anonymous without an Authorization header; the handler then requires its body credential.
          const anonymous = e.auth === false || (e.auth === 'optional' && !request.headers.authorization && !config.authDisabled);
          const actor = anonymous
            ? ANONYMOUS
            : config.authDisabled
              ? await service.auth.authDisabledActor()
              : await service.auth.authenticate(request.headers.authorization);
          if (actor.keyId) limiter.take(actor.keyId);
          const input = validate(e, request);
          let permissions: Promise<Permissions> | undefined;
          const access = () =>
            (permissions ??= config.authDisabled ? Promise.resolve(unrestricted(actor)) : loadPermissions(service.store.db, actor));
          const idempotencyKey = e.idempotencyKey ? readIdempotencyKey(request.headers[IDEMPOTENCY_HEADER]) : undefined;
          if (idempotencyKey === undefined) {
            const result = await handler(input as never, { actor, access, service, request, reply });
            reply.code(e.status);
            if (result instanceof Streamed) {
              reply.code(result.status).headers(result.headers);
              return reply.send(result.status === 304 ? undefined : result.body);
            }
            if (result instanceof RawJson) {
              reply.type('application/json');
              return result.text;
            }
            return result;
          }
          const scope = { keyId: actor.keyId, route: name, key: idempotencyKey, requestHash: requestHash(request.params, request.body) };
          const claim = await claimIdempotencyKey(service.store.db, scope);
          reply.type('application/json');
          if (claim.kind === 'replay') {
            reply.code(claim.status).header('Idempotent-Replayed', 'true');
            return claim.body;
          }
          let text: string;
          try {
            const result = await handler(input as never, { actor, access, service, request, reply });
            text = result instanceof RawJson ? result.text : JSON.stringify(result);
          } catch (error) {
            await releaseIdempotencyKey(service.store.db, scope);
            throw error;
          }
          await completeIdempotencyKey(service.store.db, scope, e.status, text);
          reply.code(e.status);
          return text;
        },
      });
    },
  };
  registerRoutes(host, service);
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
  const body = e.binary?.request ? undefined : parse('body', e.body, request.body);
  if (items.length) throw new ValidationFailure(items);
  return { params, query, body };
}
