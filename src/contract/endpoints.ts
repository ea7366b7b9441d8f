import { z } from 'zod';
import {
  ACPType,
  AgentInputType,
  DeleteResponse,
  JsonObject,
  PageQuery,
  QueryBool,
  ResourceName,
  Slug,
  SDKType,
  TaskStatus,
  Timestamp,
  VersionStatus,
} from './common.js';
import {
  Agent,
  ApiKey,
  Branch,
  Environment,
  Group,
  GroupMember,
  Namespace,
  Preset,
  Project,
  Scope,
  State,
  Task,
  Version,
  VersionEvent,
  Whoami,
} from './resources.js';

type Method = 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';

export interface Endpoint {
  method: Method;
  /** Fastify-style path: `/branches/:branch_id/versions`. */
  path: string;
  summary: string;
  tag: string;
  params?: z.ZodObject;
  query?: z.ZodObject;
  body?: z.ZodType;
  status: number;
  response: z.ZodType;
  /** false only for the health and schema endpoints. */
  auth?: boolean;
  /** Safe to retry after a connection failure, 429 or 503. */
  idempotent?: boolean;
}

const ep = <const E extends Endpoint>(e: E): E => e;

/** An object whose properties are computed by their thunks on first read, then kept. */
function lazyTable<T extends Record<string, () => Endpoint>>(thunks: T): { readonly [K in keyof T]: ReturnType<T[K]> } {
  const table = {} as { [K in keyof T]: ReturnType<T[K]> };
  for (const [name, thunk] of Object.entries(thunks)) {
    Object.defineProperty(table, name, {
      enumerable: true,
      configurable: true,
      get() {
        const value = thunk();
        Object.defineProperty(table, name, { value, enumerable: true, writable: false });
        return value;
      },
    });
  }
  return table;
}

const AgentPath = z.object({ namespace_slug: z.string().min(1), agent_name: z.string().min(1) });
const id = (name: string) => z.object({ [name]: z.string().min(1) });

// ---- request and response bodies -------------------------------------------------------------

export const MigrateTasksRequest = z
  .object({
    from_version_id: z.string().min(1).nullable().default(null),
    task_ids: z.array(z.string().min(1)).max(1000).nullable().default(null),
    to_latest: z.boolean().default(false),
    to_version_id: z.string().min(1).nullable().default(null),
    dry_run: z.boolean().default(false),
  })
  .meta({ id: 'MigrateTasksRequest' });
export type MigrateTasksRequest = z.infer<typeof MigrateTasksRequest>;

export const MigrateTasksResponse = z
  .object({
    branch_id: z.string(),
    to_version: Version,
    tasks: z.array(Task),
    from_version_id: z.string().nullable().optional(),
  })
  .meta({ id: 'MigrateTasksResponse' });
export type MigrateTasksResponse = z.infer<typeof MigrateTasksResponse>;

export const CreateStateRequest = z.object({ task_id: z.string().min(1), agent_id: z.string().min(1), state: JsonObject });
export const ReplaceStateRequest = CreateStateRequest;
export const MergeStateRequest = z.object({ state: JsonObject });

export const VersionList = z.object({ total: z.number().int(), versions: z.array(Version), branch_id: z.string().nullable() });
export type VersionList = z.infer<typeof VersionList>;
export const BranchList = z.object({ branches: z.array(Branch), total: z.number().int() });
export type BranchList = z.infer<typeof BranchList>;

export const VersionLimit = z.coerce.number().int().min(1).max(100).default(20);

export const DeployRequest = z
  .object({
    namespace: Slug.default('default'),
    agent_name: ResourceName,
    branch: z.string().min(1).max(255),
    git_hash: z.string().regex(/^[0-9a-f]{7,64}$/, 'a hexadecimal git commit hash'),
    git_message: z.string().max(10_000).default(''),
    author_name: z.string().min(1).max(255),
    author_email: z.string().min(1).max(255),
    image_url: z.string().min(1).max(2048),
    sdk_type: SDKType,
    acp_type: ACPType,
    is_dirty: z.boolean().default(false),
    replicas: z.number().int().min(1).max(10).default(1),
    are_tasks_sticky: z.boolean().default(false),
    description: z.string().max(1000).default(''),
    agent_input_type: AgentInputType.nullable().default(null),
    source_filesystem_id: z.string().nullable().default(null),
  })
  .meta({ id: 'DeployRequest' });
