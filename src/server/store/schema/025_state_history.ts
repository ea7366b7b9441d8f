import type { Kysely } from 'kysely';
import { runScript } from './script.js';

/**
 * Issue 22, rehearsals from a sequence: the task's state as it was when its event S was recorded.
 * - states.written_at_sequence: the task's last sequence number (tasks.last_sequence_id) when the
 *   state was last written; the trigger that already fills written_by_version_id reads it from the
 *   same task row, so the write path gains no statement.
 * - state_history: the state as it stood before the first write at a later sequence. Writes at the
 *   same sequence (a handler's several updates, a burst of PATCHes between events) overwrite only
 *   the states row; the first write after the task's sequence moved on keeps the old value here,
 *   so a task keeps one row per sequence at which it wrote its state, and a task without state none.
 *   Rows go with their task (ON DELETE CASCADE).
 */
export const script = /* sql */ `
ALTER TABLE states ADD COLUMN written_at_sequence integer;

CREATE TABLE state_history (
  task_id text NOT NULL REFERENCES tasks(id) ON DELETE CASCADE,
  agent_id text NOT NULL,
  sequence_id integer NOT NULL,
  state jsonb NOT NULL,
  PRIMARY KEY (task_id, agent_id, sequence_id)
);

CREATE OR REPLACE FUNCTION states_fill_written_by() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  SELECT current_version_id, last_sequence_id INTO NEW.written_by_version_id, NEW.written_at_sequence FROM tasks WHERE id = NEW.task_id;
  IF TG_OP = 'UPDATE' AND OLD.written_at_sequence IS NOT NULL AND OLD.written_at_sequence < NEW.written_at_sequence THEN
    INSERT INTO state_history (task_id, agent_id, sequence_id, state) VALUES (OLD.task_id, OLD.agent_id, OLD.written_at_sequence, OLD.state)
      ON CONFLICT DO NOTHING;
  END IF;
  RETURN NEW;
END $$;
`;

export const up = (db: Kysely<unknown>) => runScript(db, script);
