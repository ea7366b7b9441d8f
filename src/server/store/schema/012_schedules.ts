import type { Kysely } from 'kysely';
import { runScript } from './script.js';

/**
 * Schedules (README "Schedules"): a cron expression on an agent, and one row per run. The tick row's
 * primary key (schedule, tick time) is what makes a tick run once across server replicas and
 * restarts: a ticker claims a tick by inserting its row (ON CONFLICT DO NOTHING) and creates the
 * task in the same transaction. `schedules_due` keeps the ticker's "what is due next" query cheap.
 */
export const script = /* sql */ `
CREATE TABLE schedules (
  id text PRIMARY KEY,
  org_id text NOT NULL REFERENCES orgs(id),
  namespace_id text NOT NULL REFERENCES namespaces(id),
  agent_id text NOT NULL REFERENCES agents(id),
  name text,
  cron text NOT NULL,
  timezone text NOT NULL,
  branch text,
  params jsonb,
  task_name text,
  event jsonb,
  missed text NOT NULL CHECK (missed IN ('skip','catch-up-one')),
  status text NOT NULL CHECK (status IN ('ACTIVE','PAUSED')),
  next_run_at timestamptz,
  last_run_at timestamptz,
  last_error text,
  created_by_key_id text REFERENCES api_keys(id),
  created_at timestamptz NOT NULL DEFAULT now(),
  updated_at timestamptz NOT NULL DEFAULT now()
);
CREATE UNIQUE INDEX schedules_agent_name ON schedules (agent_id, name) WHERE name IS NOT NULL;
CREATE INDEX schedules_due ON schedules (next_run_at) WHERE status = 'ACTIVE';

CREATE TABLE schedule_ticks (
  schedule_id text NOT NULL REFERENCES schedules(id) ON DELETE CASCADE,
  tick_at timestamptz NOT NULL,
  kind text NOT NULL CHECK (kind IN ('scheduled','catch_up','manual')),
  task_id text REFERENCES tasks(id),
  event_id text REFERENCES events(id),
  error text,
  created_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (schedule_id, tick_at)
);
`;

export const up = (db: Kysely<unknown>) => runScript(db, script);
