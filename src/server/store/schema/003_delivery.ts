import type { Kysely } from 'kysely';
import { runScript } from './script.js';

/**
 * Delivery to agents (README "Delivery to agents, in short"): registration tokens (hashed), runtime keys (api_keys
 * confined to one agent), the live replicas of each version and the transactional outbox.
 */
export const script = /* sql */ `
ALTER TABLE versions ADD COLUMN signing_secret text;
ALTER TABLE api_keys ADD COLUMN runtime_agent_id text REFERENCES agents(id);

CREATE TABLE registration_tokens (
  token_hash text PRIMARY KEY,
  version_id text NOT NULL REFERENCES versions(id),
  reusable boolean NOT NULL DEFAULT false,
  expires_at timestamptz NOT NULL,
  used_at timestamptz,
  created_by_key_id text REFERENCES api_keys(id),
  created_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX registration_tokens_version ON registration_tokens (version_id);

CREATE TABLE version_replicas (
  version_id text NOT NULL REFERENCES versions(id),
  replica_key text NOT NULL,
  acp_url text NOT NULL,
  runtime_key_id text REFERENCES api_keys(id),
  registered_at timestamptz NOT NULL DEFAULT now(),
  last_seen_at timestamptz NOT NULL DEFAULT now(),
  live boolean NOT NULL DEFAULT true,
  PRIMARY KEY (version_id, replica_key)
);

CREATE TABLE deliveries (
  id bigserial PRIMARY KEY,
  task_id text NOT NULL REFERENCES tasks(id),
  version_id text REFERENCES versions(id),
  method text NOT NULL CHECK (method IN ('task/create','event/send','task/cancel','message/send')),
  event_id text,
  payload jsonb NOT NULL,
  status text NOT NULL DEFAULT 'pending' CHECK (status IN ('pending','in_flight','done','failed')),
  attempts integer NOT NULL DEFAULT 0,
  next_attempt_at timestamptz NOT NULL DEFAULT now(),
  failing_since timestamptz,
  claimed_by text,
  claimed_until timestamptz,
  last_error text,
  created_at timestamptz NOT NULL DEFAULT now(),
  updated_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX deliveries_open ON deliveries (task_id, id) WHERE status IN ('pending','in_flight');
`;

export const up = (db: Kysely<unknown>) => runScript(db, script);
