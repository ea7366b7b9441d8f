// Every error a request ends in, answered in the documented shape: `{detail, code}` (or a 422's
// `{detail: [items]}`) with the status and headers src/server/errors.ts chose for it.
import fp from 'fastify-plugin';
import type { FastifyReply } from 'fastify';
import { type ApiError, httpErrorOfThrown, INTERNAL_ERROR, noRoute, VALIDATION_STATUS, ValidationFailure } from '../errors.js';

export function sendError(reply: FastifyReply, error: ApiError): FastifyReply {
  for (const [name, value] of Object.entries(error.headers)) reply.header(name, value);
  return reply.code(error.status).send({ detail: error.detail, code: error.code });
}

export interface ErrorHandlerOptions {
  /** Write an unhandled error's stack to stderr (when there is no logger to take it). */
  stackToStderr: boolean;
}

export const errorHandler = fp<ErrorHandlerOptions>(
  async (app, { stackToStderr }) => {
    app.setNotFoundHandler((request, reply) => {
      sendError(reply, noRoute(request.method, request.url.split('?')[0]));
    });

    app.setErrorHandler((thrown, request, reply) => {
      const error = httpErrorOfThrown(thrown);
      if (error instanceof ValidationFailure) return reply.code(VALIDATION_STATUS).send({ detail: error.items });
      if (error) return sendError(reply, error);
      request.log.error({ err: thrown }, 'unhandled error');
      if (stackToStderr) process.stderr.write(`[agentctl server] ${request.method} ${request.url}: ${(thrown as Error).stack ?? thrown}\n`);
      return sendError(reply, INTERNAL_ERROR);
    });
  },
  { name: 'agentctl-error-handler' },
);
