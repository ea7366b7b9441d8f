import type { Kysely } from 'kysely';
import { runScript } from './script.js';

/**
 * Issue 25, a task's state history since its last migration, in the console and `agentctl states
 * history`:
 * - state_history keeps when each past value was written (the states row's updated_at) and by which
 *   version (its written_by_version_id), copied from the row it replaces by the same trigger. Rows
 *   kept before this change have neither (null: not recorded).
 * - tasks.moved_at: when the task last moved to another version. Tasks move in several statements
 *   (migrate, rollout steps and reverts, undo, a non-sticky deploy, rollback, a failed onMigrate
 *   sending it back); a trigger on the column notes every one of them. Null: never moved (or
 *   before this change).
 */
export const script = /* sql */ `
ALTER TABLE state_history ADD COLUMN written_at timestamptz, ADD COLUMN written_by_version_id text;
ALTER TABLE tasks ADD COLUMN moved_at timestamptz;

CREATE FUNCTION tasks_note_move() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  NEW.moved_at := now();
  RETURN NEW;
END $$;
CREATE TRIGGER tasks_note_move BEFORE UPDATE OF current_version_id ON tasks FOR EACH ROW
  WHEN (OLD.current_version_id IS DISTINCT FROM NEW.current_version_id) EXECUTE FUNCTION tasks_note_move();

CREATE OR REPLACE FUNCTION states_fill_written_by() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  SELECT current_version_id, last_sequence_id INTO NEW.written_by_version_id, NEW.written_at_sequence FROM tasks WHERE id = NEW.task_id;
  IF TG_OP = 'UPDATE' AND OLD.written_at_sequence IS NOT NULL AND OLD.written_at_sequence < NEW.written_at_sequence THEN
    INSERT INTO state_history (task_id, agent_id, sequence_id, state, written_at, written_by_version_id)
      VALUES (OLD.task_id, OLD.agent_id, OLD.written_at_sequence, OLD.state, OLD.updated_at, OLD.written_by_version_id)
      ON CONFLICT DO NOTHING;
  END IF;
  RETURN NEW;
END $$;
`;

export const up = (db: Kysely<unknown>) => runScript(db, script);
