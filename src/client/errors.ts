import type { ValidationErrorBody } from '../contract/common.js';

type ValidationItem = ValidationErrorBody['detail'][number];

/** The service answered with an error status. */
export class ApiRequestError extends Error {
  readonly name = 'ApiRequestError';
  constructor(
    readonly status: number,
    /** The server's snake_case code (`validation_error` for a 422). */
    readonly code: string,
    /** The server's `detail`: a sentence, or the 422 items. */
    readonly detail: string | ValidationItem[],
    readonly request: { method: string; url: string; requestId?: string },
    /** Seconds the server asked to wait (429, 503). */
    readonly retryAfter?: number,
  ) {
    super(typeof detail === 'string' ? detail : detail.map(formatValidationItem).join('; '));
  }

  get validationItems(): ValidationItem[] {
    return typeof this.detail === 'string' ? [] : this.detail;
  }
}

export const formatValidationItem = (item: ValidationItem) => `${item.loc.join('.')}: ${item.msg}`;

/** No HTTP answer at all: refused, reset, DNS failure or timeout. */
export class UnreachableError extends Error {
  readonly name = 'UnreachableError';
  constructor(
    readonly baseUrl: string,
    /** ECONNREFUSED, ENOTFOUND, ETIMEDOUT, ... */
    readonly reason: string,
  ) {
    super(`Cannot reach the agentctl service at ${baseUrl} (${reason})`);
  }
}

/** A 2xx answer that does not match the contract: a client/server version mismatch. */
export class ResponseShapeError extends Error {
  readonly name = 'ResponseShapeError';
  constructor(
    readonly endpoint: string,
    readonly issues: string,
  ) {
    super(`The service's answer to ${endpoint} does not match this agentctl's contract: ${issues}`);
  }
}

/**
 * An answer that is not the service's JSON: an empty body, an HTML page or other text (a proxy's
 * 502, a load balancer's 404, another program on the port), or JSON cut short.
 */
export class NotServiceAnswerError extends Error {
  readonly name = 'NotServiceAnswerError';
  constructor(
    readonly baseUrl: string,
    readonly status: number,
    /** What came back instead of the service's JSON. */
    readonly body: 'empty' | 'html' | 'text' | 'truncated_json',
    readonly request: { method: string; url: string },
  ) {
    const what = { empty: 'an empty body', html: 'an HTML page', text: 'a body that is not JSON', truncated_json: 'JSON that is cut short' }[body];
    super(
      `HTTP ${status} with ${what} from ${request.method} ${request.url}: ${body === 'truncated_json' ? 'the answer was cut off on the way' : 'that is not an answer of the agentctl service'}`,
    );
  }
}
