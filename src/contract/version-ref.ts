/**
 * Version references (README "The CLI"): a `ver_` id, `vN` (the version's per-agent number), or a
 * git-hash prefix of at least MIN_GIT_HASH_PREFIX hex characters. Plain data, no zod: the CLI checks
 * a reference before it loads the schemas, and the server resolves it with the same rules.
 */
export const MIN_GIT_HASH_PREFIX = 4;

export type VersionRef = { kind: 'id'; id: string } | { kind: 'number'; number: number } | { kind: 'git_hash'; prefix: string };

const NUMBER_REF = /^v([1-9][0-9]{0,8})$/i;
const HASH_PREFIX = new RegExp(`^[0-9a-f]{${MIN_GIT_HASH_PREFIX},64}$`, 'i');

/** What a reference names, or null when it is none of the three forms. */
export function parseVersionRef(ref: string): VersionRef | null {
  if (/^ver_[0-9A-Za-z]+$/.test(ref)) return { kind: 'id', id: ref };
  const number = NUMBER_REF.exec(ref);
  if (number) return { kind: 'number', number: Number(number[1]) };
  if (HASH_PREFIX.test(ref)) return { kind: 'git_hash', prefix: ref.toLowerCase() };
  return null;
}

/** How to write a version reference, for error messages. */
export const VERSION_REF_FORMS = `a ver_ id, vN (e.g. v3), or a git-hash prefix of at least ${MIN_GIT_HASH_PREFIX} hex characters`;

/** `v3`: how people see a version's number. */
export const versionLabel = (number: number) => `v${number}`;
