import type { Agent, Branch, Environment, Namespace, Project, State, Task, Version, VersionEvent } from '../../contract/resources.js';
import type { Selectable } from 'kysely';
import type {
  AgentsTable,
  BranchesTable,
  EnvironmentsTable,
  NamespacesTable,
  ProjectsTable,
  StatesTable,
  TasksTable,
  VersionEventsTable,
  VersionsTable,
} from './db.js';

/** Date (or driver string) -> ISO 8601 UTC with milliseconds. */
export const iso = (value: Date | string | null | undefined): string | null =>
  value == null ? null : (value instanceof Date ? value : new Date(value)).toISOString();
const isoRequired = (value: Date | string) => iso(value) as string;

type Row<T> = Selectable<T>;

export const toAgent = (r: Row<AgentsTable>): Agent => ({
  id: r.id,
  namespace_id: r.namespace_id,
  name: r.name,
  description: r.description,
  created_at: isoRequired(r.created_at),
  updated_at: isoRequired(r.updated_at),
  agent_input_type: r.agent_input_type,
  registered_at: iso(r.registered_at),
  registration_metadata: (r.registration_metadata as Record<string, unknown> | null) ?? null,
  status: r.status,
  status_reason: r.status_reason,
});

export const toVersion = (r: Row<VersionsTable>): Version => ({
  id: r.id,
  number: r.number,
  branch_id: r.branch_id,
  git_hash: r.git_hash,
  git_branch: r.git_branch,
  git_message: r.git_message,
  author_name: r.author_name,
  author_email: r.author_email,
  image_url: r.image_url,
  status: r.status as Version['status'],
  deployed_at: isoRequired(r.deployed_at),
  sdk_type: r.sdk_type as Version['sdk_type'],
  acp_type: r.acp_type as Version['acp_type'],
  is_dirty: r.is_dirty,
  replicas: r.replicas,
  rollback_count: r.rollback_count,
  last_rollback_at: iso(r.last_rollback_at),
  rolled_back_at: iso(r.rolled_back_at),
  retired_at: iso(r.retired_at),
  image_expires_at: iso(r.image_expires_at),
  failure_reason: r.failure_reason,
  failure_diagnostics: (r.failure_diagnostics as Record<string, string> | null) ?? null,
  source_filesystem_id: r.source_filesystem_id,
  resources: (r.resources as Version['resources']) ?? null,
  double_texting: r.double_texting,
  created_at: iso(r.created_at),
  updated_at: iso(r.updated_at),
});

/** A branch row joined with its current version's summary columns (prefixed `cv_`). */
export type BranchRow = Row<BranchesTable> & {
  cv_id: string | null;
  cv_git_hash: string | null;
  cv_status: string | null;
  cv_deployed_at: Date | string | null;
  cv_git_message: string | null;
  cv_source_filesystem_id: string | null;
};

export const toBranch = (r: BranchRow): Branch => ({
  id: r.id,
  agent_id: r.agent_id,
  git_branch: r.git_branch,
  git_branch_normalized: r.git_branch_normalized,
  replicas: r.replicas,
  created_at: isoRequired(r.created_at),
  updated_at: isoRequired(r.updated_at),
  retired_at: iso(r.retired_at),
  retired_reason: r.retired_reason,
  current_version: r.cv_id
    ? {
        id: r.cv_id,
        git_hash: r.cv_git_hash as string,
        status: r.cv_status as Version['status'],
        deployed_at: isoRequired(r.cv_deployed_at as Date),
        git_message: r.cv_git_message ?? '',
        source_filesystem_id: r.cv_source_filesystem_id,
      }
    : null,
});

export const toTask = (r: Row<TasksTable>): Task => ({
  id: r.id,
  filesystem_id: r.filesystem_id,
  namespace_id: r.namespace_id,
  name: r.name,
  status: r.status as Task['status'],
  status_reason: r.status_reason,
  params: (r.params as Record<string, unknown> | null) ?? null,
  task_metadata: (r.task_metadata as Record<string, unknown> | null) ?? null,
  created_version_id: r.created_version_id,
  current_version_id: r.current_version_id,
  created_at: iso(r.created_at),
  updated_at: iso(r.updated_at),
  // Only once its agent reported GenAI token counts (issue 24): other tasks look as they always did.
  ...(Number(r.input_tokens ?? 0) > 0 || Number(r.output_tokens ?? 0) > 0
    ? { usage: { input_tokens: Number(r.input_tokens ?? 0), output_tokens: Number(r.output_tokens ?? 0) } }
    : {}),
  ...(r.shadow_of ? { shadow_of: r.shadow_of } : {}),
  ...(r.migration_error ? { migration_error: r.migration_error as unknown as NonNullable<Task['migration_error']> } : {}),
});

export const toState = (r: Row<StatesTable>): State => ({
  id: r.id,
  task_id: r.task_id,
  agent_id: r.agent_id,
  state: r.state as Record<string, unknown>,
  version: r.version,
  created_at: isoRequired(r.created_at),
  updated_at: isoRequired(r.updated_at),
  written_by_version_id: r.written_by_version_id ?? null,
});

export const toEnvironment = (r: Row<EnvironmentsTable>): Environment => ({
  id: r.id,
  agent_id: r.agent_id,
  name: r.name,
  description: r.description,
  is_prod: r.is_prod,
  branch_rules: r.branch_rules as string[],
  created_at: isoRequired(r.created_at),
  updated_at: isoRequired(r.updated_at),
});

export const toNamespace = (r: Row<NamespacesTable>): Namespace => ({
  id: r.id,
  org_id: r.org_id,
  owner_org_id: r.org_id,
  name: r.name,
  slug: r.slug,
  created_by: r.created_by_key_id,
  created_at: isoRequired(r.created_at),
  updated_at: isoRequired(r.updated_at),
});

export const toProject = (r: Row<ProjectsTable>): Project => ({
  id: r.id,
  namespace_id: r.namespace_id,
  name: r.name,
  description: r.description,
  created_at: isoRequired(r.created_at),
  updated_at: isoRequired(r.updated_at),
});

export const toVersionEvent = (r: Row<VersionEventsTable>): VersionEvent => ({
  id: r.id,
  branch_id: r.branch_id,
  version_id: r.version_id,
  sequence: r.sequence,
  type: r.type,
  data: r.data as Record<string, unknown>,
  created_at: isoRequired(r.created_at),
});
