import { z } from 'zod';
import {
  DEFAULT_ACP_TYPE,
  DEFAULT_DOUBLE_TEXTING,
  DEFAULT_SDK_TYPE,
  DEPLOY_REPLICAS,
  DOUBLE_TEXTING_POLICIES,
  VERSION_LIST_LIMIT,
  VERSION_LIST_MAX,
} from './enums.js';
export { VERSION_LIST_MAX };
import { VersionLogs, VersionLogsQuery } from './runtime.js';
import { CreateRolloutRequest, ListMigrationsQuery, ListRolloutsQuery, MigrationList, MigrationRecord, Rollout, RolloutList } from './rollouts.js';
import {
  ACPType,
  AgentInputType,
  DeleteResponse,
  JsonObject,
  NonBlank,
  PageQuery,
  QueryBool,
  QueryInt,
  ResourceName,
  Slug,
  SDKType,
  TaskStatus,
  Timestamp,
  VersionStatus,
} from './common.js';
import { REPORTED_VERSION_STATUSES, SETTABLE_TASK_STATUSES } from './lifecycle.js';
import { parseVersionRef, VERSION_REF_FORMS } from './version-ref.js';
import {
  ConversationPageQuery,
  CreateEventRequest,
  CreateMessageRequest,
  Delivery,
  DeliveryAnswerRequest,
  CompleteDeliveriesRequest,
  CompleteDeliveriesResponse,
  InterruptResult,
  TaskTurn,
  DeliveryId,
  Event,
  EventList,
  HandlerErrorRequest,
  ListEventsQuery,
  ListMessagesQuery,
  Message,
  MessageList,
  RegistrationTokenResponse,
  SigningSecretResponse,
  StreamQuery,
  Tracker,
  TrackerList,
  TrackerQuery,
  UpdateMessageRequest,
  AppendMessageDeltaRequest,
  MessageDelta,
  UpdateTrackerRequest,
} from './conversation.js';
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
  ResourceRequirements,
  Scope,
  State,
  StateHistoryEntry,
  Task,
  Version,
  VersionEvent,
  Whoami,
} from './resources.js';
import { CreateScheduleRequest, ListSchedulesQuery, Schedule, ScheduleList, ScheduleTick } from './schedules.js';
import { StatusQuery, StatusReport } from './status.js';
import { Access, AccessQuery, ConsoleSession, CreateSessionRequest, SignInToken } from './console.js';
import { AgentSecret, AgentSecretList, SecretName, SecretScopeQuery, SetSecretRequest } from './secrets.js';
import { CompleteDeliveryRequest, TaskTraces, Trace, TraceQuery } from './traces.js';
import { CreateRehearsalRequest, Rehearsal } from './rehearsals.js';
import { ArchiveBody, CreateFilesystemRequest, FileManifest, Filesystem, FilesystemList, SystemFolderType } from './filesystems.js';

/**
 * Where an operation lives and how it may be called: method, path, success status, whether it
 * needs a key, and whether a retry is safe. The plain-data part of an endpoint: `npm run build`
 * writes every endpoint's route into routes.ts (no zod), so a client can send a request before it
 * has loaded the schemas that parse the answer.
 */
export interface Route {
  method: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';
  /** Fastify-style path: `/branches/:branch_id/versions`. */
  path: string;
  status: number;
  /**
   * false only for the health and schema endpoints; 'optional' where a body credential (a
   * registration token) stands in for a key.
   */
  auth?: boolean | 'optional';
  /**
   * Accepts `Idempotency-Key`: the same key and body within 24 h returns the first response. The
   * client sends a fresh key on every call of such an endpoint (the caller may pass its own).
   */
  idempotencyKey?: boolean;
  /** Answers Server-Sent Events (`text/event-stream`), resumable with `Last-Event-ID`. */
  sse?: boolean;
  /** Safe to retry after a connection failure, 429 or 503. */
  idempotent?: boolean;
  /**
   * Bytes rather than JSON: the media types an upload takes (streamed, with its own size limit) or
   * the one a download answers with. The sync library (src/sync) calls these, not the JSON client.
   */
  binary?: { request?: readonly string[]; response?: string };
  /** Request body fields that are secret values: the client never prints them (`--debug` traces). */
  redact?: readonly string[];
}

/** The route keys, in the order routes.ts lists them. */
export const ROUTE_KEYS = [
  'method',
  'path',
  'status',
  'auth',
  'idempotencyKey',
  'sse',
  'idempotent',
  'binary',
  'redact',
] as const satisfies readonly (keyof Route)[];

/**
 * One endpoint, the only place for its facts: its route, its documentation and the schemas of
 * what goes in and comes out. Everything else (routes.ts, the client's methods, the server's
 * validation, openapi.json, the response shapes, the README's endpoint table) is derived from it.
 */
