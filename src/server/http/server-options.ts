// How the Fastify server is constructed: limits and timeouts, request ids, and the answers to
// requests refused before any route or hook runs (by the router, or by Node's HTTP parser).
import { LogController, type FastifyHttpOptions, type FastifyReply } from 'fastify';
import type { Server } from 'node:http';
import type { Socket } from 'node:net';
import { parserErrorOf, routerErrorOf } from '../errors.js';
import { BODY_LIMIT_BYTES, MAX_PATH_PARAM_BYTES } from '../input-guard.js';
import { newId } from '../store/ids.js';
import { sendError } from './error-handler.js';

export function serverOptions(requestTimeout: number, logger: boolean | object): FastifyHttpOptions<Server> {
  return {
    logger,
    bodyLimit: BODY_LIMIT_BYTES,
    requestIdHeader: 'x-request-id',
    // One line per request, written by the request-log plugin, instead of Fastify's two.
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
    frameworkErrors: (error, _request, reply) => sendError(reply as FastifyReply, routerErrorOf(error.code)),
    clientErrorHandler: writeClientError,
  };
}

const STATUS_TEXT: Record<number, string> = { 400: 'Bad Request', 408: 'Request Timeout', 413: 'Payload Too Large', 431: 'Request Header Fields Too Large' };

/** Errors Node's HTTP parser reports before Fastify sees a request, in the documented shape. */
function writeClientError(this: unknown, error: Error & { code?: string }, socket: Socket): void {
  if (error.code === 'ECONNRESET' || socket.destroyed) return;
  const { status, code, detail } = parserErrorOf(error.code);
  const body = JSON.stringify({ detail, code });
  if (socket.writable) {
    socket.write(
      `HTTP/1.1 ${status} ${STATUS_TEXT[status]}\r\nConnection: close\r\nContent-Type: application/json; charset=utf-8\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`,
    );
  }
  socket.destroy();
}
