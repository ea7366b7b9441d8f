import type { Kysely } from 'kysely';
import { runScript } from './script.js';

/**
 * Issue 20, the hooked migrate bar: a migration to a version that declared onMigrate wrote a
 * `task/migrate` delivery per moved task in the move's statement (a row and four index entries each,
 * a third of the statement). The move now only notes the hook on the task row it rewrites anyway:
 * `migrate_hook_id`, a delivery id taken from the deliveries' own sequence (the hook's place in the
 * task's queue, exactly where the row would have gone), `migrate_hook_from` (the version it left)
 * and `migrate_hook_batch`, the move's migration record, listed in `migrate_hook_batches` (one row a
 * move) until the dispatcher writes the deliveries under those ids (domain/migration-hooks.ts). A
 * hook is pending on its task while its batch is listed; the columns are left as they are after
 * (clearing them would rewrite every task row again). No index on tasks: a batch finds its tasks
 * through its migration record's moves.
 */
export const script = /* sql */ `
ALTER TABLE tasks ADD COLUMN migrate_hook_id bigint;
ALTER TABLE tasks ADD COLUMN migrate_hook_from text;
ALTER TABLE tasks ADD COLUMN migrate_hook_batch text;

CREATE TABLE migrate_hook_batches (
  id text PRIMARY KEY REFERENCES migrations(id) ON DELETE CASCADE,
  to_version_id text NOT NULL REFERENCES versions(id) ON DELETE CASCADE,
  from_version_ids jsonb NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now()
);
`;

export const up = (db: Kysely<unknown>) => runScript(db, script);
