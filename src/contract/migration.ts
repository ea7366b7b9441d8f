/**
 * The rule of a migration's shape, zod-free so the CLI checks its flags by it before any request
 * and the server checks the body by it (domain/migrate.ts): exactly one source (a version, or
 * named tasks) and exactly one target (a version, or the branch's latest).
 */
export interface MigrationChoice {
  /** The two ways to say it, as the caller names them (`from_version_id`, or `--from REF`). */
  names: readonly [string, string];
  /** Which of the two were given. */
  given: readonly [boolean, boolean];
}

/** What is wrong with one side of a migration (source or target), as a sentence; undefined when it is right. */
export function migrationChoiceProblem(side: 'source' | 'target', { names, given }: MigrationChoice): string | undefined {
  if (given[0] === given[1]) return `Give exactly one ${side}: ${names[0]} or ${names[1]}${given[0] ? ', not both' : ''}`;
  return undefined;
}
