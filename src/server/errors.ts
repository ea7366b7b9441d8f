import type { z } from 'zod';
import type { ConflictCode } from '../contract/common.js';
import { versionLabel } from '../contract/version-ref.js';

export type ValidationItem = { loc: (string | number)[]; msg: string; type: string };

/** An error the client caused or should hear about; rendered as `{detail, code}` with `status`. */
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

/** A 422 in the spec's shape: `{detail: [{loc, msg, type}]}`. */
export class ValidationFailure extends Error {
  constructor(readonly items: ValidationItem[]) {
    super(items.map((i) => `${i.loc.join('.')}: ${i.msg}`).join('; '));
  }
}

export const notFound = (what: string, id: string) => new ApiError(404, 'not_found', `${what} ${id} was not found`);
export const conflict = (code: ConflictCode, detail: string) => new ApiError(409, code, detail);
/** A 412: the request names a version (If-Match) that is no longer current. */
export const preconditionFailed = (code: ConflictCode, detail: string, headers: Record<string, string>) => new ApiError(412, code, detail, headers);
/**
 * A resource in an error sentence: its name, with the id that API clients match on (`main
 * (br_01J...)`, `v3 (ver_01J...)`), or the id alone when it has no name.
 */
export const named = (name: string | null | undefined, id: string) => (name ? `${name} (${id})` : id);
export const namedVersion = (version: { id: string; number: number }) => named(versionLabel(version.number), version.id);

export const forbidden = (detail: string) => new ApiError(403, 'forbidden', detail);
export const invalid = (loc: (string | number)[], msg: string, type = 'value_error') => new ValidationFailure([{ loc, msg, type }]);

/** zod issues -> the spec's validation items, `loc` starting with where the value came from. */
export function zodIssuesToItems(where: 'body' | 'query' | 'path', issues: z.core.$ZodIssue[]): ValidationItem[] {
  return issues.map((issue) => {
    const missing = (issue.code === 'invalid_type' || issue.code === 'invalid_union') && (issue as { input?: unknown }).input === undefined;
    return {
      loc: [where, ...issue.path.map((p) => (typeof p === 'symbol' ? String(p) : p))],
      msg: missing ? 'Field required' : issue.message,
      type: missing ? 'missing' : issue.code,
    };
  });
}