export type DeployRequest = z.infer<typeof DeployRequest>;

export const DeployResponse = z.object({
  agent_id: z.string(),
  branch_id: z.string(),
  version_id: z.string(),
  version_status: VersionStatus,
  message: z.string(),
  tasks_migrated: z.number().int(),
});

export const RegisterVersionRequest = z.object({
  version_id: z.string().min(1),
  /** ACTIVE: ready (or recovered); UNHEALTHY: failing health checks; FAILED: could not start. */
  status: z.enum(['ACTIVE', 'UNHEALTHY', 'FAILED']).default('ACTIVE'),
  replicas: z.number().int().min(0).max(10).optional(),
  failure_reason: z.string().max(200).optional(),
  failure_diagnostics: z
    .object({ title: z.string(), description: z.string(), action: z.string() })
    .optional(),
  registration_metadata: JsonObject.optional(),
});
export const RegisterVersionResponse = z.object({ version: Version, tasks_migrated: z.number().int() });

export const RollbackRequest = z.object({ target_version_id: z.string().min(1).nullable().default(null), dry_run: z.boolean().default(false) });
export const RollbackResponse = z.object({
  branch_id: z.string(),
  rolled_back_version_id: z.string(),
  target_version: Version,
  tasks_migrated: z.number().int(),
});

export const RetireBranchRequest = z.object({ reason: z.string().min(1).max(500), force: z.boolean().default(false) });

export const EnvironmentCreate = z.object({
  name: ResourceName,
  description: z.string().max(1000).default(''),
  branch_rules: z.array(z.string().min(1).max(255)).min(1).max(100),
});
export const EnvironmentUpdate = z.object({
  description: z.string().max(1000).optional(),
  branch_rules: z.array(z.string().min(1).max(255)).min(1).max(100).optional(),
});

export const CreateTaskRequest = z.object({
  agent_id: z.string().min(1).optional(),
  /** `namespace/agent` or a bare agent name in the `default` namespace. */
  agent_name: z.string().min(1).max(130).optional(),
  branch: z.string().min(1).max(255).optional(),
  name: z.string().min(1).max(255).nullable().optional(),
  params: JsonObject.nullable().optional(),
  filesystem_id: z.string().min(1).optional(),
  project_id: z.string().min(1).optional(),
});
export type CreateTaskRequest = z.infer<typeof CreateTaskRequest>;

export const UpdateTaskRequest = z.object({
  task_metadata: JsonObject.nullable().optional(),
  status: z.enum(['RUNNING', 'IDLE', 'COMPLETED', 'FAILED', 'CANCELED', 'TERMINATED', 'TIMED_OUT']).optional(),
  status_reason: z.string().max(1000).nullable().optional(),
});

export const TaskList = z.object({ tasks: z.array(Task), total: z.number().int() });

export const CreateKeyRequest = z.object({
  name: z.string().min(1).max(100),
  description: z.string().max(1000).default(''),
  scopes: z.array(Scope).min(1).max(100),
  sharing_group_ids: z.array(z.string().min(1)).max(100).default([]),
  expires_at: Timestamp.nullable().default(null),
});
export const CreateKeyResponse = z.object({ api_key: ApiKey, key: z.string() });

// ---- the endpoint table: routes, client methods and the OpenAPI document all come from here ---

/**
 * Each entry is built on first use: a CLI command touches one or two endpoints, and building all
 * sixty schemas at start-up would cost it more than the rest of its work.
 */
