import type { Kysely } from 'kysely';
import { runScript } from './script.js';

/**
 * The first schema: orgs, keys, groups and grants, projects, agents, branches, versions and
 * their events, environments, filesystems, tasks and states.
 */
export const script = /* sql */ `
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
`;

export const up = (db: Kysely<unknown>) => runScript(db, script);
