// The endpoints of the contract as Fastify routes. A handler (src/server/routes/) gets its input
// validated and its caller known; this file runs it (again, on a transaction conflict), answers
// idempotently when the endpoint takes an Idempotency-Key, and sends what it returned.
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { endpoints, type Endpoint, type EndpointName } from '../../contract/endpoints.js';
import type { Actor } from '../auth/authenticate.js';
import { loadPermissions, unrestricted, type Permissions } from '../auth/policy.js';
import { answerIdempotently, IDEMPOTENCY_HEADER, readIdempotencyKey, requestHash } from '../idempotency.js';
import { RawJson, Streamed, type RouteHost, type ServiceContext } from '../route-host.js';
import { withTransactionRetries } from './transaction-retries.js';
import { validateInput } from './validation.js';
import { inRequestSpan, noteTrace } from '../tracing/request-spans.js';

/** Thrown at start-up when the endpoint table and the handlers disagree. */
export class EndpointCoverageError extends Error {}

type Handler = Parameters<RouteHost['handle']>[1];

/**
 * Registers the handlers `register` gives as routes; every endpoint of the contract must get
 * exactly one, since one without a handler would answer 404 while openapi.json lists it.
 */
export function registerEndpoints(app: FastifyInstance, service: ServiceContext, register: (host: RouteHost, service: ServiceContext) => void): void {
  const handled = new Set<string>();
  register(
    {
      handle(name, handler) {
        if (handled.has(name)) throw new EndpointCoverageError(`Endpoint ${name} has two handlers`);
        handled.add(name);
        const endpoint = endpoints[name] as Endpoint;
        // `config.endpoint` is what the authentication hook reads.
        app.route({ method: endpoint.method, url: endpoint.path, config: { endpoint }, handler: endpointHandler(name, endpoint, handler as Handler, service) });
      },
    },
    service,
  );
  const unhandled = Object.keys(endpoints).filter((name) => !handled.has(name));
  if (unhandled.length)
    throw new EndpointCoverageError(
      `No handler for ${unhandled.length === 1 ? 'endpoint' : 'endpoints'} ${unhandled.join(', ')}: add one in src/server/routes`,
    );
}

function endpointHandler(name: EndpointName, endpoint: Endpoint, handler: Handler, service: ServiceContext) {
  const serve = async (request: FastifyRequest, reply: FastifyReply): Promise<unknown> => {
    const actor = request.actor!;
    // From here on the request log names the key.
    request.keyId = actor.keyId;
    const input = validateInput(endpoint, request);
    if (request.traceSpan) noteTrace(service, request, actor.orgId, input);
    const call = { actor, access: permissionsOnFirstUse(service, actor), service, request, reply };
    const run = () => withTransactionRetries(reply, () => handler(input as never, call));
    const idempotencyKey = endpoint.idempotencyKey ? readIdempotencyKey(request.headers[IDEMPOTENCY_HEADER]) : undefined;
    if (idempotencyKey !== undefined) {
      const scope = { keyId: actor.keyId, route: name, key: idempotencyKey, requestHash: requestHash(request.params, request.body) };
      return answerIdempotently(service.store.db, scope, endpoint.status, reply, run);
    }
    return send(reply, endpoint.status, await run());
  };
  // Traced: the handler runs in the request's span (tracing/request-spans.ts), its database work and deliveries under it.
  return (request: FastifyRequest, reply: FastifyReply): Promise<unknown> =>
    service.tracing ? inRequestSpan(service.tracing, request, reply, () => serve(request, reply)) : serve(request, reply);
}

/** What a handler returned, as the response: JSON with the endpoint's status, unless it says otherwise. */
function send(reply: FastifyReply, status: number, result: unknown): unknown {
  reply.code(status);
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

/** The caller's permissions, loaded when a handler first asks (many never do). */
function permissionsOnFirstUse(service: ServiceContext, actor: Actor): () => Promise<Permissions> {
  let permissions: Promise<Permissions> | undefined;
  return () => (permissions ??= service.config.authDisabled ? Promise.resolve(unrestricted(actor)) : loadPermissions(service.store.db, actor));
}
