// The HTTP edge of errors: domain refusals (src/server/domain/errors.ts) mapped to a status, the
// `{detail, code}` body and headers, plus the errors only the HTTP layer raises (authentication,
// rate limits, media types, the router's and Node's HTTP parser's refusals). Every status the
// server answers with an error is chosen here; src/server/http/ only sends what this file gives.
import type { z } from 'zod';
import { RESPONSE_STATUSES, type ValidationLocRoot } from '../contract/common.js';
import { DomainError, ValidationFailure, type DomainErrorKind, type ValidationItem } from './domain/errors.js';
import { BODY_LIMIT_BYTES, MAX_PATH_PARAM_BYTES } from './input-guard.js';
import { isSerializationFailure } from './store/sql.js';

export { ValidationFailure, type ValidationItem };

/** An error of the HTTP layer itself; rendered as `{detail, code}` with `status`. */
export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    readonly detail: string,
    readonly headers: Record<string, string> = {},
  ) {
    super(detail);
  }
}

export const STATUS_BY_KIND: Record<DomainErrorKind, number> = {
  not_found: 404,
  forbidden: 403,
  unauthenticated: 401,
  conflict: 409,
  stale: 412,
  precondition_required: 428,
  too_large: 413,
  unprocessable: 422,
  bad_request: 400,
};

/** A strong entity tag for a version tag or checksum. */
export const entityTag = (value: string) => `"${value}"`;

/** The HTTP answer to a domain refusal. */
export function httpErrorOf(error: DomainError): ApiError {
  const headers: Record<string, string> = {};
  if (error.kind === 'unauthenticated') headers['WWW-Authenticate'] = 'Bearer';
  if (error.current !== undefined) headers.ETag = entityTag(error.current);
  return new ApiError(STATUS_BY_KIND[error.kind], error.code, error.detail, headers);
}

/** The status of a 422 answer, whose body is `{detail: ValidationItem[]}` rather than `{detail, code}`. */
export const VALIDATION_STATUS = STATUS_BY_KIND.unprocessable;

/** The answer to a fault of the server itself (its stack goes to the log, never to the client). */
export const INTERNAL_ERROR = new ApiError(500, 'internal_error', 'Internal server error');

/** No route has this method and path. */
export const noRoute = (method: string, path: string) => new ApiError(404, 'not_found', `No route ${method} ${path}`);

/**
 * What the client hears for an error thrown while a request is handled: a refusal of the domain,
 * of the HTTP layer, or of Fastify while it read the request. Undefined for a fault of the server.
 */
export function httpErrorOfThrown(thrown: unknown): ApiError | ValidationFailure | undefined {
  if (thrown instanceof DomainError) return httpErrorOf(thrown);
  if (thrown instanceof ValidationFailure || thrown instanceof ApiError) return thrown;
  const error = thrown as { code?: string; statusCode?: number; message?: string } | null;
  switch (error?.code) {
    case 'FST_ERR_CTP_BODY_TOO_LARGE':
      return new ApiError(413, 'payload_too_large', `Request body is larger than ${BODY_LIMIT_BYTES} bytes`);
    case 'FST_ERR_CTP_INVALID_MEDIA_TYPE':
      return new ApiError(415, 'unsupported_media_type', 'Send request bodies as application/json');
    case 'FST_ERR_CTP_INVALID_CONTENT_LENGTH':
      return new ApiError(400, 'bad_request', 'Content-Length does not match the body');
  }
  if (isSerializationFailure(thrown)) {
    // Only after the server's own retries (src/server/http/transaction-retries.ts).
    return new ApiError(503, 'retry', 'The database was busy; retry the request', { 'Retry-After': '1' });
  }
  if (error?.statusCode && error.statusCode >= 400 && error.statusCode < 500) {
    // Only statuses the README lists: any other client error of a framework layer is a 400.
    const status = (RESPONSE_STATUSES as readonly number[]).includes(error.statusCode) ? error.statusCode : 400;
    return new ApiError(status, 'bad_request', error.message ?? 'Bad request');
  }
  return undefined;
}

/** A request the router refused (Fastify's `frameworkErrors`), by the error's code. */
export function routerErrorOf(code: string): ApiError {
  if (code === 'FST_ERR_MAX_PARAM_LENGTH') return new ApiError(414, 'uri_too_long', `A path parameter is longer than ${MAX_PATH_PARAM_BYTES} bytes`);
  if (code === 'FST_ERR_BAD_URL') return new ApiError(400, 'bad_url', 'The path is not validly percent-encoded UTF-8');
  return new ApiError(400, 'bad_request', 'Bad request');
}

/** A request Node's HTTP parser refused before Fastify saw it, by the error's code. */
export function parserErrorOf(code: string | undefined): ApiError {
  if (code === 'ERR_HTTP_REQUEST_TIMEOUT') return new ApiError(408, 'request_timeout', 'The request was not received in time');
  if (code === 'HPE_HEADER_OVERFLOW') return new ApiError(431, 'headers_too_large', 'The request headers are too large');
  return new ApiError(400, 'bad_request', 'Malformed HTTP request');
}

/** zod issues -> the spec's validation items, `loc` starting with where the value came from. */
export function zodIssuesToItems(where: ValidationLocRoot, issues: z.core.$ZodIssue[]): ValidationItem[] {
  return issues.map((issue) => {
    const missing = (issue.code === 'invalid_type' || issue.code === 'invalid_union') && (issue as { input?: unknown }).input === undefined;
    return {
      loc: [where, ...issue.path.map((p) => (typeof p === 'symbol' ? String(p) : p))],
      msg: missing ? 'Field required' : issue.message,
      type: missing ? 'missing' : issue.code,
    };
  });
}

/**
 * The values an `If-Match` or `If-None-Match` header names: `*`, or entity tags without quotes or
 * `W/` (a weak tag compares like a strong one here). None when the header is absent.
 */
export function entityTags(header: string | string[] | undefined): string[] {
  if (header === undefined) return [];
  return (Array.isArray(header) ? header.join(',') : header)
    .split(',')
    .map((t) => t.trim().replace(/^W\//, '').replace(/^"|"$/g, ''))
    .filter(Boolean);
}
