import type { Kysely } from 'kysely';
import { runScript } from './script.js';

/**
 * Agent secrets (issue 23, part 2): one row per (agent, name, environment or none), the value
 * encrypted at rest with a data key of its own (AES-256-GCM), the data key wrapped by the server's
 * master key. `key_id` names the master key that wrapped it (a digest, never the key), so a server
 * started with another key refuses to start instead of running agents without their secrets.
 * `revision` grows on every write: what the runtime compares to restart replicas, never the value.
 */
export const script = /* sql */ `
CREATE TABLE agent_secrets (
  id text PRIMARY KEY,
  agent_id text NOT NULL REFERENCES agents(id) ON DELETE CASCADE,
  environment_id text REFERENCES environments(id) ON DELETE CASCADE,
  name text NOT NULL,
  ciphertext text NOT NULL,
  wrapped_key text NOT NULL,
  key_id text NOT NULL,
  revision integer NOT NULL DEFAULT 1,
  created_at timestamptz NOT NULL DEFAULT now(),
  updated_at timestamptz NOT NULL DEFAULT now()
);
CREATE UNIQUE INDEX agent_secrets_scope ON agent_secrets (agent_id, name, (COALESCE(environment_id, '')));
`;

export const up = (db: Kysely<unknown>) => runScript(db, script);
