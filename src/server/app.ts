import Fastify, { LogController, type FastifyInstance, type FastifyReply, type FastifyRequest } from 'fastify';
import type { Socket } from 'node:net';
import type { z } from 'zod';
import { endpoints, type Endpoint } from '../contract/endpoints.js';
import { ApiError, httpErrorOf, ValidationFailure, zodIssuesToItems, type ValidationItem } from './errors.js';
import { DomainError } from './domain/errors.js';
import { ANONYMOUS, Authenticator, type Actor } from './auth/authenticate.js';
import { RateLimiter } from './ratelimit.js';
import { MAX_PATH_PARAM_CHARS, unsafeInputItems } from './input-guard.js';
import { loadPermissions, unrestricted, type Permissions } from './auth/policy.js';
import { buildOpenApiDocument } from '../contract/openapi.js';
import { RESPONSE_STATUSES } from '../contract/common.js';
import type { Store } from './store/db.js';
import { newId } from './store/ids.js';
import { registerRoutes } from './routes/index.js';
import { StreamHub } from './delivery/stream-hub.js';
import { claimIdempotencyKey, completeIdempotencyKey, IDEMPOTENCY_HEADER, readIdempotencyKey, releaseIdempotencyKey, requestHash } from './idempotency.js';
import { RawJson, Streamed, type RouteHost, type ServiceConfig, type ServiceContext } from './route-host.js';
import { openBlobStore, type BlobStore } from './blobs/index.js';
import { ARCHIVE_MEDIA_TYPES } from '../contract/filesystems.js';
import { DEFAULT_ARCHIVE_LIMITS } from '../sync/archive.js';
import { ServiceMetrics } from './metrics.js';
import { watchServiceGauges } from './service-gauges.js';

export type { ServiceConfig, ServiceContext } from './route-host.js';

export const SERVICE_VERSION = '0.1.0';
export const BODY_LIMIT_BYTES = 1024 * 1024;
/**
 * The longest path parameter the router accepts (bytes as sent, percent-encoded). Above every
 * name limit (255 characters, even fully percent-encoded), so a valid name is always reachable and
 * the schema's own limit answers 422; beyond it the router answers 414.
 */
export const MAX_PATH_PARAM_BYTES = MAX_PATH_PARAM_CHARS * 12;
/** Whole transactions retried in the server on a serialization failure or deadlock. */
const TRANSACTION_ATTEMPTS = 4;

export interface AppOptions {
  store: Store;
  config?: Partial<ServiceConfig>;
  /** Fastify's logger (pino options): one line per request (see the onResponse hook); false for none. */
  logger?: boolean | object;
  /** Archive storage; default: AGENTCTL_BLOB_URL, else a temporary directory removed on close. */
  blobs?: BlobStore;
  /** Registers the handlers (default: every route module); each endpoint must get exactly one. */
  registerRoutes?: (host: RouteHost, service: ServiceContext) => void;
}

/** Thrown at start-up when the endpoint table and the handlers disagree. */
export class EndpointCoverageError extends Error {}

export const defaultConfig = (): ServiceConfig => ({
  imageRetentionDays: Number(process.env.AGENTCTL_IMAGE_RETENTION_DAYS ?? 30),
  rateLimitPerSecond: Number(process.env.AGENTCTL_RATE_LIMIT ?? 100),
  rateLimitBurst: Number(process.env.AGENTCTL_RATE_LIMIT_BURST ?? 500),
  authFailuresPerSecond: Number(process.env.AGENTCTL_AUTH_FAILURE_RATE ?? 5),
  authFailureBurst: Number(process.env.AGENTCTL_AUTH_FAILURE_BURST ?? 50),
  requestTimeoutMs: Number(process.env.AGENTCTL_REQUEST_TIMEOUT_MS ?? 30_000),
  archiveMaxBytes: Number(process.env.AGENTCTL_ARCHIVE_MAX_BYTES ?? DEFAULT_ARCHIVE_LIMITS.maxBytes),
  archiveMaxFiles: Number(process.env.AGENTCTL_ARCHIVE_MAX_FILES ?? DEFAULT_ARCHIVE_LIMITS.maxFiles),
});

