import type { Kysely } from 'kysely';
import { runScript } from './script.js';

/**
 * The state as it stood before a move. A move to another version takes no sequence number, so an
 * onMigrate handler (or any write after the move) writes at the same sequence as the last write
 * before it, and schema 025's rule (keep the old value only when the sequence moved on) overwrote
 * the pre-move value without keeping it. The first write after a move now keeps the value it
 * replaces too, in a second row for that sequence (`before_move`; the key gains the column):
 * - a move is noticed by the task's `moved_at` (schema 027/039) being later than the old value's
 *   `updated_at`, or by a write from another version than the old value's: the latter catches a
 *   write whose transaction began before the move but read the task after it.
 * - when the sequence moved on too, the ordinary row keeps the old value (it is the same value).
 * - two moves at one sequence keep the value before the first (ON CONFLICT DO NOTHING).
 * A rehearsal from a later sequence reads the newest value of a sequence (domain/rehearsals.ts) and
 * `states history` lists the last of each, so neither reads the pre-move row; retention
 * (domain/history.ts) keeps it while it is at the last sequence before the cut, as that sequence's last value.
 */
export const script = /* sql */ `
ALTER TABLE state_history ADD COLUMN before_move boolean NOT NULL DEFAULT false;
ALTER TABLE state_history DROP CONSTRAINT state_history_pkey;
ALTER TABLE state_history ADD PRIMARY KEY (task_id, agent_id, sequence_id, before_move);

CREATE OR REPLACE FUNCTION states_fill_written_by() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  moved timestamptz;
BEGIN
  SELECT current_version_id, last_sequence_id, moved_at INTO NEW.written_by_version_id, NEW.written_at_sequence, moved FROM tasks WHERE id = NEW.task_id;
  IF TG_OP = 'UPDATE' AND OLD.written_at_sequence IS NOT NULL THEN
    IF OLD.written_at_sequence < NEW.written_at_sequence THEN
      INSERT INTO state_history (task_id, agent_id, sequence_id, state, written_at, written_by_version_id)
        VALUES (OLD.task_id, OLD.agent_id, OLD.written_at_sequence, OLD.state, OLD.updated_at, OLD.written_by_version_id)
        ON CONFLICT DO NOTHING;
    ELSIF OLD.updated_at < moved OR OLD.written_by_version_id <> NEW.written_by_version_id THEN
      INSERT INTO state_history (task_id, agent_id, sequence_id, state, written_at, written_by_version_id, before_move)
        VALUES (OLD.task_id, OLD.agent_id, OLD.written_at_sequence, OLD.state, OLD.updated_at, OLD.written_by_version_id, true)
        ON CONFLICT DO NOTHING;
    END IF;
  END IF;
  RETURN NEW;
END $$;
`;

export const up = (db: Kysely<unknown>) => runScript(db, script);
