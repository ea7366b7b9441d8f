import type { Agent, ApiKey, Branch, Environment, Group, Namespace, Project, State, Task, Version, VersionEvent } from '../../contract/resources.js';
import { versionLabel } from '../../contract/version-ref.js';
import { idsOnly, type NameBook } from '../names.js';
import { record, table, type Column, type View } from './view.js';

const short = (hash: string | null | undefined) => (hash ? hash.slice(0, 7) : hash);

export const namespaceColumns: Column<Namespace>[] = [
  { header: 'ID', value: (n) => n.id },
  { header: 'SLUG', value: (n) => n.slug },
  { header: 'NAME', value: (n) => n.name },
  { header: 'CREATED', value: (n) => n.created_at, format: 'time' },
];

export const projectColumns = (names: NameBook): Column<Project>[] => [
  { header: 'ID', value: (p) => p.id },
  { header: 'NAME', value: (p) => p.name },
  { header: 'NAMESPACE', value: (p) => names.namespace(p.namespace_id) },
  { header: 'NAMESPACE ID', value: (p) => p.namespace_id, wide: true },
  { header: 'DESCRIPTION', value: (p) => p.description },
  { header: 'CREATED', value: (p) => p.created_at, format: 'time' },
];

export const agentColumns = (names: NameBook): Column<Agent>[] => [
  { header: 'ID', value: (a) => a.id },
  { header: 'NAME', value: (a) => a.name },
  { header: 'NAMESPACE', value: (a) => names.namespace(a.namespace_id) },
  { header: 'NAMESPACE ID', value: (a) => a.namespace_id, wide: true },
  { header: 'STATUS', value: (a) => a.status, format: 'status' },
  { header: 'UPDATED', value: (a) => a.updated_at, format: 'time' },
];

export const agentRecord = (a: Agent, names: NameBook): View =>
  record([
    ['ID', a.id],
    ['Name', a.name],
    ['Namespace', names.namespace(a.namespace_id)],
    ['Namespace ID', a.namespace_id, 'text', 'wide'],
    ['Status', a.status, 'status'],
    ['Description', a.description],
    ['Input type', a.agent_input_type],
    ['Registered', a.registered_at, 'time'],
    ['Created', a.created_at, 'time'],
    ['Updated', a.updated_at, 'time'],
  ]);

export const branchColumns: Column<Branch>[] = [
  { header: 'ID', value: (b) => b.id },
  { header: 'BRANCH', value: (b) => b.git_branch },
  { header: 'VERSION', value: (b) => b.current_version?.id },
  { header: 'HASH', value: (b) => short(b.current_version?.git_hash) },
  { header: 'STATUS', value: (b) => (b.retired_at ? 'RETIRED' : b.current_version?.status), format: 'status' },
  { header: 'REPLICAS', value: (b) => b.replicas },
  { header: 'UPDATED', value: (b) => b.updated_at, format: 'time' },
];

export const branchRecord = (b: Branch): View =>
  record([
    ['ID', b.id],
    ['Agent', b.agent_id],
    ['Branch', b.git_branch],
    ['Normalized', b.git_branch_normalized],
    ['Replicas', b.replicas],
    ['Version', b.current_version?.id],
    ['Hash', b.current_version?.git_hash],
    ['Status', b.current_version?.status, 'status'],
    ['Retired', b.retired_at, 'time'],
    ['Retired because', b.retired_reason],
    ['Updated', b.updated_at, 'time'],
  ]);

export const versionColumns: Column<Version>[] = [
  { header: 'VERSION', value: (v) => versionLabel(v.number) },
  { header: 'ID', value: (v) => v.id },
  { header: 'HASH', value: (v) => short(v.git_hash) },
  { header: 'BRANCH', value: (v) => v.git_branch },
  { header: 'STATUS', value: (v) => v.status, format: 'status' },
  { header: 'MESSAGE', value: (v) => (v.git_message.length > 50 ? `${v.git_message.slice(0, 49)}…` : v.git_message) },
  { header: 'AUTHOR', value: (v) => v.author_name },
  { header: 'DEPLOYED', value: (v) => v.deployed_at, format: 'time' },
];

export const versionRecord = (v: Version): View =>
  record([
    ['Version', versionLabel(v.number)],
    ['ID', v.id],
    ['Status', v.status, 'status'],
    ['Branch', `${v.git_branch} (${v.branch_id})`],
    ['Git hash', v.git_hash],
    ['Message', v.git_message],
    ['Author', `${v.author_name} <${v.author_email}>`],
    ['Image', v.image_url],
    ['Dirty', v.is_dirty, 'bool'],
    ['SDK / ACP', `${v.sdk_type} / ${v.acp_type}`],
    ['Replicas', v.replicas],
    ['Deployed', v.deployed_at, 'time'],
    ['Rollbacks', v.rollback_count],
    ['Last rollback to', v.last_rollback_at, 'time'],
    ['Rolled back from', v.rolled_back_at, 'time'],
    ['Retired', v.retired_at, 'time'],
    ['Image expires', v.image_expires_at, 'time'],
    ['Failure', v.failure_reason],
    ['Diagnostics', v.failure_diagnostics ? Object.values(v.failure_diagnostics).join(' — ') : null],
  ]);

