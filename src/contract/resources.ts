import { z } from 'zod';
import { DEFAULT_DOUBLE_TEXTING, DOUBLE_TEXTING_POLICIES, PRESET_IDS } from './enums.js';
import { ACPType, AgentInputType, AgentStatus, JsonObject, ResourceType, Role, SDKType, TaskStatus, Timestamp, VersionStatus } from './common.js';

export const Agent = z
  .object({
    id: z.string(),
    namespace_id: z.string(),
    name: z.string(),
    description: z.string(),
    created_at: Timestamp,
    updated_at: Timestamp,
    agent_input_type: AgentInputType.nullable().optional(),
    registered_at: Timestamp.nullable().optional(),
    registration_metadata: JsonObject.nullable().optional(),
    status: AgentStatus.default('ACTIVE'),
    status_reason: z.string().nullable().optional(),
  })
  .meta({ id: 'Agent' });
export type Agent = z.infer<typeof Agent>;

/** Millicores: `500m`, `0.5` and `1` (whole CPUs), as Kubernetes writes CPU quantities. */
const CPU_QUANTITY = /^(?:[0-9]{1,7}m|[0-9]{1,4}(?:\.[0-9]{1,3})?)$/;
/** Bytes with an optional decimal (`k`, `M`, `G`, `T`) or binary (`Ki`, `Mi`, `Gi`, `Ti`) suffix: `128Mi`, `1G`. */
const MEMORY_QUANTITY = /^[0-9]{1,16}(?:\.[0-9]{1,3})?(?:[kMGT]|[KMGT]i)?$/;
const MEMORY_FACTORS: Record<string, number> = { '': 1, k: 1e3, M: 1e6, G: 1e9, T: 1e12, Ki: 2 ** 10, Mi: 2 ** 20, Gi: 2 ** 30, Ti: 2 ** 40 };

/** A CPU quantity in millicores (for comparing a request with its limit). */
export const cpuMillicores = (quantity: string): number => (quantity.endsWith('m') ? Number(quantity.slice(0, -1)) : Number(quantity) * 1000);
/** A memory quantity in bytes. */
export const memoryBytes = (quantity: string): number => {
  const [, amount, suffix] = /^([0-9.]+)([a-zA-Z]*)$/.exec(quantity)!;
  return Number(amount) * MEMORY_FACTORS[suffix];
};

/**
 * A quantity as Kubernetes takes it; a JSON number is accepted too (CPUs, or bytes) and kept as
 * its decimal text, so the stored value is always the string the runtime passes on.
 */
const quantity = (pattern: RegExp, example: string, max: number) => {
  const text = z.string().regex(pattern, `a quantity such as ${example}`);
  return z.union([z.number().positive().max(max).transform(String).pipe(text), text]);
};

const ResourceAmounts = z.strictObject({
  cpu: quantity(CPU_QUANTITY, '500m or 1', 9999).optional(),
  memory: quantity(MEMORY_QUANTITY, '256Mi or 1G', 1e15).optional(),
});

/**
 * What each replica of a version asks for and may use. Stored on the version and handed to the
 * runtime: the kubernetes driver sets it on the container; the local driver runs processes without
 * limits. A request above its limit is refused here, as Kubernetes would refuse the pod. Not a named
 * component of openapi.json: what a deploy takes (numbers too) differs from what a version holds.
 */
export const ResourceRequirements = z.strictObject({ requests: ResourceAmounts.optional(), limits: ResourceAmounts.optional() }).superRefine((value, ctx) => {
  const check = (name: 'cpu' | 'memory', measure: (q: string) => number) => {
    const request = value.requests?.[name];
    const limit = value.limits?.[name];
    if (request !== undefined && limit !== undefined && measure(request) > measure(limit)) {
      ctx.addIssue({ code: 'custom', path: ['requests', name], message: `The ${name} request (${request}) is above its limit (${limit})` });
    }
  };
  check('cpu', cpuMillicores);
  check('memory', memoryBytes);
});
export type ResourceRequirements = z.infer<typeof ResourceRequirements>;

/** Resources as a version holds them (checked when deployed): quantities as text. */
const StoredAmounts = z.object({ cpu: z.string().optional(), memory: z.string().optional() });
export const StoredResources = z.object({ requests: StoredAmounts.optional(), limits: StoredAmounts.optional() });

