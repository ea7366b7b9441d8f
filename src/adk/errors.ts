import { ApiRequestError, UnreachableError } from '../client/index.js';

export { UnreachableError };

/**
 * Every error the ADK throws for an answer of the service: `status`, the server's `code` and its
 * sentence. Subclasses name the common cases so handlers can `catch (e) { if (e instanceof NotFoundError) ... }`.
 */
export class AdkError extends Error {
  override name = 'AdkError';
  constructor(
    message: string,
    readonly status: number,
    readonly code: string,
    readonly requestId?: string,
  ) {
    super(message);
  }
}
/** 404: no such record, or one this key may not see. */
export class NotFoundError extends AdkError {
  override name = 'NotFoundError';
}
/** 409 or 412: the record changed or is in a state that refuses this (a terminal task, a stale base). */
export class ConflictError extends AdkError {
  override name = 'ConflictError';
}
/** 422 (or 400): the request itself was wrong; `items` are the server's validation items. */
export class ValidationError extends AdkError {
  override name = 'ValidationError';
  items: { loc: (string | number)[]; msg: string; type: string }[] = [];
}
/** 401: the key is missing, unknown, revoked or expired. */
export class AuthenticationError extends AdkError {
  override name = 'AuthenticationError';
}
/** 403: the key may see the record but not change it. */
export class PermissionDeniedError extends AdkError {
  override name = 'PermissionDeniedError';
}
/** 429 after the client's own retries; `retryAfter` in seconds. */
export class RateLimitedError extends AdkError {
  override name = 'RateLimitedError';
  retryAfter?: number;
}
/** 413: a body or a state over the service's limits. */
export class PayloadTooLargeError extends AdkError {
  override name = 'PayloadTooLargeError';
}
/** 5xx after the client's own retries. */
export class ServerError extends AdkError {
  override name = 'ServerError';
}

/** The client's ApiRequestError as the ADK's typed error; anything else passes through unchanged. */
export function toAdkError(error: unknown): unknown {
  if (!(error instanceof ApiRequestError)) return error;
  return httpError(error.status, error.code, error.message, error.request.requestId, error.validationItems, error.retryAfter);
}

/** The typed error for an HTTP status. */
export function httpError(
  status: number,
  code: string,
  message: string,
  requestId?: string,
  items: ValidationError['items'] = [],
  retryAfter?: number,
): AdkError {
  const args = [message, status, code, requestId] as const;
  const error = { status, validationItems: items, retryAfter };
  switch (true) {
    case error.status === 404:
      return new NotFoundError(...args);
    case error.status === 409 || error.status === 412:
      return new ConflictError(...args);
    case error.status === 400 || error.status === 422: {
      const e = new ValidationError(...args);
      e.items = error.validationItems;
      return e;
    }
    case error.status === 401:
      return new AuthenticationError(...args);
    case error.status === 403:
      return new PermissionDeniedError(...args);
    case error.status === 413:
      return new PayloadTooLargeError(...args);
    case error.status === 429: {
      const e = new RateLimitedError(...args);
      e.retryAfter = error.retryAfter;
      return e;
    }
    case error.status >= 500:
      return new ServerError(...args);
    default:
      return new AdkError(...args);
  }
}

/**
 * The reason of `ctx.signal` when the turn is interrupted (`agentctl tasks interrupt`, or a new event
 * under the `interrupt` policy): open message streams end INTERRUPTED, and `stream().from()` and
 * `write()` throw it. A handler that ends by throwing it is not reported as a failure.
 */
export class TurnInterruptedError extends Error {
  override name = 'TurnInterruptedError';
  constructor(message = 'The turn was interrupted') {
    super(message);
  }
}
