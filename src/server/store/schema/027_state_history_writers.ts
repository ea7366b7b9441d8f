import type { Kysely } from 'kysely';
import { runScript } from './script.js';

/**
 * Issue 25, a task's state history in the console and `agentctl states history`: each past value
 * keeps when it was written (the states row's updated_at) and by which version (its
 * written_by_version_id), copied from the row it replaces by the same trigger. Rows kept before
 * this change have neither (null: not recorded).
 */
export const script = /* sql */ `
ALTER TABLE state_history ADD COLUMN written_at timestamptz, ADD COLUMN written_by_version_id text;

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