export const Version = z
  .object({
    id: z.string(),
    /** 1, 2, 3, ... per agent in deploy order; `v3` in tables and version references. */
    number: z.number().int().min(1),
    branch_id: z.string(),
    git_hash: z.string(),
    git_branch: z.string(),
    git_message: z.string().default(''),
    author_name: z.string(),
    author_email: z.string(),
    image_url: z.string(),
    status: VersionStatus,
    deployed_at: Timestamp,
    sdk_type: SDKType,
    acp_type: ACPType,
    is_dirty: z.boolean().default(false),
    replicas: z.number().int().default(0),
    rollback_count: z.number().int().default(0),
    last_rollback_at: Timestamp.nullable().optional(),
    rolled_back_at: Timestamp.nullable().optional(),
    retired_at: Timestamp.nullable().optional(),
    image_expires_at: Timestamp.nullable().optional(),
    failure_reason: z.string().nullable().optional(),
    failure_diagnostics: z.record(z.string(), z.string()).nullable().optional(),
    source_filesystem_id: z.string().nullable().optional(),
    /** CPU and memory each replica requests and is limited to (null: the runtime's defaults). */
    resources: StoredResources.nullable().optional(),
    /** What an event arriving while a turn of the task is open does (README "Interrupt and double-texting"). */
    double_texting: z.enum(DOUBLE_TEXTING_POLICIES).default(DEFAULT_DOUBLE_TEXTING),
    created_at: Timestamp.nullable().optional(),
    updated_at: Timestamp.nullable().optional(),
  })
  .meta({ id: 'Version' });
export type Version = z.infer<typeof Version>;

export const CurrentVersionSummary = z
  .object({
    id: z.string(),
    git_hash: z.string(),
    status: VersionStatus,
    deployed_at: Timestamp,
    git_message: z.string().default('').optional(),
    source_filesystem_id: z.string().nullable().optional(),
  })
  .meta({ id: 'CurrentVersionSummary' });

export const Branch = z
  .object({
    id: z.string(),
    agent_id: z.string(),
    git_branch: z.string(),
    git_branch_normalized: z.string(),
    replicas: z.number().int(),
    created_at: Timestamp.optional(),
    updated_at: Timestamp.optional(),
    retired_at: Timestamp.nullable().optional(),
    retired_reason: z.string().nullable().optional(),
    current_version: CurrentVersionSummary.nullable().optional(),
  })
  .meta({ id: 'Branch' });
export type Branch = z.infer<typeof Branch>;

export const Task = z
  .object({
    id: z.string(),
    filesystem_id: z.string(),
    namespace_id: z.string(),
    name: z.string().nullable().optional(),
    status: TaskStatus.nullable().optional(),
    status_reason: z.string().nullable().optional(),
    params: JsonObject.nullable().optional(),
    task_metadata: JsonObject.nullable().optional(),
    created_version_id: z.string().nullable().optional(),
    current_version_id: z.string().nullable().optional(),
    agents: z.array(Agent).nullable().optional(),
    created_at: Timestamp.nullable().optional(),
    updated_at: Timestamp.nullable().optional(),
    /** GenAI tokens its agent's spans reported (`gen_ai.usage.*`), summed; absent until some were. */
    usage: z.object({ input_tokens: z.number().int(), output_tokens: z.number().int() }).optional(),
    /** A shadow task (a rehearsal's replay): the task it rehearses. Absent on ordinary tasks. */
    shadow_of: z.string().optional(),
    /** Why the task's last onMigrate failed; the task went back to the version it came from. Absent when it did not fail. */
    migration_error: z.object({ message: z.string(), from_version_id: z.string(), to_version_id: z.string(), at: Timestamp }).optional(),
  })
  .meta({ id: 'Task' });
export type Task = z.infer<typeof Task>;

export const State = z
  .object({
    id: z.string(),
    task_id: z.string(),
    agent_id: z.string(),
    state: JsonObject,
    /** Optimistic-concurrency counter, also sent as the `ETag`. */
    version: z.number().int(),
    created_at: Timestamp,
    updated_at: Timestamp,
    /** The version the task ran on when the state was last written (null: written before this was recorded). */
    written_by_version_id: z.string().nullable().optional(),
  })
  .meta({ id: 'State' });
export type State = z.infer<typeof State>;

