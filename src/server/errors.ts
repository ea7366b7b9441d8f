// The HTTP edge of errors: domain refusals (src/server/domain/errors.ts) mapped to a status, the
// `{detail, code}` body and headers, plus the errors only the HTTP layer raises (authentication,
// rate limits, media types).
import type { z } from 'zod';
import type { ValidationLocRoot } from '../contract/common.js';
import { DomainError, ValidationFailure, type DomainErrorKind, type ValidationItem } from './domain/errors.js';

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
