import type { Kysely } from 'kysely';
import { runScript } from './script.js';

/**
 * The conversation (README "Delivery to agents, in short"): every task record (event, message, message update, status
 * change, tracker update) takes the next number of the task's own counter, tasks.last_sequence_id,
 * in the writing transaction, and lands in task_stream as the snapshot the stream replays.
 */
export const script = /* sql */ `
ALTER TABLE tasks ADD COLUMN last_sequence_id integer NOT NULL DEFAULT 0;

CREATE TABLE events (
  id text PRIMARY KEY,
  task_id text NOT NULL REFERENCES tasks(id),
  agent_id text NOT NULL REFERENCES agents(id),
  sequence_id integer NOT NULL,
  content jsonb NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now(),
  UNIQUE (task_id, sequence_id)
);

CREATE TABLE messages (
  id text PRIMARY KEY,
  task_id text NOT NULL REFERENCES tasks(id),
  author text NOT NULL CHECK (author IN ('agent','user')),
  content jsonb NOT NULL,
  streaming_status text CHECK (streaming_status IN ('IN_PROGRESS','DONE')),
  sequence_id integer NOT NULL,
  updated_sequence_id integer NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now(),
  updated_at timestamptz NOT NULL DEFAULT now(),
  UNIQUE (task_id, sequence_id)
);

CREATE TABLE trackers (
  id text PRIMARY KEY,
  task_id text NOT NULL REFERENCES tasks(id),
  agent_id text NOT NULL REFERENCES agents(id),
  status text NOT NULL DEFAULT 'idle',
  status_message text,
  progress double precision CHECK (progress >= 0 AND progress <= 100),
  last_processed_event_id text REFERENCES events(id),
  created_at timestamptz NOT NULL DEFAULT now(),
  updated_at timestamptz NOT NULL DEFAULT now(),
  UNIQUE (task_id, agent_id)
);
CREATE INDEX trackers_agent ON trackers (agent_id);

CREATE TABLE task_stream (
  task_id text NOT NULL REFERENCES tasks(id),
  sequence_id integer NOT NULL,
  kind text NOT NULL CHECK (kind IN ('event','message','message_update','task','tracker')),
  record jsonb NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (task_id, sequence_id)
);

CREATE TABLE idempotency_records (
  key_id text NOT NULL,
  route text NOT NULL,
  idempotency_key text NOT NULL,
  request_hash text NOT NULL,
  status integer,
  response text,
  created_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (key_id, route, idempotency_key)
);
CREATE INDEX idempotency_records_created ON idempotency_records (created_at);

INSERT INTO trackers (id, task_id, agent_id, created_at, updated_at)
SELECT 'trk_' || substr(id, 6), id, agent_id, created_at, created_at FROM tasks;

UPDATE tasks SET last_sequence_id = 1;

INSERT INTO task_stream (task_id, sequence_id, kind, record, created_at)
SELECT id, 1, 'task', jsonb_build_object(
  'id', id, 'filesystem_id', filesystem_id, 'namespace_id', namespace_id, 'name', name, 'status', status,
  'status_reason', status_reason, 'params', params, 'task_metadata', task_metadata,
  'created_version_id', created_version_id, 'current_version_id', current_version_id,
  'created_at', to_char(created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'),
  'updated_at', to_char(updated_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')
), updated_at FROM tasks;
`;

export const up = (db: Kysely<unknown>) => runScript(db, script);
