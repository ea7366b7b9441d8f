// What the domain says when it refuses: a kind, a stable code and a sentence for people. The HTTP
// layer (src/server/errors.ts) is the one place that turns a kind into a status and headers.
import type { ConflictCode } from '../../contract/common.js';
import { versionLabel } from '../../contract/version-ref.js';

export type DomainErrorKind =
  /** The thing does not exist, or the caller may not know that it does. */
  | 'not_found'
  /** The caller may see the thing but not do this to it. */
  | 'forbidden'
  /** No valid credential (an API key, a registration token). */
  | 'unauthenticated'
  /** The request is valid but the current state refuses it (`code` says why). */
  | 'conflict'
  /** A conditional write named a version that is no longer current (`current` is the current one). */
  | 'stale'
  /** A write that must be conditional came without a condition (`current` is what to name). */
  | 'precondition_required'
  /** More than a limit allows. */
  | 'too_large'
  /** Well-formed but unusable content (an archive with a bad member). */
  | 'unprocessable'
  /** The request could not be read to its end. */
  | 'bad_request';

export class DomainError extends Error {
  constructor(
    readonly kind: DomainErrorKind,
    readonly code: string,
    readonly detail: string,
    /** For `stale` and `precondition_required`: the current version tag (a state version, a tree checksum). */
    readonly current?: string,
  ) {
    super(detail);
    this.name = 'DomainError';
  }
}

export type ValidationItem = { loc: (string | number)[]; msg: string; type: string };

/** Invalid input, field by field: `loc` names where each value came from (`body`, `query`, a header). */
export class ValidationFailure extends Error {
  constructor(readonly items: ValidationItem[]) {
    super(items.map((i) => `${i.loc.join('.')}: ${i.msg}`).join('; '));
  }
}

/** The one 404 sentence, `<what> [<id>] was not found`: `notFound('Task', id)`, `notFound(\`Agent ${ns}/${name}\`)`. */
export const notFound = (what: string, id?: string) => new DomainError('not_found', 'not_found', `${id === undefined ? what : `${what} ${id}`} was not found`);
/** A not-found with its own sentence (and, rarely, its own code). */
export const missing = (detail: string, code = 'not_found') => new DomainError('not_found', code, detail);
export const conflict = (code: ConflictCode, detail: string) => new DomainError('conflict', code, detail);
export const forbidden = (detail: string) => new DomainError('forbidden', 'forbidden', detail);
export const unauthenticated = (code: string, detail: string) => new DomainError('unauthenticated', code, detail);
export const stale = (code: ConflictCode, detail: string, current: string) => new DomainError('stale', code, detail, current);
export const preconditionRequired = (detail: string, current: string) => new DomainError('precondition_required', 'precondition_required', detail, current);
export const tooLarge = (code: string, detail: string) => new DomainError('too_large', code, detail);
export const unprocessable = (code: string, detail: string) => new DomainError('unprocessable', code, detail);
export const badRequest = (code: string, detail: string) => new DomainError('bad_request', code, detail);
export const invalid = (loc: (string | number)[], msg: string, type = 'value_error') => new ValidationFailure([{ loc, msg, type }]);

/**
 * A resource in an error sentence: its name, with the id that API clients match on (`main
 * (br_01J...)`, `v3 (ver_01J...)`), or the id alone when it has no name.
 */
export const named = (name: string | null | undefined, id: string) => (name ? `${name} (${id})` : id);
export const namedVersion = (version: { id: string; number: number }) => named(versionLabel(version.number), version.id);

export const isNotFound = (error: unknown): error is DomainError => error instanceof DomainError && error.kind === 'not_found';