export const eventColumns: Column<VersionEvent>[] = [
  { header: 'SEQ', value: (e) => e.sequence },
  { header: 'TYPE', value: (e) => e.type },
  { header: 'VERSION', value: (e) => e.version_id },
  { header: 'DATA', value: (e) => e.data, format: 'json' },
  { header: 'AT', value: (e) => e.created_at, format: 'time' },
];

export const environmentColumns: Column<Environment>[] = [
  { header: 'NAME', value: (e) => e.name },
  { header: 'PROD', value: (e) => e.is_prod, format: 'bool' },
  { header: 'RULES', value: (e) => e.branch_rules.join(', ') },
  { header: 'DESCRIPTION', value: (e) => e.description },
  { header: 'UPDATED', value: (e) => e.updated_at, format: 'time' },
];

export const environmentRecord = (e: Environment): View =>
  record([
    ['ID', e.id],
    ['Name', e.name],
    ['Agent', e.agent_id],
    ['Production', e.is_prod, 'bool'],
    ['Rules', e.branch_rules.join(', ')],
    ['Description', e.description],
    ['Updated', e.updated_at, 'time'],
  ]);

/** Tasks with their agent as `ns/name` and their version as `vN` (`versions`: id to `vN`; ids with --wide). */
export const taskColumns = (names: NameBook, versions: ReadonlyMap<string, string>): Column<Task>[] => [
  { header: 'ID', value: (t) => t.id },
  { header: 'NAME', value: (t) => t.name },
  { header: 'AGENT', value: (t) => (t.agents?.[0] ? `${names.namespace(t.agents[0].namespace_id)}/${t.agents[0].name}` : null) },
  { header: 'STATUS', value: (t) => t.status, format: 'status' },
  { header: 'VERSION', value: (t) => (t.current_version_id ? (versions.get(t.current_version_id) ?? t.current_version_id) : null) },
  { header: 'VERSION ID', value: (t) => t.current_version_id, wide: true },
  { header: 'UPDATED', value: (t) => t.updated_at, format: 'time' },
];

export const taskRecord = (t: Task): View =>
  record([
    ['ID', t.id],
    ['Name', t.name],
    ['Status', t.status, 'status'],
    ['Reason', t.status_reason],
    ['Current version', t.current_version_id],
    ['Created on', t.created_version_id],
    ['Filesystem', t.filesystem_id],
    ['Namespace', t.namespace_id],
    ['Params', t.params, 'json'],
    ['Metadata', t.task_metadata, 'json'],
    ['Created', t.created_at, 'time'],
    ['Updated', t.updated_at, 'time'],
  ]);

export const stateColumns: Column<State>[] = [
  { header: 'ID', value: (s) => s.id },
  { header: 'TASK', value: (s) => s.task_id },
  { header: 'AGENT', value: (s) => s.agent_id },
  { header: 'VERSION', value: (s) => s.version },
  { header: 'KEYS', value: (s) => Object.keys(s.state).length },
  { header: 'UPDATED', value: (s) => s.updated_at, format: 'time' },
];

export const stateRecord = (s: State): View =>
  record([
    ['ID', s.id],
    ['Task', s.task_id],
    ['Agent', s.agent_id],
    ['Version', s.version],
    ['Updated', s.updated_at, 'time'],
    ['State', s.state, 'json'],
  ]);

/** Scopes as `--scope` takes them, by name (`agent:default/bot:viewer`), or by id with `idsOnly`. */
export const scopeText = (k: Pick<ApiKey, 'scopes'>, names: NameBook) => k.scopes.map((s) => names.scope(s)).join(', ');

export const keyColumns = (names: NameBook): Column<ApiKey>[] => [
  { header: 'ID', value: (k) => k.id },
  { header: 'NAME', value: (k) => k.name },
  { header: 'PREFIX', value: (k) => k.key_prefix },
  { header: 'SCOPES', value: (k) => scopeText(k, names) },
  { header: 'SCOPE IDS', value: (k) => scopeText(k, idsOnly), wide: true },
  { header: 'EXPIRES', value: (k) => k.expires_at, format: 'time' },
  { header: 'REVOKED', value: (k) => k.revoked_at, format: 'time' },
  { header: 'LAST USED', value: (k) => k.last_used_at, format: 'time' },
];

export const keyRecord = (k: ApiKey, names: NameBook): View =>
  record([
    ['ID', k.id],
    ['Name', k.name],
    ['Description', k.description],
    ['Prefix', k.key_prefix],
    ['Scopes', scopeText(k, names)],
    ['Scope ids', scopeText(k, idsOnly), 'text', 'wide'],
    ['Sharing groups', k.sharing_group_ids.map((id) => names.group(id)).join(', ')],
    ['Sharing group ids', k.sharing_group_ids.join(', '), 'text', 'wide'],
    ['Expires', k.expires_at, 'time'],
    ['Revoked', k.revoked_at, 'time'],
    ['Last used', k.last_used_at, 'time'],
    ['Created', k.created_at, 'time'],
  ]);

export const groupColumns: Column<Group>[] = [
  { header: 'ID', value: (g) => g.id },
  { header: 'NAME', value: (g) => g.name },
  { header: 'MEMBERS', value: (g) => g.member_count },
  { header: 'DESCRIPTION', value: (g) => g.description },
  { header: 'CREATED', value: (g) => g.created_at, format: 'time' },
];

export { record, table };
