import type { Kysely } from 'kysely';
import { runScript } from './script.js';

/**
 * Safe migrations (issue 22, parts 2 and 4). `rollouts`: a migration in steps that the runtime
 * reconciler drives (domain/rollouts.ts): where it stands, its thresholds, and the figures that
 * decided each step (`report`). `migrations`: the history, one row per move of tasks (a
 * `tasks migrate`, a rollout step, a revert, an undo) with exactly the tasks it moved and where
 * each came from (`moves`: `[[task_id, from_version_id], ...]`), so an undo moves those back.
 * One running (or paused) rollout per source version: the partial unique index.
 */
export const script = /* sql */ `
CREATE TABLE rollouts (
  id text PRIMARY KEY,
  branch_id text NOT NULL REFERENCES branches(id) ON DELETE CASCADE,
  agent_id text NOT NULL,
  namespace_id text NOT NULL,
  from_version_id text NOT NULL REFERENCES versions(id) ON DELETE CASCADE,
  to_version_id text NOT NULL REFERENCES versions(id) ON DELETE CASCADE,
  steps jsonb NOT NULL,
  watch_ms integer NOT NULL,
  max_error_rate double precision NOT NULL,
  status text NOT NULL CHECK (status IN ('RUNNING','PAUSED','SUCCEEDED','REVERTED','ABORTED')),
  step_index integer NOT NULL DEFAULT -1,
  step_started_at timestamptz,
  new_tasks integer NOT NULL DEFAULT 0,
  new_tasks_to_target integer NOT NULL DEFAULT 0,
  reason text,
  report jsonb NOT NULL DEFAULT '[]'::jsonb,
  created_by_key_id text,
  created_at timestamptz NOT NULL DEFAULT now(),
  updated_at timestamptz NOT NULL DEFAULT now(),
  finished_at timestamptz
);
CREATE UNIQUE INDEX rollouts_one_per_source ON rollouts (from_version_id) WHERE status IN ('RUNNING','PAUSED');
CREATE INDEX rollouts_branch ON rollouts (branch_id, id);
CREATE INDEX rollouts_active ON rollouts (status) WHERE status IN ('RUNNING','PAUSED');

CREATE TABLE migrations (
  id text PRIMARY KEY,
  branch_id text NOT NULL REFERENCES branches(id) ON DELETE CASCADE,
  agent_id text NOT NULL,
  namespace_id text NOT NULL,
  kind text NOT NULL CHECK (kind IN ('migrate','rollout_step','revert','undo')),
  rollout_id text REFERENCES rollouts(id) ON DELETE CASCADE,
  step integer,
  to_version_id text NOT NULL REFERENCES versions(id) ON DELETE CASCADE,
  from_version_ids jsonb NOT NULL,
  moves jsonb NOT NULL,
  count integer NOT NULL,
  reason text,
  undoes_id text REFERENCES migrations(id) ON DELETE SET NULL,
  undone_by_id text,
  created_by_key_id text,
  created_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX migrations_branch ON migrations (branch_id, id);
CREATE INDEX migrations_rollout ON migrations (rollout_id) WHERE rollout_id IS NOT NULL;
`;

export const up = (db: Kysely<unknown>) => runScript(db, script);