export interface Endpoint extends Route {
  summary: string;
  tag: string;
  params?: z.ZodObject;
  query?: z.ZodObject;
  body?: z.ZodType;
  /** Request headers the endpoint reads (documented in openapi.json). */
  headers?: z.ZodObject;
  /** Response headers beyond the usual ones, by name: what each carries. */
  responseHeaders?: Record<string, string>;
  response: z.ZodType;
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

/** Every path parameter: at most as long as the longest name (task names, 255). */
const PathParam = z.string().min(1).max(255);
const AgentPath = z.object({ namespace_slug: PathParam, agent_name: PathParam });
const id = (name: string) => z.object({ [name]: PathParam });

// ---- conditional requests ---------------------------------------------------------------------

const STATE_IF_MATCH = z.object({
  'if-match': z.string().optional().describe('Write only if the state is at one of these versions (`"3"`, `W/"3"`, a list, or `*`); 412 otherwise'),
});
const STATE_ETAG = { ETag: 'The state\'s version, `"<version>"`: send it back in If-Match' };
const TREE_ETAG = { ETag: 'The tree checksum, `"<checksum>"`: send it back in If-None-Match (304) or If-Match' };

// ---- request and response bodies -------------------------------------------------------------

/**
 * The most tasks one migration request moves (and answers with): a bulk migration of a version
 * with more RUNNING tasks is refused (409 `migration_too_large`) unless it sends `limit`, and is
 * then repeated until it moves none. Bounds the response (~0.45 KB per task) and the server's memory.
 */
export const MIGRATION_MAX_TASKS = 10_000;

export const MigrateTasksRequest = z
  .object({
    from_version_id: z.string().min(1).nullable().default(null),
    task_ids: z.array(z.string().min(1)).max(1000).nullable().default(null),
    to_latest: z.boolean().default(false),
    to_version_id: z.string().min(1).nullable().default(null),
    dry_run: z.boolean().default(false),
    /** Bulk mode only: move at most this many of the source's RUNNING tasks (oldest id first). */
    limit: z.number().int().min(1).max(MIGRATION_MAX_TASKS).nullable().default(null),
  })
  .meta({ id: 'MigrateTasksRequest' });
export type MigrateTasksRequest = z.infer<typeof MigrateTasksRequest>;

export const MigrateTasksResponse = z
  .object({
    branch_id: z.string(),
    to_version: Version,
    tasks: z.array(Task),
    from_version_id: z.string().nullable().optional(),
    /** True when the request was a dry run: `tasks` is the plan and nothing moved. */
    dry_run: z.boolean(),
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

/** Version lists show the newest versions only: at most this many (no pages). */
export const VersionLimit = QueryInt(VERSION_LIST_LIMIT.min, VERSION_LIST_LIMIT.max).default(VERSION_LIST_LIMIT.default);

/**
 * An agent's name, or `namespace/name` as `POST /tasks` takes it (the upstream API's form): a
 * namespace slug, a slash, an agent name.
 */
export const AgentNameRef = z
  .string()
  .max(127)
  .regex(
    /^(?:[a-z0-9][a-z0-9-]{1,61}[a-z0-9]\/)?[a-z0-9][a-z0-9_-]{0,62}$/,
    'an agent name (lowercase letters, digits, `_` and `-`; starts with a letter or digit), optionally as namespace/name',
  );

export const DeployRequest = z
  .object({
    /** Default: the namespace `agent_name` names, else `default`. */
    namespace: Slug.optional().meta({ description: 'Namespace slug; default: the one agent_name names (namespace/name), else `default`' }),
    agent_name: AgentNameRef,
    branch: NonBlank(255),
    git_hash: z.string().regex(/^[0-9a-f]{7,64}$/, 'a hexadecimal git commit hash'),
    git_message: z.string().max(10_000).default(''),
    author_name: NonBlank(255),
    author_email: NonBlank(255),
    image_url: z.string().min(1).max(2048),
    sdk_type: SDKType.default(DEFAULT_SDK_TYPE),
    acp_type: ACPType.default(DEFAULT_ACP_TYPE),
    is_dirty: z.boolean().default(false),
    replicas: z.number().int().min(DEPLOY_REPLICAS.min).max(DEPLOY_REPLICAS.max).default(DEPLOY_REPLICAS.default),
    resources: ResourceRequirements.nullable().default(null),
    /** agentctl.json `double_texting`: what an event arriving while a turn of the task is open does. */
    double_texting: z.enum(DOUBLE_TEXTING_POLICIES).default(DEFAULT_DOUBLE_TEXTING),
    are_tasks_sticky: z.boolean().default(false),
    description: z.string().max(1000).default(''),
    agent_input_type: AgentInputType.nullable().default(null),
    source_filesystem_id: z.string().min(1).max(64).nullable().default(null),
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
  /** The new version's number: `v3`. */
  version_number: z.number().int().min(1),
});

/**
 * Two callers: a runtime with a user key (write on the agent) reporting a status, and an agent
 * process registering with its one-time `registration_token` and no key (README "Delivery to agents, in short"), which
 * gets back its runtime key in `agent_api_key`.
 */
export const RegisterVersionRequest = z.object({
  version_id: z.string().min(1),
  branch_id: z.string().min(1).optional(),
  /** Where the dispatcher delivers: `{acp_url}/api`. */
  acp_url: z
    .url({ protocol: /^https?$/ })
    .max(2048)
    .optional(),
  registration_token: z.string().min(1).max(200).optional(),
  /** ACTIVE: ready (or recovered); UNHEALTHY: failing health checks; FAILED: could not start. */
  status: z.enum(REPORTED_VERSION_STATUSES).default('ACTIVE'),
  replicas: z.number().int().min(0).max(DEPLOY_REPLICAS.max).optional(),
  failure_reason: z.string().max(200).optional(),
  failure_diagnostics: z.object({ title: z.string(), description: z.string(), action: z.string() }).optional(),
  registration_metadata: JsonObject.optional(),
});
export const RegisterVersionResponse = z.object({
  version: Version,
  tasks_migrated: z.number().int(),
  agent_id: z.string(),
  agent_name: z.string(),
  branch_id: z.string(),
  version_status: VersionStatus,
  /** Token registrations only: the runtime key, limited to this agent's tasks; held in memory. */
  agent_api_key: z.string().optional(),
});

/** `POST /versions/{id}/replicas/deregister`: an agent process leaving (agentctl dev on exit). */
export const DeregisterReplicaRequest = z.object({
  /** The address it registered with. */
  acp_url: z.string().min(1).max(2048),
});
export const DeregisterReplicaResponse = z.object({
  version_id: z.string(),
  acp_url: z.string(),
  /** Whether it was live until now (false: already gone, nothing changed). */
  was_live: z.boolean(),
  /** Its runtime key no longer authenticates. */
  runtime_key_revoked: z.boolean(),
});

export const RollbackRequest = z.object({ target_version_id: z.string().min(1).nullable().default(null), dry_run: z.boolean().default(false) });
export const RollbackResponse = z.object({
  branch_id: z.string(),
  rolled_back_version_id: z.string(),
  target_version: Version,
  tasks_migrated: z.number().int(),
  /** The upstream API's names: the version rolled back from (= rolled_back_version_id) and to (= target_version.id). */
  from_version_id: z.string(),
  to_version_id: z.string(),
  from_git_hash: z.string(),
  to_git_hash: z.string(),
  /** The status of the version now serving (for a dry run: its status as it is). */
  version_status: VersionStatus,
  message: z.string(),
});

export const RetireBranchRequest = z.object({ reason: NonBlank(500), force: z.boolean().default(false) });

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
  name: NonBlank(255).nullable().optional(),
  params: JsonObject.nullable().optional(),
  filesystem_id: z.string().min(1).optional(),
  project_id: z.string().min(1).optional(),
});
export type CreateTaskRequest = z.infer<typeof CreateTaskRequest>;

export const UpdateTaskRequest = z.object({
  task_metadata: JsonObject.nullable().optional(),
  status: z.enum(SETTABLE_TASK_STATUSES).optional(),
  status_reason: z.string().max(1000).nullable().optional(),
});

/** Related records a task answer can carry: `agents` fills the Task's `agents` field. */
export const TASK_RELATIONSHIPS = ['agents'] as const;
const TaskRelationship = z.enum(TASK_RELATIONSHIPS);
/** `relationships=agents`, once or repeated; read as a list. */
export const TaskRelationships = z
  .union(
    [
      TaskRelationship,
      z
        .array(TaskRelationship)
        .min(1)
        .max(TASK_RELATIONSHIPS.length * 4),
    ],
    {
      error: `one of ${TASK_RELATIONSHIPS.join(', ')}, once or repeated`,
    },
  )
  .transform((value) => (Array.isArray(value) ? value : [value]));

const ISO_DATE_TIME = z.iso.datetime({ offset: true });
const ISO_DATE = z.iso.date();
/**
 * A query-string instant: an ISO 8601 date-time with `Z` or an offset, or a date (midnight UTC), in
 * the years 1 to 9999 (PostgreSQL has no year 0, and its timestamps take no later ones as ISO text).
 */
export const QueryTimestamp = z
  .string()
  .refine((value) => {
    if (!ISO_DATE_TIME.safeParse(value).success && !ISO_DATE.safeParse(value).success) return false;
    const year = new Date(value).getUTCFullYear();
    return year >= 1 && year <= 9999;
  }, 'an ISO 8601 date-time such as 2025-01-31T12:00:00Z, or a date such as 2025-01-31, in the years 1 to 9999')
  .meta({ format: 'date-time' });

export const TASK_ORDER_BY = ['created_at', 'updated_at', 'name', 'status'] as const;

export const ListTasksQuery = z.object({
  agent_id: z.string().optional(),
  agent: z.string().optional(),
  /** `namespace/name` or a bare name in `default`: the upstream API's name for `agent`. */
  agent_name: z.string().min(1).max(130).optional(),
  namespace_id: z.string().min(1).max(64).optional(),
  branch: z.string().optional(),
  branch_id: z.string().optional(),
  version_id: z.string().optional(),
  status: TaskStatus.optional(),
  /** Tasks created at or after this instant. */
  created_after: QueryTimestamp.optional(),
  /** Tasks created before this instant. */
  created_before: QueryTimestamp.optional(),
  order_by: z.enum(TASK_ORDER_BY).default('created_at'),
  /** false: `total` is left out, and not counted. */
  include_total: QueryBool.default(true),
  relationships: TaskRelationships.optional(),
  /** Also list shadow tasks (a rehearsal's replays, which carry `shadow_of`); hidden by default. */
  include_shadows: QueryBool.default(false),
  ...PageQuery,
});
export type ListTasksQuery = z.output<typeof ListTasksQuery>;

/** `total` is absent when the request said `include_total=false`. */
export const TaskList = z.object({ tasks: z.array(Task), total: z.number().int().optional() });

export const TaskQuery = z.object({ relationships: TaskRelationships.optional() });

export const STATE_ORDER_BY = ['created_at', 'updated_at'] as const;
export const ListStatesQuery = z.object({
  task_id: z.string().optional(),
  agent_id: z.string().optional(),
  limit: PageQuery.limit,
  page_number: PageQuery.page_number,
  order_by: z.enum(STATE_ORDER_BY).default('created_at'),
  /** Oldest first by default, as this list always was. */
  order_direction: z.enum(['asc', 'desc']).default('asc'),
});
export type ListStatesQuery = z.output<typeof ListStatesQuery>;

/**
 * A page of a task's conversation, oldest first: its events, its messages as they are now (streamed
 * text included) and the task's status changes (a `task` record whose status differs from the one
 * before it), each at its sequence_id. `last_sequence_id` is where the task's stream stood when
 * the page was read: resume the stream after it (`after_sequence_id` or `Last-Event-ID`) to miss
 * nothing; `status` is the task's status then. `total` counts every such item up to it.
 */
export const ConversationPage = z.object({
  items: z.array(
    z.union([
      z.object({ kind: z.literal('event'), sequence_id: z.number().int(), data: Event }),
      z.object({ kind: z.literal('message'), sequence_id: z.number().int(), data: Message }),
      z.object({ kind: z.literal('task'), sequence_id: z.number().int(), data: Task }),
    ]),
  ),
  has_more: z.boolean(),
  total: z.number().int(),
  last_sequence_id: z.number().int(),
  status: TaskStatus.nullable(),
});
export type ConversationPage = z.infer<typeof ConversationPage>;

/** `GET /tasks/{id}/states/history`: newest first by default (the sequence it was written at). */
export const ListStateHistoryQuery = z.object({ agent_id: z.string().optional(), ...PageQuery });
export type ListStateHistoryQuery = z.output<typeof ListStateHistoryQuery>;
export const StateHistory = z.object({
  history: z.array(StateHistoryEntry),
  total: z.number().int(),
  /**
   * When the task last moved to another version (a migration, rollout step, undo, non-sticky deploy
   * or rollback): the history starts there. Null when it has not moved.
   */
  since_migration: Timestamp.nullable(),
});

/** `DELETE /states/{id}`: the record as it was, and a sentence. */
export const DeletedState = State.extend({ message: z.string() });
/** `DELETE /api_keys/{id}`: the revoked key, and a sentence (the upstream API answers `{id, message}`). */
export const RevokedApiKey = ApiKey.extend({ message: z.string() });

export const CreateKeyRequest = z.object({
  name: NonBlank(100),
  description: z.string().max(1000).default(''),
  scopes: z.array(Scope).min(1).max(100),
  sharing_group_ids: z.array(z.string().min(1)).max(100).default([]),
  expires_at: Timestamp.nullable().default(null),
});
export const CreateKeyResponse = z.object({ api_key: ApiKey, secret: z.string() });

// ---- the endpoint table: routes, client methods and the OpenAPI document all come from here ---

/**
 * Each entry is built on first use: a CLI command touches one or two endpoints, and building all
 * sixty schemas at start-up would cost it more than the rest of its work.
 */
export const endpoints = lazyTable({
  // health and schema
  healthz: () =>
    ep({
      method: 'GET',
      path: '/healthz',
      status: 200,
      auth: false,
      idempotent: true,
      summary: 'Liveness',
      tag: 'meta',
      response: z.object({ status: z.literal('ok') }),
    }),
  readyz: () =>
    ep({
      method: 'GET',
      path: '/readyz',
      status: 200,
      auth: false,
      idempotent: true,
      summary: 'Readiness (database reachable)',
      tag: 'meta',
      response: z.object({ status: z.literal('ok'), engine: z.enum(['pglite', 'postgres']) }),
    }),

  // namespaces and projects
  createNamespace: () =>
    ep({
      method: 'POST',
      path: '/namespaces',
      status: 201,
      summary: 'Create a namespace (org admins)',
      tag: 'namespaces',
      body: z.object({ name: NonBlank(100), slug: Slug }),
      response: Namespace,
    }),
  listNamespaces: () =>
    ep({
      method: 'GET',
      path: '/namespaces',
      status: 200,
      idempotent: true,
      summary: 'List namespaces',
      tag: 'namespaces',
      query: z.object({ ...PageQuery }),
      response: z.object({ namespaces: z.array(Namespace), total: z.number().int() }),
    }),
  createProject: () =>
    ep({
      method: 'POST',
      path: '/projects',
      status: 201,
      summary: 'Create a project',
      tag: 'projects',
      body: z.object({ namespace: Slug.default('default'), name: ResourceName, description: z.string().max(1000).default('') }),
      response: Project,
    }),
  listProjects: () =>
    ep({
      method: 'GET',
      path: '/projects',
      status: 200,
      idempotent: true,
      summary: 'List projects',
      tag: 'projects',
      query: z.object({ namespace: z.string().optional(), ...PageQuery }),
      response: z.object({ projects: z.array(Project), total: z.number().int() }),
    }),

  // agents
  deploy: () =>
    ep({
      method: 'POST',
      path: '/agents/deploy',
      status: 201,
      idempotencyKey: true,
      summary: 'Deploy a version (creates agent and branch if needed)',
      tag: 'agents',
      body: DeployRequest,
      response: DeployResponse,
    }),
  listAgents: () =>
    ep({
      method: 'GET',
      path: '/agents',
      status: 200,
      idempotent: true,
      summary: 'List agents',
      tag: 'agents',
      query: z.object({ namespace: z.string().optional(), ...PageQuery }),
      response: z.object({ agents: z.array(Agent), total: z.number().int() }),
    }),
  getAgent: () =>
    ep({
      method: 'GET',
      path: '/agents/:agent_id',
      status: 200,
      idempotent: true,
      summary: 'Get an agent by id',
      tag: 'agents',
      params: id('agent_id'),
      response: Agent,
    }),
  getAgentByName: () =>
    ep({
      method: 'GET',
      path: '/agents/name/:namespace_slug/:agent_name',
      status: 200,
      idempotent: true,
      summary: 'Get an agent by namespace and name',
      tag: 'agents',
      params: AgentPath,
      response: Agent,
    }),
  deleteAgent: () =>
    ep({
      method: 'DELETE',
      path: '/agents/:agent_id',
      status: 200,
      summary: 'Delete an agent',
      tag: 'agents',
      params: id('agent_id'),
      response: DeleteResponse,
    }),
  deleteAgentByName: () =>
    ep({
      method: 'DELETE',
      path: '/agents/name/:namespace_slug/:agent_name',
      status: 200,
      summary: 'Delete an agent by name',
      tag: 'agents',
      params: AgentPath,
      response: DeleteResponse,
    }),

  // versions and branches (the spec's four list endpoints)
  listBranchVersions: () =>
    ep({
      method: 'GET',
      path: '/branches/:branch_id/versions',
      status: 200,
      idempotent: true,
      summary: 'Versions of a branch, newest deployed_at first',
      tag: 'versions',
      params: id('branch_id'),
      query: z.object({ limit: VersionLimit }),
      response: VersionList,
    }),
  listAgentVersions: () =>
    ep({
      method: 'GET',
      path: '/agents/:namespace_slug/:agent_name/versions',
      status: 200,
      idempotent: true,
      summary: 'Versions of an agent, newest deployed_at first',
      tag: 'versions',
      params: AgentPath,
      query: z.object({ branch: z.string().min(1).optional(), status: VersionStatus.optional(), limit: VersionLimit }),
      response: VersionList,
    }),
  listAgentBranches: () =>
    ep({
      method: 'GET',
      path: '/agents/:namespace_slug/:agent_name/branches',
      status: 200,
      idempotent: true,
      summary: 'Branches of an agent',
      tag: 'branches',
      params: AgentPath,
      query: z.object({ include_retired: QueryBool.default(false) }),
      response: BranchList,
    }),
  listEnvironmentBranches: () =>
    ep({
      method: 'GET',
      path: '/agents/:namespace_slug/:agent_name/environments/:env_name/branches',
      status: 200,
      idempotent: true,
      summary: 'Branches matching an environment’s rules, updated_at descending',
      tag: 'environments',
      params: AgentPath.extend({ env_name: PathParam }),
      response: BranchList,
    }),
  getBranch: () =>
    ep({
      method: 'GET',
      path: '/branches/:branch_id',
      status: 200,
      idempotent: true,
      summary: 'Get a branch',
      tag: 'branches',
      params: id('branch_id'),
      response: Branch,
    }),
  rollbackBranch: () =>
    ep({
      method: 'POST',
      path: '/branches/:branch_id/rollback',
      status: 200,
      summary: 'Roll a branch back to an earlier version',
      tag: 'branches',
      params: id('branch_id'),
      body: RollbackRequest,
      response: RollbackResponse,
    }),
  retireBranch: () =>
    ep({
      method: 'POST',
      path: '/branches/:branch_id/retire',
      status: 200,
      summary: 'Retire a branch',
      tag: 'branches',
      params: id('branch_id'),
      body: RetireBranchRequest,
      response: Branch,
    }),
  getVersion: () =>
    ep({
      method: 'GET',
      path: '/versions/:version_id',
      status: 200,
      idempotent: true,
      summary: 'Get a version',
      tag: 'versions',
      params: id('version_id'),
      response: Version,
    }),
  listVersionEvents: () =>
    ep({
      method: 'GET',
      path: '/versions/:version_id/events',
      status: 200,
      idempotent: true,
      summary: 'Lifecycle events of a version',
      tag: 'versions',
      params: id('version_id'),
      response: z.object({ events: z.array(VersionEvent), total: z.number().int() }),
    }),
  listBranchEvents: () =>
    ep({
      method: 'GET',
      path: '/branches/:branch_id/events',
      status: 200,
      idempotent: true,
      summary: 'Lifecycle events of a branch',
      tag: 'branches',
      params: id('branch_id'),
      response: z.object({ events: z.array(VersionEvent), total: z.number().int() }),
    }),
  resolveAgentVersion: () =>
    ep({
      method: 'GET',
      path: '/agents/:namespace_slug/:agent_name/versions/:ref',
      status: 200,
      idempotent: true,
      summary: 'One version of an agent by reference: vN, a git-hash prefix (409 ambiguous_version when it matches several) or a ver_ id',
      tag: 'versions',
      params: AgentPath.extend({ ref: z.string().refine((ref) => parseVersionRef(ref) !== null, `must be ${VERSION_REF_FORMS}`) }),
      response: Version,
    }),
  registerVersion: () =>
    ep({
      method: 'POST',
      path: '/versions/register',
      status: 200,
      auth: 'optional',
      summary: 'Register an agent process (registration token) or report a version ready, unhealthy or failed (key)',
      tag: 'versions',
      body: RegisterVersionRequest,
      response: RegisterVersionResponse,
    }),
  createRegistrationToken: () =>
    ep({
      method: 'POST',
      path: '/versions/:version_id/registration-tokens',
      status: 201,
      summary: 'A one-time registration token for an agent process started by hand (write on the agent)',
      tag: 'versions',
      params: id('version_id'),
      response: RegistrationTokenResponse,
    }),
  deregisterReplica: () =>
    ep({
      method: 'POST',
      path: '/versions/:version_id/replicas/deregister',
      status: 200,
      idempotent: true,
      summary:
        'An agent process leaving: it gets no more deliveries, what it held goes out again, and its runtime key is revoked (its own runtime key, or write on the agent)',
      tag: 'versions',
      params: id('version_id'),
      body: DeregisterReplicaRequest,
      response: DeregisterReplicaResponse,
    }),
  getSigningSecret: () =>
    ep({
      method: 'GET',
      path: '/versions/:version_id/signing-secret',
      status: 200,
      idempotent: true,
      summary: 'The version’s delivery signing secret (admin on the agent)',
      tag: 'versions',
      params: id('version_id'),
      response: SigningSecretResponse,
    }),

  // environments
  listEnvironments: () =>
    ep({
      method: 'GET',
      path: '/agents/:namespace_slug/:agent_name/environments',
      status: 200,
      idempotent: true,
      summary: 'Environments of an agent',
      tag: 'environments',
      params: AgentPath,
      response: z.object({ environments: z.array(Environment), total: z.number().int() }),
    }),
  createEnvironment: () =>
    ep({
      method: 'POST',
      path: '/agents/:namespace_slug/:agent_name/environments',
      status: 201,
      summary: 'Create an environment',
      tag: 'environments',
      params: AgentPath,
      body: EnvironmentCreate,
      response: Environment,
    }),
  getEnvironment: () =>
    ep({
      method: 'GET',
      path: '/agents/:namespace_slug/:agent_name/environments/:env_name',
      status: 200,
      idempotent: true,
      summary: 'Get an environment',
      tag: 'environments',
      params: AgentPath.extend({ env_name: PathParam }),
      response: Environment,
    }),
  updateEnvironment: () =>
    ep({
      method: 'PATCH',
      path: '/agents/:namespace_slug/:agent_name/environments/:env_name',
      status: 200,
      summary: 'Update an environment',
      tag: 'environments',
      params: AgentPath.extend({ env_name: PathParam }),
      body: EnvironmentUpdate,
      response: Environment,
    }),
  deleteEnvironment: () =>
    ep({
      method: 'DELETE',
      path: '/agents/:namespace_slug/:agent_name/environments/:env_name',
      status: 200,
      summary: 'Delete an environment',
      tag: 'environments',
      params: AgentPath.extend({ env_name: PathParam }),
      response: DeleteResponse,
    }),
  resolveEnvironment: () =>
    ep({
      method: 'GET',
      path: '/agents/:namespace_slug/:agent_name/resolve-env',
      status: 200,
      idempotent: true,
      summary: 'Which environment a git branch falls in',
      tag: 'environments',
      params: AgentPath,
      query: z.object({ branch: z.string().min(1) }),
      response: z.object({ branch: z.string(), environment: Environment }),
    }),

  // secrets
  listSecrets: () =>
    ep({
      method: 'GET',
      path: '/agents/:namespace_slug/:agent_name/secrets',
      status: 200,
      idempotent: true,
      summary: 'Secrets of an agent: names, scopes and times, never values',
      tag: 'secrets',
      params: AgentPath,
      response: AgentSecretList,
    }),
  setSecret: () =>
    ep({
      method: 'PUT',
      path: '/agents/:namespace_slug/:agent_name/secrets/:secret_name',
      status: 200,
      idempotent: true,
      redact: ['value'],
      summary: 'Create or replace a secret (write on the agent); its versions restart one replica at a time',
      tag: 'secrets',
      params: AgentPath.extend({ secret_name: SecretName }),
      body: SetSecretRequest,
      response: AgentSecret,
    }),
  deleteSecret: () =>
    ep({
      method: 'DELETE',
      path: '/agents/:namespace_slug/:agent_name/secrets/:secret_name',
      status: 200,
      summary: 'Delete a secret (the agent-wide one, or with `environment` that environment’s)',
      tag: 'secrets',
      params: AgentPath.extend({ secret_name: SecretName }),
      query: SecretScopeQuery,
      response: DeleteResponse,
    }),

  // tasks
  createTask: () =>
    ep({ method: 'POST', path: '/tasks', status: 201, idempotencyKey: true, summary: 'Create a task', tag: 'tasks', body: CreateTaskRequest, response: Task }),
  listTasks: () =>
    ep({ method: 'GET', path: '/tasks', status: 200, idempotent: true, summary: 'List tasks', tag: 'tasks', query: ListTasksQuery, response: TaskList }),
  getTask: () =>
    ep({
      method: 'GET',
      path: '/tasks/:task_id',
      status: 200,
      idempotent: true,
      summary: 'Get a task',
      tag: 'tasks',
      params: id('task_id'),
      query: TaskQuery,
      response: Task,
    }),
  getTaskByName: () =>
    ep({
      method: 'GET',
      path: '/tasks/name/:task_name',
      status: 200,
      idempotent: true,
      summary: 'Get a task by name',
      tag: 'tasks',
      params: id('task_name'),
      query: TaskQuery,
      response: Task,
    }),
  updateTask: () =>
    ep({
      method: 'PATCH',
      path: '/tasks/:task_id',
      status: 200,
      summary: 'Update task metadata or status',
      tag: 'tasks',
      params: id('task_id'),
      body: UpdateTaskRequest,
      response: Task,
    }),
  deleteTask: () =>
    ep({ method: 'DELETE', path: '/tasks/:task_id', status: 200, summary: 'Delete a task (soft)', tag: 'tasks', params: id('task_id'), response: Task }),
  cancelTask: () =>
    ep({ method: 'POST', path: '/tasks/:task_id/cancel', status: 200, summary: 'Cancel a task', tag: 'tasks', params: id('task_id'), response: Task }),
  interruptTask: () =>
    ep({
      method: 'POST',
      path: '/tasks/:task_id/interrupt',
      status: 200,
      idempotent: true,
      summary: 'Interrupt the running turn of a task (its handler’s signal fires; the task stays open); nothing to do when none runs',
      tag: 'tasks',
      params: id('task_id'),
      response: InterruptResult,
    }),
  getTaskTurn: () =>
    ep({
      method: 'GET',
      path: '/tasks/:task_id/turn',
      status: 200,
      idempotent: true,
      summary: 'Whether the task’s agent has a turn open (busy) or is idle',
      tag: 'tasks',
      params: id('task_id'),
      response: TaskTurn,
    }),
  migrateTasks: () =>
    ep({
      method: 'POST',
      path: '/tasks/migrate',
      status: 200,
      summary: 'Move tasks between versions of one branch',
      tag: 'tasks',
      body: MigrateTasksRequest,
      response: MigrateTasksResponse,
    }),

  // safe migrations: rollouts and the migration history (README "Versions and migration")
  createRollout: () =>
    ep({
      method: 'POST',
      path: '/rollouts',
      status: 201,
      summary: 'Start a rollout: move a version’s tasks in steps, watch each, revert past the threshold',
      tag: 'rollouts',
      body: CreateRolloutRequest,
      response: Rollout,
    }),
  listRollouts: () =>
    ep({
      method: 'GET',
      path: '/rollouts',
      status: 200,
      idempotent: true,
      summary: 'List rollouts, newest first',
      tag: 'rollouts',
      query: ListRolloutsQuery,
      response: RolloutList,
    }),
  getRollout: () =>
    ep({
      method: 'GET',
      path: '/rollouts/:rollout_id',
      status: 200,
      idempotent: true,
      summary: 'Get a rollout with the figures of each step',
      tag: 'rollouts',
      params: id('rollout_id'),
      response: Rollout,
    }),
  pauseRollout: () =>
    ep({
      method: 'POST',
      path: '/rollouts/:rollout_id/pause',
      status: 200,
      summary: 'Pause a rollout (its moved tasks stay; no further step)',
      tag: 'rollouts',
      params: id('rollout_id'),
      response: Rollout,
    }),
  resumeRollout: () =>
    ep({
      method: 'POST',
      path: '/rollouts/:rollout_id/resume',
      status: 200,
      summary: 'Resume a paused rollout (the current step is watched again)',
      tag: 'rollouts',
      params: id('rollout_id'),
      response: Rollout,
    }),
  abortRollout: () =>
    ep({
      method: 'POST',
      path: '/rollouts/:rollout_id/abort',
      status: 200,
      summary: 'Abort a rollout: its moved tasks go back to the source',
      tag: 'rollouts',
      params: id('rollout_id'),
      response: Rollout,
    }),
  listMigrations: () =>
    ep({
      method: 'GET',
      path: '/migrations',
      status: 200,
      idempotent: true,
      summary: 'The migration history: every migration, rollout step, revert and undo, newest first',
      tag: 'rollouts',
      query: ListMigrationsQuery,
      response: MigrationList,
    }),
  getMigration: () =>
    ep({
      method: 'GET',
      path: '/migrations/:migration_id',
      status: 200,
      idempotent: true,
      summary: 'Get a migration record with exactly the tasks it moved',
      tag: 'rollouts',
      params: id('migration_id'),
      response: MigrationRecord,
    }),
  undoMigration: () =>
    ep({
      method: 'POST',
      path: '/migrations/:migration_id/undo',
      status: 200,
      summary: 'Move exactly the tasks of a migration back (409 when they have moved on since)',
      tag: 'rollouts',
      params: id('migration_id'),
      response: MigrationRecord,
    }),

  // rehearsals: a migration tried on recorded events first (README "Versions and migration")
  createRehearsal: () =>
    ep({
      method: 'POST',
      path: '/rehearsals',
      status: 201,
      idempotencyKey: true,
      summary: 'Rehearse a migration: replay tasks’ recorded events on the target version in shadow tasks and compare',
      tag: 'tasks',
      body: CreateRehearsalRequest,
      response: Rehearsal,
    }),
  getRehearsal: () =>
    ep({
      method: 'GET',
      path: '/rehearsals/:rehearsal_id',
      status: 200,
      idempotent: true,
      summary: 'A rehearsal’s report, per task and in total (complete once status is completed)',
      tag: 'tasks',
      params: id('rehearsal_id'),
      response: Rehearsal,
    }),

  // conversation: events, messages, trackers, the stream
  streamTask: () =>
    ep({
      method: 'GET',
      path: '/tasks/:task_id/stream',
      status: 200,
      idempotent: true,
      sse: true,
      summary: 'Server-Sent Events: the task’s events, messages, status and tracker in sequence order',
      tag: 'conversation',
      params: id('task_id'),
      query: StreamQuery,
      response: z.string(),
    }),
  getConversationPage: () =>
    ep({
      method: 'GET',
      path: '/tasks/:task_id/conversation',
      status: 200,
      idempotent: true,
      summary: 'A page of the task’s conversation read from its end: events, messages as they are now, status changes; then stream after last_sequence_id',
      tag: 'conversation',
      params: id('task_id'),
      query: ConversationPageQuery,
      response: ConversationPage,
    }),
  createEvent: () =>
    ep({
      method: 'POST',
      path: '/tasks/:task_id/events',
      status: 201,
      idempotencyKey: true,
      summary: 'Send an event to a task (run on the agent)',
      tag: 'conversation',
      params: id('task_id'),
      body: CreateEventRequest,
      response: Event,
    }),
  listEvents: () =>
    ep({
      method: 'GET',
      path: '/events',
      status: 200,
      idempotent: true,
      summary: 'Events of a task, ascending sequence_id',
      tag: 'conversation',
      query: ListEventsQuery,
      response: EventList,
    }),
  getEvent: () =>
    ep({
      method: 'GET',
      path: '/events/:event_id',
      status: 200,
      idempotent: true,
      summary: 'Get an event',
      tag: 'conversation',
      params: id('event_id'),
      response: Event,
    }),
  reportHandlerError: () =>
    ep({
      method: 'POST',
      path: '/tasks/:task_id/handler-errors',
      status: 201,
      idempotencyKey: true,
      summary: 'Report a handler that threw (recorded as an agent message)',
      tag: 'conversation',
      params: id('task_id'),
      body: HandlerErrorRequest,
      response: Message,
    }),
  completeDelivery: () =>
    ep({
      method: 'POST',
      path: '/deliveries/:delivery_id/complete',
      status: 200,
      idempotent: true,
      summary: 'An async agent’s handler of this delivery finished (run on the task’s agent): the task’s next delivery may go',
      tag: 'conversation',
      params: z.object({ delivery_id: DeliveryId }),
      body: CompleteDeliveryRequest,
      response: Delivery,
    }),
  completeDeliveries: () =>
    ep({
      method: 'POST',
      path: '/deliveries/complete',
      status: 200,
      idempotent: true,
      summary:
        'Several async agents’ handlers finished (run on each task’s agent): each delivery answered on its own, as POST /deliveries/{id}/complete would answer it',
      tag: 'conversation',
      body: CompleteDeliveriesRequest,
      response: CompleteDeliveriesResponse,
    }),
  streamVersionDeliveries: () =>
    ep({
      method: 'GET',
      path: '/versions/:version_id/deliveries/stream',
      status: 200,
      idempotent: true,
      sse: true,
      summary:
        'Server-Sent Events: the signed deliveries of a dev version (image dev://), pulled by `agentctl dev` instead of pushed (write on the agent); 409 for any other version',
      tag: 'conversation',
      params: id('version_id'),
      response: z.string(),
    }),
  answerDelivery: () =>
    ep({
      method: 'POST',
      path: '/deliveries/:delivery_id/answer',
      status: 200,
      idempotent: true,
      summary: 'What the agent answered a pulled delivery (write on the agent): settled as the dispatcher settles a pushed one',
      tag: 'conversation',
      params: z.object({ delivery_id: DeliveryId }),
      body: DeliveryAnswerRequest,
      response: Delivery,
    }),
  renewDeliveryLease: () =>
    ep({
      method: 'POST',
      path: '/deliveries/:delivery_id/renew',
      status: 200,
      idempotent: true,
      summary: 'Extend the lease of a delivery whose handler still runs (run on the task’s agent); 409 lease_lost once it was released for redelivery',
      tag: 'conversation',
      params: z.object({ delivery_id: DeliveryId }),
      response: Delivery,
    }),
  createMessage: () =>
    ep({
      method: 'POST',
      path: '/messages',
      status: 201,
      idempotencyKey: true,
      summary: 'Add a message to a task’s transcript',
      tag: 'conversation',
      body: CreateMessageRequest,
      response: Message,
    }),
  updateMessage: () =>
    ep({
      method: 'PUT',
      path: '/messages/:message_id',
      status: 200,
      summary: 'Replace a message’s content or finish its streaming',
      tag: 'conversation',
      params: id('message_id'),
      body: UpdateMessageRequest,
      response: Message,
    }),
  appendMessageDelta: () =>
    ep({
      method: 'POST',
      path: '/messages/:message_id/deltas',
      status: 201,
      // Its offset makes a repeat harmless (AppendMessageDeltaRequest): no Idempotency-Key claim to write.
      idempotent: true,
      summary: 'Append a delta to a streaming message (text, reasoning or tool arguments)',
      tag: 'conversation',
      params: id('message_id'),
      body: AppendMessageDeltaRequest,
      response: MessageDelta,
    }),
  listMessages: () =>
    ep({
      method: 'GET',
      path: '/messages',
      status: 200,
      idempotent: true,
      summary: 'Messages of a task, ascending sequence_id',
      tag: 'conversation',
      query: ListMessagesQuery,
      response: MessageList,
    }),
  getMessage: () =>
    ep({
      method: 'GET',
      path: '/messages/:message_id',
      status: 200,
      idempotent: true,
      summary: 'Get a message',
      tag: 'conversation',
      params: id('message_id'),
      response: Message,
    }),
  listTrackers: () =>
    ep({
      method: 'GET',
      path: '/tracker',
      status: 200,
      idempotent: true,
      summary: 'Task trackers by task and/or agent',
      tag: 'conversation',
      query: TrackerQuery,
      response: TrackerList,
    }),
  getTracker: () =>
    ep({
      method: 'GET',
      path: '/tracker/:tracker_id',
      status: 200,
      idempotent: true,
      summary: 'Get a task tracker',
      tag: 'conversation',
      params: id('tracker_id'),
      response: Tracker,
    }),
  updateTracker: () =>
    ep({
      method: 'PATCH',
      path: '/tracker/:tracker_id',
      status: 200,
      summary: 'Update a tracker (left-out fields stay; the cursor only moves forward)',
      tag: 'conversation',
      params: id('tracker_id'),
      body: UpdateTrackerRequest,
      response: Tracker,
    }),

  // states
  createState: () =>
    ep({
      method: 'POST',
      path: '/states',
      status: 200,
      idempotencyKey: true,
      responseHeaders: STATE_ETAG,
      summary: 'Create a state record',
      tag: 'states',
      body: CreateStateRequest,
      response: State,
    }),
  mergeOrCreateState: () =>
    ep({
      method: 'POST',
      path: '/states/merge',
      status: 200,
      idempotencyKey: true,
      responseHeaders: STATE_ETAG,
      summary: 'Merge top-level keys into the (task, agent) state, an empty one when there is none yet (one atomic statement)',
      tag: 'states',
      body: CreateStateRequest,
      response: State,
    }),
  listStates: () =>
    ep({
      method: 'GET',
      path: '/states',
      status: 200,
      idempotent: true,
      summary: 'Find states by task and/or agent',
      tag: 'states',
      query: ListStatesQuery,
      response: z.object({ states: z.array(State), total: z.number().int() }),
    }),
  listStateHistory: () =>
    ep({
      method: 'GET',
      path: '/tasks/:task_id/states/history',
      status: 200,
      idempotent: true,
      summary: 'The values a task’s states held before they were replaced, since the task’s last migration (newest first)',
      tag: 'states',
      params: id('task_id'),
      query: ListStateHistoryQuery,
      response: StateHistory,
    }),
  getState: () =>
    ep({
      method: 'GET',
      path: '/states/:state_id',
      status: 200,
      idempotent: true,
      responseHeaders: STATE_ETAG,
      summary: 'Get a state record',
      tag: 'states',
      params: id('state_id'),
      response: State,
    }),
  replaceState: () =>
    ep({
      method: 'PUT',
      path: '/states/:state_id',
      status: 200,
      headers: STATE_IF_MATCH,
      responseHeaders: STATE_ETAG,
      summary: 'Replace a state record',
      tag: 'states',
      params: id('state_id'),
      body: ReplaceStateRequest,
      response: State,
    }),
  mergeState: () =>
    ep({
      method: 'PATCH',
      path: '/states/:state_id',
      status: 200,
      headers: STATE_IF_MATCH,
      responseHeaders: STATE_ETAG,
      summary: 'Merge top-level keys atomically (null deletes a key)',
      tag: 'states',
      params: id('state_id'),
      body: MergeStateRequest,
      response: State,
    }),
  deleteState: () =>
    ep({
      method: 'DELETE',
      path: '/states/:state_id',
      status: 200,
      headers: STATE_IF_MATCH,
      summary: 'Delete a state record; answers the record as it was',
      tag: 'states',
      params: id('state_id'),
      response: DeletedState,
    }),

  // access control
  whoami: () => ep({ method: 'GET', path: '/whoami', status: 200, idempotent: true, summary: 'The calling key', tag: 'keys', response: Whoami }),
  listPresets: () =>
    ep({
      method: 'GET',
      path: '/api_keys/presets',
      status: 200,
      idempotent: true,
      summary: 'Key presets for the creation wizard',
      tag: 'keys',
      response: z.object({ presets: z.array(Preset) }),
    }),
  createKey: () =>
    ep({
      method: 'POST',
      path: '/api_keys',
      status: 201,
      summary: 'Create an API key (secret shown once)',
      tag: 'keys',
      body: CreateKeyRequest,
      response: CreateKeyResponse,
    }),
  listKeys: () =>
    ep({
      method: 'GET',
      path: '/api_keys',
      status: 200,
      idempotent: true,
      summary: 'List API keys',
      tag: 'keys',
      query: z.object({ include_revoked: QueryBool.default(false) }),
      response: z.object({ api_keys: z.array(ApiKey), total: z.number().int() }),
    }),
  getKey: () =>
    ep({
      method: 'GET',
      path: '/api_keys/:key_id',
      status: 200,
      idempotent: true,
      summary: 'Get an API key',
      tag: 'keys',
      params: id('key_id'),
      response: ApiKey,
    }),
  revokeKey: () =>
    ep({ method: 'DELETE', path: '/api_keys/:key_id', status: 200, summary: 'Revoke an API key', tag: 'keys', params: id('key_id'), response: RevokedApiKey }),
  updateKeyScopes: () =>
    ep({
      method: 'PATCH',
      path: '/api_keys/:key_id',
      status: 200,
      summary: 'Replace a key’s scopes',
      tag: 'keys',
      params: id('key_id'),
      body: z.object({ scopes: z.array(Scope).min(1).max(100) }),
      response: ApiKey,
    }),
  updateKeyGroups: () =>
    ep({
      method: 'PATCH',
      path: '/api_keys/:key_id/sharing-groups',
      status: 200,
      summary: 'Replace a key’s sharing groups',
      tag: 'keys',
      params: id('key_id'),
      body: z.object({ sharing_group_ids: z.array(z.string().min(1)).max(100) }),
      response: ApiKey,
    }),
  rotateKey: () =>
    ep({
      method: 'POST',
      path: '/api_keys/:key_id/rotate',
      status: 200,
      summary: 'Issue a new secret for a key',
      tag: 'keys',
      params: id('key_id'),
      response: CreateKeyResponse,
    }),
  // the web console's sessions (README "Web console")
  createSession: () =>
    ep({
      method: 'POST',
      path: '/sessions',
      status: 201,
      auth: false,
      summary: 'Sign in to the console with an API key or a one-time token; sets the session cookie',
      tag: 'console',
      body: CreateSessionRequest,
      responseHeaders: { 'Set-Cookie': '`agentctl_session`: HttpOnly, SameSite=Strict, Secure over https' },
      response: ConsoleSession,
    }),
  getSession: () =>
    ep({
      method: 'GET',
      path: '/sessions/current',
      status: 200,
      idempotent: true,
      summary: 'The console session of this cookie',
      tag: 'console',
      response: ConsoleSession,
    }),
  deleteSession: () =>
    ep({
      method: 'DELETE',
      path: '/sessions/current',
      status: 200,
      summary: 'Sign out: ends the session of this cookie',
      tag: 'console',
      response: DeleteResponse,
    }),
  createSignInToken: () =>
    ep({
      method: 'POST',
      path: '/sessions/sign-in-tokens',
      status: 201,
      summary: 'A one-time console sign-in link for the calling key (used by `agentctl open`)',
      tag: 'console',
      response: SignInToken,
    }),
  getAccess: () =>
    ep({
      method: 'GET',
      path: '/access',
      status: 200,
      idempotent: true,
      summary: 'What the calling key may do: org admin, and its permissions on an agent',
      tag: 'console',
      query: AccessQuery,
      response: Access,
    }),
  createGroup: () =>
    ep({
      method: 'POST',
      path: '/groups',
      status: 201,
      summary: 'Create a sharing group',
      tag: 'groups',
      body: z.object({ name: NonBlank(100), description: z.string().max(1000).default('') }),
      response: Group,
    }),
  listGroups: () =>
    ep({
      method: 'GET',
      path: '/groups',
      status: 200,
      idempotent: true,
      summary: 'List sharing groups',
      tag: 'groups',
      query: z.object({ ...PageQuery }),
      response: z.object({ groups: z.array(Group), total: z.number().int() }),
    }),
  getGroup: () =>
    ep({
      method: 'GET',
      path: '/groups/:group_id',
      status: 200,
      idempotent: true,
      summary: 'Get a sharing group',
      tag: 'groups',
      params: id('group_id'),
      response: Group,
    }),
  deleteGroup: () =>
    ep({
      method: 'DELETE',
      path: '/groups/:group_id',
      status: 200,
      summary: 'Delete a sharing group',
      tag: 'groups',
      params: id('group_id'),
      response: DeleteResponse,
    }),
  listGroupMembers: () =>
    ep({
      method: 'GET',
      path: '/groups/:group_id/members',
      status: 200,
      idempotent: true,
      summary: 'Members of a sharing group',
      tag: 'groups',
      params: id('group_id'),
      response: z.object({ members: z.array(GroupMember), total: z.number().int() }),
    }),
  addGroupMember: () =>
    ep({
      method: 'PUT',
      path: '/groups/:group_id/members/:member_id',
      status: 200,
      idempotent: true,
      summary: 'Add a key to a sharing group',
      tag: 'groups',
      params: z.object({ group_id: PathParam, member_id: PathParam }),
      response: GroupMember,
    }),
  removeGroupMember: () =>
    ep({
      method: 'DELETE',
      path: '/groups/:group_id/members/:member_id',
      status: 200,
      summary: 'Remove a key from a sharing group',
      tag: 'groups',
      params: z.object({ group_id: PathParam, member_id: PathParam }),
      response: DeleteResponse,
    }),

  // filesystems and system folders (README "Filesystems and sync")
  createFilesystem: () =>
    ep({
      method: 'POST',
      path: '/filesystems',
      status: 201,
      summary: 'Create a filesystem in a project or a namespace',
      tag: 'filesystems',
      body: CreateFilesystemRequest,
      response: Filesystem,
    }),
  listFilesystems: () =>
    ep({
      method: 'GET',
      path: '/filesystems',
      status: 200,
      idempotent: true,
      summary: 'Filesystems of a project (or of a namespace: those not in a project)',
      tag: 'filesystems',
      query: z.object({ project_id: z.string().min(1).optional(), namespace: z.string().min(1).optional(), ...PageQuery }),
      response: FilesystemList,
    }),
  getFilesystem: () =>
    ep({
      method: 'GET',
      path: '/filesystems/:filesystem_id',
      status: 200,
      idempotent: true,
      summary: 'Get a filesystem',
      tag: 'filesystems',
      params: id('filesystem_id'),
      response: Filesystem,
    }),
  deleteFilesystem: () =>
    ep({
      method: 'DELETE',
      path: '/filesystems/:filesystem_id',
      status: 200,
      summary: 'Delete a filesystem no task or version uses',
      tag: 'filesystems',
      params: id('filesystem_id'),
      response: DeleteResponse,
    }),
  downloadFilesystemArchive: () =>
    ep({
      method: 'GET',
      path: '/filesystems/:filesystem_id/archive',
      status: 200,
      idempotent: true,
      binary: { response: 'application/zstd' },
      responseHeaders: TREE_ETAG,
      summary: 'The current archive (ETag is the tree checksum; If-None-Match answers 304)',
      tag: 'filesystems',
      params: id('filesystem_id'),
      headers: z.object({ 'if-none-match': z.string().optional() }),
      response: ArchiveBody,
    }),
  uploadFilesystemArchive: () =>
    ep({
      method: 'PUT',
      path: '/filesystems/:filesystem_id/archive',
      status: 200,
      binary: { request: ['application/zstd', 'application/octet-stream'] },
      summary: 'Replace the content (If-Match the base checksum once there is content: 428 without, 412 when stale)',
      tag: 'filesystems',
      params: id('filesystem_id'),
      headers: z.object({ 'if-match': z.string().optional() }),
      body: ArchiveBody,
      response: Filesystem,
    }),
  listFilesystemFiles: () =>
    ep({
      method: 'GET',
      path: '/filesystems/:filesystem_id/files',
      status: 200,
      idempotent: true,
      summary: 'The manifest: every member’s path, type, mode, size and sha256',
      tag: 'filesystems',
      params: id('filesystem_id'),
      response: FileManifest,
    }),
  getFilesystemFile: () =>
    ep({
      method: 'GET',
      path: '/filesystems/:filesystem_id/files/*',
      status: 200,
      idempotent: true,
      binary: { response: 'application/octet-stream' },
      summary: 'One file’s bytes',
      tag: 'filesystems',
      params: z.object({ filesystem_id: z.string().min(1), '*': z.string().min(1) }),
      response: ArchiveBody,
    }),
  downloadSystemFolderArchive: () =>
    ep({
      method: 'GET',
      path: '/tasks/:task_id/system-folders/:folder_type/archive',
      status: 200,
      idempotent: true,
      binary: { response: 'application/zstd' },
      responseHeaders: TREE_ETAG,
      summary: 'A task’s system folder archive (read on the agent)',
      tag: 'filesystems',
      params: z.object({ task_id: z.string().min(1), folder_type: SystemFolderType }),
      headers: z.object({ 'if-none-match': z.string().optional() }),
      response: ArchiveBody,
    }),
  uploadSystemFolderArchive: () =>
    ep({
      method: 'PUT',
      path: '/tasks/:task_id/system-folders/:folder_type/archive',
      status: 200,
      binary: { request: ['application/zstd', 'application/octet-stream'] },
      summary: 'Replace a task’s system folder (run on the agent; same rules as filesystems)',
      tag: 'filesystems',
      params: z.object({ task_id: z.string().min(1), folder_type: SystemFolderType }),
      headers: z.object({ 'if-match': z.string().optional() }),
      body: ArchiveBody,
      response: Filesystem,
    }),
  getTaskTraces: () =>
    ep({
      method: 'GET',
      path: '/tasks/:task_id/traces',
      status: 200,
      idempotent: true,
      summary: 'The traces of a task’s recent turns that the server keeps (when it exports over OTLP, also there)',
      tag: 'tasks',
      params: id('task_id'),
      query: TraceQuery,
      response: TaskTraces,
    }),
  getTrace: () =>
    ep({
      method: 'GET',
      path: '/traces/:trace_id',
      status: 200,
      idempotent: true,
      summary: 'One trace by its W3C trace id, as the server keeps it',
      tag: 'tasks',
      params: z.object({ trace_id: z.string().regex(/^[0-9a-f]{32}$/, 'must be a trace id: 32 lower-case hex digits') }),
      response: Trace,
    }),
  /** JSON `{lines}` (the client's method); with `follow=true` Server-Sent Events instead, so not marked `sse`. */
  getVersionLogs: () =>
    ep({
      method: 'GET',
      path: '/versions/:version_id/logs',
      status: 200,
      idempotent: true,
      summary: 'Output of a version’s processes (read on the agent); Server-Sent Events with follow=true',
      tag: 'versions',
      params: id('version_id'),
      query: VersionLogsQuery,
      response: VersionLogs,
    }),

  // schedules (README "Schedules")
  createSchedule: () =>
    ep({
      method: 'POST',
      path: '/schedules',
      status: 201,
      idempotencyKey: true,
      summary: 'Create a schedule: a cron expression whose ticks create tasks on an agent or send an event to a named task (run on the agent)',
      tag: 'schedules',
      body: CreateScheduleRequest,
      response: Schedule,
    }),
  listSchedules: () =>
    ep({
      method: 'GET',
      path: '/schedules',
      status: 200,
      idempotent: true,
      summary: 'Schedules of the agents the key may read, with their next run times',
      tag: 'schedules',
      query: ListSchedulesQuery,
      response: ScheduleList,
    }),
  getSchedule: () =>
    ep({
      method: 'GET',
      path: '/schedules/:schedule_id',
      status: 200,
      idempotent: true,
      summary: 'Get a schedule and its most recent runs',
      tag: 'schedules',
      params: id('schedule_id'),
      response: Schedule,
    }),
  pauseSchedule: () =>
    ep({
      method: 'POST',
      path: '/schedules/:schedule_id/pause',
      status: 200,
      idempotent: true,
      summary: 'Pause a schedule: no tick runs until it is resumed',
      tag: 'schedules',
      params: id('schedule_id'),
      response: Schedule,
    }),
  resumeSchedule: () =>
    ep({
      method: 'POST',
      path: '/schedules/:schedule_id/resume',
      status: 200,
      idempotent: true,
      summary: 'Resume a paused schedule from its next tick (ticks of the pause are not run)',
      tag: 'schedules',
      params: id('schedule_id'),
      response: Schedule,
    }),
  triggerSchedule: () =>
    ep({
      method: 'POST',
      path: '/schedules/:schedule_id/trigger',
      status: 201,
      idempotencyKey: true,
      summary: 'Run a schedule now, once, outside its cron times (also while paused)',
      tag: 'schedules',
      params: id('schedule_id'),
      response: ScheduleTick,
    }),
  deleteSchedule: () =>
    ep({
      method: 'DELETE',
      path: '/schedules/:schedule_id',
      status: 200,
      summary: 'Delete a schedule (its tasks stay)',
      tag: 'schedules',
      params: id('schedule_id'),
      response: Schedule,
    }),

  // status (README "Status")
  getStatus: () =>
    ep({
      method: 'GET',
      path: '/status',
      status: 200,
      idempotent: true,
      summary: 'Where things stand: an agent’s branches and serving versions, tasks by status, open deliveries, recent failures',
      tag: 'status',
      query: StatusQuery,
      response: StatusReport,
    }),
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
