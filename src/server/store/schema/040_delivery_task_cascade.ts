import type { Kysely } from 'kysely';
import { runScript } from './script.js';

/**
 * Issue 20, the hooked migrate bar: a migration to a version that declared onMigrate writes a
 * `task/migrate` delivery per moved task in the move's statement, and the foreign key on
 * deliveries.task_id checked each one by locking its task row again (a row lock and its WAL record
 * a delivery, ~1/10 of the statement). Every delivery is written for a task its transaction has
 * just locked, created or moved, so the insert-side check guarded nothing; what the key did guard
 * is the delete side: no delivery may outlive its task (shadow tasks are hard-deleted,
 * rehearsals.ts). That is now a cascade on the delete itself, for whatever statement deletes tasks:
 * one join a statement instead of a lookup a row.
 */
export const script = /* sql */ `
ALTER TABLE deliveries DROP CONSTRAINT deliveries_task_id_fkey;

CREATE FUNCTION tasks_drop_deliveries() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  DELETE FROM deliveries d USING gone WHERE d.task_id = gone.id;
  RETURN NULL;
END $$;
CREATE TRIGGER tasks_drop_deliveries AFTER DELETE ON tasks REFERENCING OLD TABLE AS gone
  FOR EACH STATEMENT EXECUTE FUNCTION tasks_drop_deliveries();
`;

export const up = (db: Kysely<unknown>) => runScript(db, script);
