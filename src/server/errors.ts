import type { z } from 'zod';

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
export const conflict = (code: string, detail: string) => new ApiError(409, code, detail);
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
