import { SYSTEM_FOLDER_TYPES } from '../../contract/filesystems.js';

/**
 * The schema, as ordered SQL migrations applied identically to PGlite and PostgreSQL.
 * Append new migrations; never edit one that has shipped.
 */
export const migrations: { name: string; sql: string }[] = [
  {
    name: '001_initial',
    sql: /* sql */ `
CREATE TABLE orgs (
  id text PRIMARY KEY,
  name text NOT NULL UNIQUE,
  created_at timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE namespaces (
  id text PRIMARY KEY,
  org_id text NOT NULL REFERENCES orgs(id),
  name text NOT NULL,
  slug text NOT NULL UNIQUE,
  created_at timestamptz NOT NULL DEFAULT now(),
  updated_at timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE api_keys (
  id text PRIMARY KEY,
  org_id text NOT NULL REFERENCES orgs(id),
  name text NOT NULL,
  description text NOT NULL DEFAULT '',
  key_hash text NOT NULL UNIQUE,
  key_prefix text NOT NULL,
  created_by_key_id text REFERENCES api_keys(id),
  expires_at timestamptz,
  revoked_at timestamptz,
  last_used_at timestamptz,
  created_at timestamptz NOT NULL DEFAULT now(),
  updated_at timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE groups (
  id text PRIMARY KEY,
  org_id text NOT NULL REFERENCES orgs(id),
  name text NOT NULL,
  description text NOT NULL DEFAULT '',
  created_at timestamptz NOT NULL DEFAULT now(),
  updated_at timestamptz NOT NULL DEFAULT now(),
  UNIQUE (org_id, name)
);

CREATE TABLE group_members (
  group_id text NOT NULL REFERENCES groups(id) ON DELETE CASCADE,
  key_id text NOT NULL REFERENCES api_keys(id),
  added_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (group_id, key_id)
);
CREATE INDEX group_members_key ON group_members (key_id);

-- A role on a resource, held by a key or a group. source 'scope' rows are a key's own scopes
-- (as created); 'owner' rows are granted when a principal creates the resource.
CREATE TABLE grants (
  id bigserial PRIMARY KEY,
  principal_type text NOT NULL CHECK (principal_type IN ('key', 'group')),
  principal_id text NOT NULL,
  resource_type text NOT NULL CHECK (resource_type IN ('org', 'namespace', 'project', 'agent')),
  resource_id text NOT NULL,
  role text NOT NULL,
  legacy_role text,
  source text NOT NULL CHECK (source IN ('scope', 'owner')),
  created_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX grants_principal ON grants (principal_type, principal_id);
CREATE INDEX grants_resource ON grants (resource_type, resource_id);

CREATE TABLE projects (
  id text PRIMARY KEY,
  namespace_id text NOT NULL REFERENCES namespaces(id),
  name text NOT NULL,
  description text NOT NULL DEFAULT '',
  created_by_key_id text REFERENCES api_keys(id),
  created_at timestamptz NOT NULL DEFAULT now(),
  updated_at timestamptz NOT NULL DEFAULT now(),
  UNIQUE (namespace_id, name)
);

CREATE TABLE agents (
  id text PRIMARY KEY,
  namespace_id text NOT NULL REFERENCES namespaces(id),
  name text NOT NULL,
  description text NOT NULL DEFAULT '',
  status text NOT NULL DEFAULT 'ACTIVE' CHECK (status IN ('ACTIVE', 'DELETED')),
  status_reason text,
  agent_input_type text CHECK (agent_input_type IN ('text', 'json')),
  registered_at timestamptz,
  registration_metadata jsonb,
  created_by_key_id text REFERENCES api_keys(id),
  created_at timestamptz NOT NULL DEFAULT now(),
  updated_at timestamptz NOT NULL DEFAULT now()
);
-- One live agent per name in a namespace; a deleted agent frees its name.
CREATE UNIQUE INDEX agents_namespace_name ON agents (namespace_id, name) WHERE status = 'ACTIVE';

CREATE TABLE branches (
  id text PRIMARY KEY,
  agent_id text NOT NULL REFERENCES agents(id),
  git_branch text NOT NULL,
  git_branch_normalized text NOT NULL,
  replicas integer NOT NULL DEFAULT 1,
  current_version_id text,
  event_sequence integer NOT NULL DEFAULT 0,
  retired_at timestamptz,
  retired_reason text,
  created_at timestamptz NOT NULL DEFAULT now(),
  updated_at timestamptz NOT NULL DEFAULT now(),
  UNIQUE (agent_id, git_branch)
);

CREATE TABLE versions (
  id text PRIMARY KEY,
  branch_id text NOT NULL REFERENCES branches(id),
  agent_id text NOT NULL REFERENCES agents(id),
  git_hash text NOT NULL,
  git_branch text NOT NULL,
  git_message text NOT NULL DEFAULT '',
  author_name text NOT NULL,
  author_email text NOT NULL,
  image_url text NOT NULL,
  status text NOT NULL CHECK (status IN ('DEPLOYING','ACTIVE','FAILED','UNHEALTHY','DRAINING','RETIRED','ROLLED_BACK')),
  deployed_at timestamptz NOT NULL,
  sdk_type text NOT NULL,
  acp_type text NOT NULL,
  is_dirty boolean NOT NULL DEFAULT false,
  replicas integer NOT NULL DEFAULT 0,
  desired_replicas integer NOT NULL DEFAULT 1,
  are_tasks_sticky boolean NOT NULL DEFAULT false,
  description text NOT NULL DEFAULT '',
  rollback_count integer NOT NULL DEFAULT 0,
  last_rollback_at timestamptz,
  rolled_back_at timestamptz,
  retired_at timestamptz,
  image_expires_at timestamptz,
  failure_reason text,
  failure_diagnostics jsonb,
  source_filesystem_id text,
  created_at timestamptz NOT NULL DEFAULT now(),
  updated_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX versions_branch_deployed ON versions (branch_id, deployed_at DESC, id DESC);
CREATE INDEX versions_agent_deployed ON versions (agent_id, deployed_at DESC, id DESC);
ALTER TABLE branches ADD CONSTRAINT branches_current_version_fk FOREIGN KEY (current_version_id) REFERENCES versions(id);

CREATE TABLE version_events (
  id text PRIMARY KEY,
  branch_id text NOT NULL REFERENCES branches(id),
  version_id text REFERENCES versions(id),
  sequence integer NOT NULL,
  type text NOT NULL,
  data jsonb NOT NULL DEFAULT '{}',
  created_at timestamptz NOT NULL DEFAULT now(),
  UNIQUE (branch_id, sequence)
);
CREATE INDEX version_events_version ON version_events (version_id, sequence);

CREATE TABLE environments (
  id text PRIMARY KEY,
  agent_id text NOT NULL REFERENCES agents(id),
  name text NOT NULL,
  description text NOT NULL DEFAULT '',
  is_prod boolean NOT NULL DEFAULT false,
  branch_rules jsonb NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now(),
  updated_at timestamptz NOT NULL DEFAULT now(),
  UNIQUE (agent_id, name)
);

CREATE TABLE filesystems (
  id text PRIMARY KEY,
  namespace_id text NOT NULL REFERENCES namespaces(id),
  project_id text REFERENCES projects(id),
  created_at timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE tasks (
  id text PRIMARY KEY,
  agent_id text NOT NULL REFERENCES agents(id),
  branch_id text NOT NULL REFERENCES branches(id),
  namespace_id text NOT NULL REFERENCES namespaces(id),
  filesystem_id text NOT NULL REFERENCES filesystems(id),
  project_id text REFERENCES projects(id),
  name text UNIQUE,
  status text NOT NULL CHECK (status IN ('IDLE','CANCELED','COMPLETED','FAILED','RUNNING','TERMINATED','TIMED_OUT','DELETED')),
  status_reason text,
  params jsonb,
  task_metadata jsonb,
  created_version_id text NOT NULL REFERENCES versions(id),
  current_version_id text NOT NULL REFERENCES versions(id),
  created_by_key_id text REFERENCES api_keys(id),
  created_at timestamptz NOT NULL DEFAULT now(),
  updated_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX tasks_current_version_status ON tasks (current_version_id, status);
CREATE INDEX tasks_agent_created ON tasks (agent_id, created_at DESC);
CREATE INDEX tasks_branch ON tasks (branch_id);

CREATE TABLE states (
  id text PRIMARY KEY,
  task_id text NOT NULL REFERENCES tasks(id),
  agent_id text NOT NULL REFERENCES agents(id),
  state jsonb NOT NULL,
  version integer NOT NULL DEFAULT 1,
  created_at timestamptz NOT NULL DEFAULT now(),
  updated_at timestamptz NOT NULL DEFAULT now(),
  UNIQUE (task_id, agent_id)
);
CREATE INDEX states_agent ON states (agent_id);
`,
  },
  {
    // The conversation (DESIGN section 9): every task record (event, message, message update, status
    // change, tracker update) takes the next number of the task's own counter, tasks.last_sequence_id,
    // in the writing transaction, and lands in task_stream as the snapshot the stream replays.
    name: '002_conversation',
    sql: `
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
`,
  },
  {
    // Delivery to agents (DESIGN section 10): registration tokens (hashed), runtime keys (api_keys
    // confined to one agent), the live replicas of each version and the transactional outbox.
    name: '003_delivery',
    sql: `
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
`,
  },
  {
    name: '004_filesystems',
    sql: /* sql */ `
ALTER TABLE filesystems ADD COLUMN archive_checksum text;
ALTER TABLE filesystems ADD COLUMN size_bytes bigint NOT NULL DEFAULT 0;
ALTER TABLE filesystems ADD COLUMN files_count integer NOT NULL DEFAULT 0;
ALTER TABLE filesystems ADD COLUMN archive_bytes bigint NOT NULL DEFAULT 0;
ALTER TABLE filesystems ADD COLUMN blob_key text;
ALTER TABLE filesystems ADD COLUMN manifest_key text;
ALTER TABLE filesystems ADD COLUMN created_by_key_id text REFERENCES api_keys(id);
ALTER TABLE filesystems ADD COLUMN updated_at timestamptz NOT NULL DEFAULT now();
CREATE INDEX filesystems_project ON filesystems (project_id);
CREATE INDEX tasks_filesystem ON tasks (filesystem_id);
CREATE INDEX versions_source_filesystem ON versions (source_filesystem_id);

CREATE TABLE task_system_folders (
  task_id text NOT NULL REFERENCES tasks(id),
  type text NOT NULL CHECK (type IN (${SYSTEM_FOLDER_TYPES.map((t) => `'${t}'`).join(',')})),
  filesystem_id text NOT NULL REFERENCES filesystems(id),
  PRIMARY KEY (task_id, type)
);
`,
  },
  {
    // Issue 8: names that told one org about another. Task names and namespace slugs become unique
    // per org (globally unique data is unique per org, so existing rows stay valid). tasks.org_id
    // is filled from the namespace by a trigger, so every writer of tasks gets it right.
    name: '005_hardening',
    sql: /* sql */ `
ALTER TABLE tasks ADD COLUMN org_id text REFERENCES orgs(id);
UPDATE tasks SET org_id = n.org_id FROM namespaces n WHERE n.id = tasks.namespace_id;
ALTER TABLE tasks ALTER COLUMN org_id SET NOT NULL;
CREATE FUNCTION tasks_fill_org_id() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN IF NEW.org_id IS NULL THEN SELECT org_id INTO NEW.org_id FROM namespaces WHERE id = NEW.namespace_id; END IF; RETURN NEW; END $$;
CREATE TRIGGER tasks_fill_org_id BEFORE INSERT ON tasks FOR EACH ROW EXECUTE FUNCTION tasks_fill_org_id();
ALTER TABLE tasks DROP CONSTRAINT tasks_name_key;
CREATE UNIQUE INDEX tasks_org_name ON tasks (org_id, name);
ALTER TABLE namespaces DROP CONSTRAINT namespaces_slug_key;
CREATE UNIQUE INDEX namespaces_org_slug ON namespaces (org_id, slug);
`,
  },
  {
    // Every version gets a number per agent in deploy order (v1, v2, ...), existing ones by
    // deployed_at; agents.last_version_number is the counter a deploy increments under the row lock.
    name: '006_version_numbers',
    sql: /* sql */ `
ALTER TABLE agents ADD COLUMN last_version_number integer NOT NULL DEFAULT 0;
ALTER TABLE versions ADD COLUMN number integer;
UPDATE versions SET number = numbered.n
  FROM (SELECT id, row_number() OVER (PARTITION BY agent_id ORDER BY deployed_at, id)::int AS n FROM versions) AS numbered
  WHERE versions.id = numbered.id;
UPDATE agents SET last_version_number = COALESCE((SELECT max(number) FROM versions WHERE versions.agent_id = agents.id), 0);
ALTER TABLE versions ALTER COLUMN number SET NOT NULL;
CREATE UNIQUE INDEX versions_agent_number ON versions (agent_id, number);
CREATE INDEX versions_agent_git_hash ON versions (agent_id, lower(git_hash) text_pattern_ops);
`,
  },
  {
    // Issue 12: an async delivery stays `leased` to the replica that acknowledged it (leased_to, its
    // acp_url) until the agent reports its handler finished, the replica goes, or the lease
    // (lease_ms from the last renewal, ending at claimed_until) runs out.
    name: '007_delivery_completion',
    sql: /* sql */ `
ALTER TABLE deliveries DROP CONSTRAINT deliveries_status_check;
ALTER TABLE deliveries ADD CONSTRAINT deliveries_status_check CHECK (status IN ('pending','in_flight','leased','done','failed'));
ALTER TABLE deliveries ADD COLUMN leased_to text;
ALTER TABLE deliveries ADD COLUMN lease_ms integer;
DROP INDEX deliveries_open;
CREATE INDEX deliveries_open ON deliveries (task_id, id) WHERE status IN ('pending','in_flight','leased');
CREATE INDEX deliveries_leased ON deliveries (version_id, leased_to) WHERE status = 'leased';
`,
  },
  {
    // Wire details of the upstream API: a version's CPU and memory requests and limits (null: the
    // runtime's defaults), and who created a namespace or a sharing group (null for older rows and
    // for the namespace made at first start).
    name: '008_wire_details',
    sql: /* sql */ `
ALTER TABLE versions ADD COLUMN resources jsonb;
ALTER TABLE namespaces ADD COLUMN created_by_key_id text REFERENCES api_keys(id);
ALTER TABLE groups ADD COLUMN created_by_key_id text REFERENCES api_keys(id);
`,
  },
];
