import type { Kysely } from 'kysely';
import { runScript } from './script.js';

/**
 * Issue 22, safe migrations: rehearsals and the state upgrade.
 * - Shadow tasks (tasks.shadow_of, tasks.rehearsal_id): ordinary task rows that replay another
 *   task's recorded events on a target version, hidden from task lists unless asked for.
 * - rehearsals / rehearsal_tasks: what a rehearsal replays and, once complete, its report.
 * - deliveries.priority: live work is claimed before rehearsal deliveries (priority -1).
 * - deliveries.method 'task/migrate': the onMigrate control delivery, enqueued by a migration.
 * - tasks.migration_error: why the task's last onMigrate failed (it went back to its source).
 * - states.written_by_version_id: the version the task ran on when the state was last written
 *   (filled in by a trigger, so every writer of states records it).
 * - versions.handlers: the handlers the agent declared when it registered (null: not declared).
 */
export const script = /* sql */ `
ALTER TABLE tasks ADD COLUMN shadow_of text REFERENCES tasks(id);
ALTER TABLE tasks ADD COLUMN rehearsal_id text;
ALTER TABLE tasks ADD COLUMN migration_error jsonb;
CREATE INDEX tasks_shadow_of ON tasks (shadow_of) WHERE shadow_of IS NOT NULL;

ALTER TABLE deliveries ADD COLUMN priority integer NOT NULL DEFAULT 0;
ALTER TABLE deliveries DROP CONSTRAINT deliveries_method_check;
ALTER TABLE deliveries ADD CONSTRAINT deliveries_method_check CHECK (method IN ('task/create','event/send','task/cancel','message/send','task/interrupt','task/migrate'));

ALTER TABLE versions ADD COLUMN handlers jsonb;

ALTER TABLE states ADD COLUMN written_by_version_id text REFERENCES versions(id);
UPDATE states SET written_by_version_id = t.current_version_id FROM tasks t WHERE t.id = states.task_id;
CREATE FUNCTION states_fill_written_by() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN SELECT current_version_id INTO NEW.written_by_version_id FROM tasks WHERE id = NEW.task_id; RETURN NEW; END $$;
CREATE TRIGGER states_fill_written_by BEFORE INSERT OR UPDATE ON states FOR EACH ROW EXECUTE FUNCTION states_fill_written_by();

CREATE TABLE rehearsals (
  id text PRIMARY KEY,
  org_id text NOT NULL REFERENCES orgs(id),
  agent_id text NOT NULL REFERENCES agents(id),
  from_version_id text REFERENCES versions(id),
  to_version_id text NOT NULL REFERENCES versions(id),
  status text NOT NULL DEFAULT 'running' CHECK (status IN ('running','completed')),
  from_sequence integer,
  max_events integer NOT NULL,
  event_timeout_ms integer NOT NULL,
  report jsonb,
  created_by_key_id text REFERENCES api_keys(id),
  created_at timestamptz NOT NULL DEFAULT now(),
  completed_at timestamptz,
  expires_at timestamptz NOT NULL
);
CREATE INDEX rehearsals_running ON rehearsals (created_at) WHERE status = 'running';

CREATE TABLE rehearsal_tasks (
  rehearsal_id text NOT NULL REFERENCES rehearsals(id) ON DELETE CASCADE,
  task_id text NOT NULL REFERENCES tasks(id),
  shadow_task_id text REFERENCES tasks(id),
  status text NOT NULL DEFAULT 'running' CHECK (status IN ('running','done')),
  event_ids jsonb NOT NULL DEFAULT '[]',
  shadow_event_ids jsonb NOT NULL DEFAULT '[]',
  timed_out jsonb NOT NULL DEFAULT '[]',
  events_total integer NOT NULL DEFAULT 0,
  skipped_reason text,
  report jsonb,
  PRIMARY KEY (rehearsal_id, task_id)
);
`;

export const up = (db: Kysely<unknown>) => runScript(db, script);