export const endpoints = lazyTable({
  // health and schema
  healthz: () => ep({ method: 'GET', path: '/healthz', summary: 'Liveness', tag: 'meta', status: 200, response: z.object({ status: z.literal('ok') }), auth: false, idempotent: true }),
  readyz: () => ep({ method: 'GET', path: '/readyz', summary: 'Readiness (database reachable)', tag: 'meta', status: 200, response: z.object({ status: z.literal('ok'), engine: z.enum(['pglite', 'postgres']) }), auth: false, idempotent: true }),

  // namespaces and projects
  createNamespace: () => ep({ method: 'POST', path: '/namespaces', summary: 'Create a namespace (org admins)', tag: 'namespaces', body: z.object({ name: z.string().min(1).max(100), slug: Slug }), status: 201, response: Namespace }),
  listNamespaces: () => ep({ method: 'GET', path: '/namespaces', summary: 'List namespaces', tag: 'namespaces', query: z.object({ ...PageQuery }), status: 200, response: z.object({ namespaces: z.array(Namespace), total: z.number().int() }), idempotent: true }),
  createProject: () => ep({ method: 'POST', path: '/projects', summary: 'Create a project', tag: 'projects', body: z.object({ namespace: Slug.default('default'), name: ResourceName, description: z.string().max(1000).default('') }), status: 201, response: Project }),
  listProjects: () => ep({ method: 'GET', path: '/projects', summary: 'List projects', tag: 'projects', query: z.object({ namespace: z.string().optional(), ...PageQuery }), status: 200, response: z.object({ projects: z.array(Project), total: z.number().int() }), idempotent: true }),

  // agents
  deploy: () => ep({ method: 'POST', path: '/agents/deploy', summary: 'Deploy a version (creates agent and branch if needed)', tag: 'agents', body: DeployRequest, status: 201, response: DeployResponse }),
  registerVersion: () => ep({ method: 'POST', path: '/versions/register', summary: 'Runtime report: version ready, unhealthy or failed', tag: 'versions', body: RegisterVersionRequest, status: 200, response: RegisterVersionResponse }),
  listAgents: () => ep({ method: 'GET', path: '/agents', summary: 'List agents', tag: 'agents', query: z.object({ namespace: z.string().optional(), ...PageQuery }), status: 200, response: z.object({ agents: z.array(Agent), total: z.number().int() }), idempotent: true }),
  getAgent: () => ep({ method: 'GET', path: '/agents/:agent_id', summary: 'Get an agent by id', tag: 'agents', params: id('agent_id'), status: 200, response: Agent, idempotent: true }),
  getAgentByName: () => ep({ method: 'GET', path: '/agents/name/:namespace_slug/:agent_name', summary: 'Get an agent by namespace and name', tag: 'agents', params: AgentPath, status: 200, response: Agent, idempotent: true }),
  deleteAgent: () => ep({ method: 'DELETE', path: '/agents/:agent_id', summary: 'Delete an agent', tag: 'agents', params: id('agent_id'), status: 200, response: DeleteResponse }),
  deleteAgentByName: () => ep({ method: 'DELETE', path: '/agents/name/:namespace_slug/:agent_name', summary: 'Delete an agent by name', tag: 'agents', params: AgentPath, status: 200, response: DeleteResponse }),

  // versions and branches (the spec's four list endpoints)
  listBranchVersions: () => ep({ method: 'GET', path: '/branches/:branch_id/versions', summary: 'Versions of a branch, newest deployed_at first', tag: 'versions', params: id('branch_id'), query: z.object({ limit: VersionLimit }), status: 200, response: VersionList, idempotent: true }),
  listAgentVersions: () => ep({ method: 'GET', path: '/agents/:namespace_slug/:agent_name/versions', summary: 'Versions of an agent, newest deployed_at first', tag: 'versions', params: AgentPath, query: z.object({ branch: z.string().min(1).optional(), status: VersionStatus.optional(), limit: VersionLimit }), status: 200, response: VersionList, idempotent: true }),
  listAgentBranches: () => ep({ method: 'GET', path: '/agents/:namespace_slug/:agent_name/branches', summary: 'Branches of an agent', tag: 'branches', params: AgentPath, query: z.object({ include_retired: QueryBool.default(false) }), status: 200, response: BranchList, idempotent: true }),
  listEnvironmentBranches: () => ep({ method: 'GET', path: '/agents/:namespace_slug/:agent_name/environments/:env_name/branches', summary: 'Branches matching an environment’s rules, updated_at descending', tag: 'environments', params: AgentPath.extend({ env_name: z.string().min(1) }), status: 200, response: BranchList, idempotent: true }),
  getBranch: () => ep({ method: 'GET', path: '/branches/:branch_id', summary: 'Get a branch', tag: 'branches', params: id('branch_id'), status: 200, response: Branch, idempotent: true }),
  rollbackBranch: () => ep({ method: 'POST', path: '/branches/:branch_id/rollback', summary: 'Roll a branch back to an earlier version', tag: 'branches', params: id('branch_id'), body: RollbackRequest, status: 200, response: RollbackResponse }),
  retireBranch: () => ep({ method: 'POST', path: '/branches/:branch_id/retire', summary: 'Retire a branch', tag: 'branches', params: id('branch_id'), body: RetireBranchRequest, status: 200, response: Branch }),
  getVersion: () => ep({ method: 'GET', path: '/versions/:version_id', summary: 'Get a version', tag: 'versions', params: id('version_id'), status: 200, response: Version, idempotent: true }),
  listVersionEvents: () => ep({ method: 'GET', path: '/versions/:version_id/events', summary: 'Lifecycle events of a version', tag: 'versions', params: id('version_id'), status: 200, response: z.object({ events: z.array(VersionEvent), total: z.number().int() }), idempotent: true }),
  listBranchEvents: () => ep({ method: 'GET', path: '/branches/:branch_id/events', summary: 'Lifecycle events of a branch', tag: 'branches', params: id('branch_id'), status: 200, response: z.object({ events: z.array(VersionEvent), total: z.number().int() }), idempotent: true }),

  // environments
  listEnvironments: () => ep({ method: 'GET', path: '/agents/:namespace_slug/:agent_name/environments', summary: 'Environments of an agent', tag: 'environments', params: AgentPath, status: 200, response: z.object({ environments: z.array(Environment), total: z.number().int() }), idempotent: true }),
  createEnvironment: () => ep({ method: 'POST', path: '/agents/:namespace_slug/:agent_name/environments', summary: 'Create an environment', tag: 'environments', params: AgentPath, body: EnvironmentCreate, status: 201, response: Environment }),
  getEnvironment: () => ep({ method: 'GET', path: '/agents/:namespace_slug/:agent_name/environments/:env_name', summary: 'Get an environment', tag: 'environments', params: AgentPath.extend({ env_name: z.string().min(1) }), status: 200, response: Environment, idempotent: true }),
  updateEnvironment: () => ep({ method: 'PATCH', path: '/agents/:namespace_slug/:agent_name/environments/:env_name', summary: 'Update an environment', tag: 'environments', params: AgentPath.extend({ env_name: z.string().min(1) }), body: EnvironmentUpdate, status: 200, response: Environment }),
  deleteEnvironment: () => ep({ method: 'DELETE', path: '/agents/:namespace_slug/:agent_name/environments/:env_name', summary: 'Delete an environment', tag: 'environments', params: AgentPath.extend({ env_name: z.string().min(1) }), status: 200, response: DeleteResponse }),
  resolveEnvironment: () => ep({ method: 'GET', path: '/agents/:namespace_slug/:agent_name/resolve-env', summary: 'Which environment a git branch falls in', tag: 'environments', params: AgentPath, query: z.object({ branch: z.string().min(1) }), status: 200, response: z.object({ branch: z.string(), environment: Environment }), idempotent: true }),

  // tasks
  createTask: () => ep({ method: 'POST', path: '/tasks', summary: 'Create a task', tag: 'tasks', body: CreateTaskRequest, status: 201, response: Task }),
  listTasks: () => ep({ method: 'GET', path: '/tasks', summary: 'List tasks', tag: 'tasks', query: z.object({ agent_id: z.string().optional(), agent: z.string().optional(), branch: z.string().optional(), branch_id: z.string().optional(), version_id: z.string().optional(), status: TaskStatus.optional(), ...PageQuery }), status: 200, response: TaskList, idempotent: true }),
  getTask: () => ep({ method: 'GET', path: '/tasks/:task_id', summary: 'Get a task', tag: 'tasks', params: id('task_id'), status: 200, response: Task, idempotent: true }),
  getTaskByName: () => ep({ method: 'GET', path: '/tasks/name/:task_name', summary: 'Get a task by name', tag: 'tasks', params: id('task_name'), status: 200, response: Task, idempotent: true }),
  updateTask: () => ep({ method: 'PATCH', path: '/tasks/:task_id', summary: 'Update task metadata or status', tag: 'tasks', params: id('task_id'), body: UpdateTaskRequest, status: 200, response: Task }),
  deleteTask: () => ep({ method: 'DELETE', path: '/tasks/:task_id', summary: 'Delete a task (soft)', tag: 'tasks', params: id('task_id'), status: 200, response: Task }),
  cancelTask: () => ep({ method: 'POST', path: '/tasks/:task_id/cancel', summary: 'Cancel a task', tag: 'tasks', params: id('task_id'), status: 200, response: Task }),
  migrateTasks: () => ep({ method: 'POST', path: '/tasks/migrate', summary: 'Move tasks between versions of one branch', tag: 'tasks', body: MigrateTasksRequest, status: 200, response: MigrateTasksResponse }),

  // states
  createState: () => ep({ method: 'POST', path: '/states', summary: 'Create a state record', tag: 'states', body: CreateStateRequest, status: 200, response: State }),
  listStates: () => ep({ method: 'GET', path: '/states', summary: 'Find states by task and/or agent', tag: 'states', query: z.object({ task_id: z.string().optional(), agent_id: z.string().optional() }), status: 200, response: z.object({ states: z.array(State), total: z.number().int() }), idempotent: true }),
  getState: () => ep({ method: 'GET', path: '/states/:state_id', summary: 'Get a state record', tag: 'states', params: id('state_id'), status: 200, response: State, idempotent: true }),
  replaceState: () => ep({ method: 'PUT', path: '/states/:state_id', summary: 'Replace a state record', tag: 'states', params: id('state_id'), body: ReplaceStateRequest, status: 200, response: State }),
  mergeState: () => ep({ method: 'PATCH', path: '/states/:state_id', summary: 'Merge top-level keys atomically (null deletes a key)', tag: 'states', params: id('state_id'), body: MergeStateRequest, status: 200, response: State }),
  deleteState: () => ep({ method: 'DELETE', path: '/states/:state_id', summary: 'Delete a state record', tag: 'states', params: id('state_id'), status: 200, response: DeleteResponse }),

  // access control
  whoami: () => ep({ method: 'GET', path: '/whoami', summary: 'The calling key', tag: 'keys', status: 200, response: Whoami, idempotent: true }),
  listPresets: () => ep({ method: 'GET', path: '/api_keys/presets', summary: 'Key presets for the creation wizard', tag: 'keys', status: 200, response: z.object({ presets: z.array(Preset) }), idempotent: true }),
  createKey: () => ep({ method: 'POST', path: '/api_keys', summary: 'Create an API key (secret shown once)', tag: 'keys', body: CreateKeyRequest, status: 201, response: CreateKeyResponse }),
  listKeys: () => ep({ method: 'GET', path: '/api_keys', summary: 'List API keys', tag: 'keys', query: z.object({ include_revoked: QueryBool.default(false) }), status: 200, response: z.object({ api_keys: z.array(ApiKey), total: z.number().int() }), idempotent: true }),
  getKey: () => ep({ method: 'GET', path: '/api_keys/:key_id', summary: 'Get an API key', tag: 'keys', params: id('key_id'), status: 200, response: ApiKey, idempotent: true }),
  revokeKey: () => ep({ method: 'DELETE', path: '/api_keys/:key_id', summary: 'Revoke an API key', tag: 'keys', params: id('key_id'), status: 200, response: ApiKey }),
  updateKeyScopes: () => ep({ method: 'PATCH', path: '/api_keys/:key_id', summary: 'Replace a key’s scopes', tag: 'keys', params: id('key_id'), body: z.object({ scopes: z.array(Scope).min(1).max(100) }), status: 200, response: ApiKey }),
  updateKeyGroups: () => ep({ method: 'PATCH', path: '/api_keys/:key_id/sharing-groups', summary: 'Replace a key’s sharing groups', tag: 'keys', params: id('key_id'), body: z.object({ sharing_group_ids: z.array(z.string().min(1)).max(100) }), status: 200, response: ApiKey }),
  rotateKey: () => ep({ method: 'POST', path: '/api_keys/:key_id/rotate', summary: 'Issue a new secret for a key', tag: 'keys', params: id('key_id'), status: 200, response: CreateKeyResponse }),
  createGroup: () => ep({ method: 'POST', path: '/groups', summary: 'Create a sharing group', tag: 'groups', body: z.object({ name: z.string().min(1).max(100), description: z.string().max(1000).default('') }), status: 201, response: Group }),
  listGroups: () => ep({ method: 'GET', path: '/groups', summary: 'List sharing groups', tag: 'groups', status: 200, response: z.object({ groups: z.array(Group), total: z.number().int() }), idempotent: true }),
  getGroup: () => ep({ method: 'GET', path: '/groups/:group_id', summary: 'Get a sharing group', tag: 'groups', params: id('group_id'), status: 200, response: Group, idempotent: true }),
  deleteGroup: () => ep({ method: 'DELETE', path: '/groups/:group_id', summary: 'Delete a sharing group', tag: 'groups', params: id('group_id'), status: 200, response: DeleteResponse }),
  listGroupMembers: () => ep({ method: 'GET', path: '/groups/:group_id/members', summary: 'Members of a sharing group', tag: 'groups', params: id('group_id'), status: 200, response: z.object({ members: z.array(GroupMember), total: z.number().int() }), idempotent: true }),
  addGroupMember: () => ep({ method: 'PUT', path: '/groups/:group_id/members/:member_id', summary: 'Add a key to a sharing group', tag: 'groups', params: z.object({ group_id: z.string().min(1), member_id: z.string().min(1) }), status: 200, response: GroupMember, idempotent: true }),
  removeGroupMember: () => ep({ method: 'DELETE', path: '/groups/:group_id/members/:member_id', summary: 'Remove a key from a sharing group', tag: 'groups', params: z.object({ group_id: z.string().min(1), member_id: z.string().min(1) }), status: 200, response: DeleteResponse }),
});

export type Endpoints = typeof endpoints;
export type EndpointName = keyof Endpoints;

type Infer<T> = T extends z.ZodType ? z.input<T> : never;
type Out<T> = T extends z.ZodType ? z.output<T> : never;

/** What a caller passes for an endpoint: path params, query and body, each only if it has one. */
export type EndpointInput<K extends EndpointName> = (Endpoints[K] extends { params: infer P } ? { params: Infer<P> } : {}) &
  (Endpoints[K] extends { query: infer Q } ? { query?: Infer<Q> } : {}) &
  (Endpoints[K] extends { body: infer B } ? { body: Infer<B> } : {});
export type EndpointOutput<K extends EndpointName> = Out<Endpoints[K]['response']>;

/** Server-side: what a handler receives after validation. */
export type EndpointRequest<K extends EndpointName> = {
  params: Endpoints[K] extends { params: infer P } ? Out<P> : {};
  query: Endpoints[K] extends { query: infer Q } ? Out<Q> : {};
  body: Endpoints[K] extends { body: infer B } ? Out<B> : undefined;
};
