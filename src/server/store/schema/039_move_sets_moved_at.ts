import type { Kysely } from 'kysely';
import { runScript } from './script.js';

/**
 * Issue 20, the migrate bar: a migration, rollout step or revert moves thousands of tasks in one
 * statement, and schema 027's trigger called its plpgsql function once a row to note `moved_at`.
 * Those statements now set `moved_at = now()` themselves (domain/migration-hooks.ts, `moveSetSql`),
 * and the trigger fills it only for a move that did not: the other moves (a non-sticky deploy, a
 * rollback, a failed onMigrate sending a task back, an undo) keep their note without a change.
 */
export const script = /* sql */ `
DROP TRIGGER tasks_note_move ON tasks;
CREATE TRIGGER tasks_note_move BEFORE UPDATE OF current_version_id ON tasks FOR EACH ROW
  WHEN (OLD.current_version_id IS DISTINCT FROM NEW.current_version_id AND OLD.moved_at IS NOT DISTINCT FROM NEW.moved_at)
  EXECUTE FUNCTION tasks_note_move();
`;

export const up = (db: Kysely<unknown>) => runScript(db, script);