export async function buildApp(options: AppOptions): Promise<FastifyInstance & { service: ServiceContext }> {
  const config = { ...defaultConfig(), ...options.config };
  const requestTimeout = config.requestTimeoutMs;
  const app = Fastify({
    logger: options.logger ?? false,
    bodyLimit: BODY_LIMIT_BYTES,
    requestIdHeader: 'x-request-id',
    // One line per request, written in onResponse below, instead of Fastify's two.
    logController: new LogController({ disableRequestLogging: true }),
    genReqId: () => newId('event').replace('evt_', 'req_'),
    routerOptions: { maxParamLength: MAX_PATH_PARAM_BYTES },
    // A client gets requestTimeout for its whole request (headers and body); then Node closes the
    // connection. Checked every quarter of it, so a slow body is cut off close to the limit.
    requestTimeout,
    http: {
      requestTimeout,
      headersTimeout: Math.min(requestTimeout, 10_000),
      connectionsCheckingInterval: Math.max(50, Math.min(1000, Math.floor(requestTimeout / 4))),
    },
    // Router and socket errors in the documented shape too.
    frameworkErrors: (error, _request, fastifyReply) => {
      const reply = fastifyReply as FastifyReply;
      if (error.code === 'FST_ERR_MAX_PARAM_LENGTH') {
        return reply.code(414).send({ detail: `A path parameter is longer than ${MAX_PATH_PARAM_BYTES} bytes`, code: 'uri_too_long' });
      }
      if (error.code === 'FST_ERR_BAD_URL') {
        return reply.code(400).send({ detail: 'The path is not validly percent-encoded UTF-8', code: 'bad_url' });
      }
      return reply.code(400).send({ detail: 'Bad request', code: 'bad_request' });
    },
    clientErrorHandler: writeClientError,
  });
  const blobs = options.blobs ?? (await openBlobStore({ url: process.env.AGENTCTL_BLOB_URL }));
  const service: ServiceContext = {
    store: options.store,
    config,
    auth: new Authenticator(options.store.db),
    streamHub: new StreamHub(options.store, { pollMs: config.streamPollMs }),
    blobs,
    metrics: new ServiceMetrics(),
  };
  if (options.store.pool) service.metrics.watchPool(options.store.pool);
  watchServiceGauges(service);
  const limiter = new RateLimiter(config.rateLimitPerSecond, config.rateLimitBurst);
  const authFailures = new RateLimiter(config.authFailuresPerSecond, config.authFailureBurst, 'this client address: too many failed authentications');
  app.decorate('service', service);
  app.addHook('onClose', async () => service.auth.close());
  // Before the server waits for open connections: ends every live stream.
  app.addHook('preClose', async () => service.streamHub.close());
  // A store the app opened itself is the app's to close.
  if (!options.blobs) app.addHook('onClose', async () => blobs.close());

  // Archive uploads stream to the blob store: the handler gets the raw body, no size limit here
  // (the upload enforces its own archive limits as it reads).
  app.addContentTypeParser([...ARCHIVE_MEDIA_TYPES], (_request, payload, done) => done(null, payload));

  // Bodies are JSON: text/plain is a 415, not a string for the schema to refuse.
  app.removeContentTypeParser('text/plain');
  // Empty JSON bodies are "no body" (some clients send the header on DELETE); malformed JSON is a 422.
  const defaultJson = app.getDefaultJsonParser('error', 'error');
  app.addContentTypeParser('application/json', { parseAs: 'string' }, (request, body, done) => {
    const unsupported = unsupportedJsonEncoding(request);
    if (unsupported) return done(unsupported, undefined);
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

  app.setErrorHandler((thrown, request, reply) => {
    const error = thrown instanceof DomainError ? httpErrorOf(thrown) : thrown;
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
    if (isSerializationFailure(error)) {
      // Only after TRANSACTION_ATTEMPTS tries in the server.
      return reply.code(503).header('Retry-After', '1').send({ detail: 'The database was busy; retry the request', code: 'retry' });
    }
    if (fastifyError.statusCode && fastifyError.statusCode >= 400 && fastifyError.statusCode < 500) {
      // Only statuses the README lists: any other client error of a framework layer is a 400.
      const status = (RESPONSE_STATUSES as readonly number[]).includes(fastifyError.statusCode) ? fastifyError.statusCode : 400;
      return reply.code(status).send({ detail: fastifyError.message ?? 'Bad request', code: 'bad_request' });
    }
    request.log.error({ err: error }, 'unhandled error');
    if (!options.logger) process.stderr.write(`[agentctl server] ${request.method} ${request.url}: ${(error as Error).stack ?? error}\n`);
    return reply.code(500).send({ detail: 'Internal server error', code: 'internal_error' });
  });

  const actors = new WeakMap<FastifyRequest, Actor>();
  async function authenticate(e: Endpoint, request: FastifyRequest): Promise<Actor> {
    if (e.auth === false) return ANONYMOUS;
    // 'optional': a body credential (a registration token) stands in for the key.
    if (e.auth === 'optional' && !request.headers.authorization) return ANONYMOUS;
    if (config.authDisabled) return service.auth.authDisabledActor();
    const address = request.ip ?? '';
    if (!authFailures.allows(address)) authFailures.take(address);
    let actor: Actor;
    try {
      actor = await service.auth.authenticate(request.headers.authorization);
    } catch (error) {
      if (error instanceof ApiError && error.status === 401) {
        try {
          authFailures.take(address);
        } catch {
          // This failure used the address's last token: the next attempt hears 429.
        }
      }
      throw error;
    }
    limiter.take(actor.keyId);
    return actor;
  }

  const handled = new Set<string>();
  const host: RouteHost = {
    handle(name, handler) {
      if (handled.has(name)) throw new EndpointCoverageError(`Endpoint ${name} has two handlers`);
      handled.add(name);
      const e = endpoints[name] as Endpoint;
      app.route({
        method: e.method,
        url: e.path,
        // The key is checked before the body is read: an unauthenticated client costs no parsing.
        onRequest: async (request) => {
          actors.set(request, await authenticate(e, request));
        },
        handler: async (request, reply) => {
          const actor = actors.get(request)!;
          request.keyId = actor.keyId;
          const input = validate(e, request);
          let permissions: Promise<Permissions> | undefined;
          const access = () =>
            (permissions ??= config.authDisabled ? Promise.resolve(unrestricted(actor)) : loadPermissions(service.store.db, actor));
          const run = async (): Promise<unknown> => {
            for (let attempt = 1; ; attempt++) {
              try {
                return await handler(input as never, { actor, access, service, request, reply });
              } catch (error) {
                // A transaction PostgreSQL aborted to break a deadlock or a serialization conflict
                // changed nothing: run the handler again, a bounded number of times.
                if (!isSerializationFailure(error) || attempt >= TRANSACTION_ATTEMPTS || reply.sent) throw error;
                await new Promise((resolve) => setTimeout(resolve, 5 + Math.random() * 20 * attempt));
              }
            }
          };
          const idempotencyKey = e.idempotencyKey ? readIdempotencyKey(request.headers[IDEMPOTENCY_HEADER]) : undefined;
          if (idempotencyKey === undefined) {
            const result = await run();
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
            const result = await run();
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
  try {
    (options.registerRoutes ?? registerRoutes)(host, service);
    // An endpoint in the contract without a handler would answer 404 while openapi.json lists it.
    const unhandled = Object.keys(endpoints).filter((name) => !handled.has(name));
    if (unhandled.length) throw new EndpointCoverageError(`No handler for endpoint(s) ${unhandled.join(', ')}: add one in src/server/routes`);
  } catch (error) {
    await app.close();
    throw error;
  }
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

const isSerializationFailure = (error: unknown) => {
  const code = (error as { code?: string } | null)?.code;
  return code === '40P01' || code === '40001';
};

/** A JSON body in another charset or compressed is refused (415) rather than misread. */
function unsupportedJsonEncoding(request: FastifyRequest): ApiError | undefined {
  const encoding = request.headers['content-encoding']?.trim().toLowerCase();
  if (encoding && encoding !== 'identity') {
    return new ApiError(415, 'unsupported_media_type', `Content-Encoding ${encoding} is not supported: send the body uncompressed`);
  }
  const charset = /;\s*charset\s*=\s*"?([^";\s]*)"?/i.exec(request.headers['content-type'] ?? '')?.[1]?.toLowerCase();
  if (charset !== undefined && charset !== 'utf-8' && charset !== 'utf8') {
    return new ApiError(415, 'unsupported_media_type', `Charset ${charset} is not supported: send JSON as UTF-8`);
  }
  return undefined;
}

const STATUS_TEXT: Record<number, string> = { 400: 'Bad Request', 408: 'Request Timeout', 413: 'Payload Too Large', 431: 'Request Header Fields Too Large' };

/** Errors Node's HTTP parser reports before Fastify sees a request, in the documented shape. */
function writeClientError(this: unknown, error: Error & { code?: string }, socket: Socket): void {
  if (error.code === 'ECONNRESET' || socket.destroyed) return;
  const [status, code, detail] =
    error.code === 'ERR_HTTP_REQUEST_TIMEOUT'
      ? [408, 'request_timeout', 'The request was not received in time']
      : error.code === 'HPE_HEADER_OVERFLOW'
        ? [431, 'headers_too_large', 'The request headers are too large']
        : [400, 'bad_request', 'Malformed HTTP request'];
  const body = JSON.stringify({ detail, code });
  if (socket.writable) {
    socket.write(
      `HTTP/1.1 ${status} ${STATUS_TEXT[status]}\r\nConnection: close\r\nContent-Type: application/json; charset=utf-8\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`,
    );
  }
  socket.destroy();
}

function validate(e: Endpoint, request: FastifyRequest): { params: unknown; query: unknown; body: unknown } {
  // What no schema can say, for every endpoint alike: NUL, lone surrogates, nesting, empty filters.
  const unsafe = [
    ...unsafeInputItems('path', request.params),
    ...unsafeInputItems('query', request.query),
    ...(e.body && !e.binary?.request ? unsafeInputItems('body', request.body) : []),
  ];
  if (unsafe.length) throw new ValidationFailure(unsafe);
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

declare module 'fastify' {
  interface FastifyRequest {
    /** The id of the key that made the request ('' before authentication), for the request log. */
    keyId: string;
  }
}