/** A value a (task, agent) state held before it was replaced (`GET /tasks/{id}/states/history`). */
export const StateHistoryEntry = z
  .object({
    task_id: z.string(),
    agent_id: z.string(),
    /** The task's last sequence number when this value was written; one entry per sequence at which the state was written. */
    sequence_id: z.number().int(),
    state: JsonObject,
    /** When the value was written (null: kept before this was recorded). */
    written_at: Timestamp.nullable(),
    /** The version the task ran on when the value was written (null: not recorded). */
    written_by_version_id: z.string().nullable(),
  })
  .meta({ id: 'StateHistoryEntry' });
export type StateHistoryEntry = z.infer<typeof StateHistoryEntry>;

export const Environment = z
  .object({
    id: z.string(),
    agent_id: z.string(),
    name: z.string(),
    description: z.string(),
    is_prod: z.boolean(),
    branch_rules: z.array(z.string()),
    created_at: Timestamp,
    updated_at: Timestamp,
  })
  .meta({ id: 'Environment' });
export type Environment = z.infer<typeof Environment>;

export const Namespace = z
  .object({
    id: z.string(),
    org_id: z.string(),
    /** The org that owns the namespace: `org_id` under the upstream API's name. */
    owner_org_id: z.string(),
    name: z.string(),
    slug: z.string(),
    /** The id of the key that created it; null for the `default` namespace made at first start. */
    created_by: z.string().nullable(),
    created_at: Timestamp,
    updated_at: Timestamp,
  })
  .meta({ id: 'Namespace' });
export type Namespace = z.infer<typeof Namespace>;

export const Project = z
  .object({
    id: z.string(),
    namespace_id: z.string(),
    name: z.string(),
    description: z.string(),
    created_at: Timestamp,
    updated_at: Timestamp,
  })
  .meta({ id: 'Project' });
export type Project = z.infer<typeof Project>;

export const VersionEvent = z
  .object({
    id: z.string(),
    branch_id: z.string(),
    version_id: z.string().nullable(),
    sequence: z.number().int(),
    type: z.string(),
    data: JsonObject,
    created_at: Timestamp,
  })
  .meta({ id: 'VersionEvent' });
export type VersionEvent = z.infer<typeof VersionEvent>;

export const Scope = z
  .object({
    resource_type: ResourceType,
    resource_id: z.string().min(1),
    role: Role,
  })
  .meta({ id: 'Scope' });
export type Scope = z.infer<typeof Scope>;

export const ApiKey = z
  .object({
    id: z.string(),
    org_id: z.string(),
    name: z.string(),
    description: z.string(),
    key_prefix: z.string(),
    scopes: z.array(Scope),
    sharing_group_ids: z.array(z.string()),
    expires_at: Timestamp.nullable(),
    revoked_at: Timestamp.nullable(),
    last_used_at: Timestamp.nullable(),
    created_at: Timestamp,
    updated_at: Timestamp,
  })
  .meta({ id: 'ApiKey' });
export type ApiKey = z.infer<typeof ApiKey>;

export const Group = z
  .object({
    id: z.string(),
    org_id: z.string(),
    /** The org that owns the group: `org_id` under the upstream API's name. */
    owner_org_id: z.string(),
    name: z.string(),
    description: z.string(),
    member_count: z.number().int(),
    /** The id of the key that created it (null for groups made before it was recorded). */
    created_by: z.string().nullable(),
    created_at: Timestamp,
    updated_at: Timestamp,
  })
  .meta({ id: 'Group' });
export type Group = z.infer<typeof Group>;

export const GroupMember = z.object({ group_id: z.string(), member_id: z.string(), name: z.string(), added_at: Timestamp }).meta({ id: 'GroupMember' });

export const Preset = z
  .object({
    id: z.enum(PRESET_IDS),
    name: z.string(),
    use: z.string(),
    /** What its scopes allow, in a sentence. */
    description: z.string(),
    scopes: z.array(z.object({ resource_type: ResourceType, role: Role })),
  })
  .meta({ id: 'Preset' });
export type Preset = z.infer<typeof Preset>;

export const Whoami = z
  .object({
    id: z.string(),
    name: z.string(),
    key_prefix: z.string(),
    org_id: z.string(),
    scopes: z.array(Scope),
    sharing_group_ids: z.array(z.string()),
    expires_at: Timestamp.nullable(),
  })
  .meta({ id: 'Whoami' });
export type Whoami = z.infer<typeof Whoami>;
