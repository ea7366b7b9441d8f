import { z } from 'zod';
import { ACP_TYPES, PAGE_LIMIT, RESOURCE_TYPES, ROLES, ROLES_BY_RESOURCE_TYPE, SDK_TYPES } from './enums.js';
import { AGENT_STATUSES, TASK_STATUSES, TERMINAL_TASK_STATUSES, VERSION_STATUSES } from './lifecycle.js';

/** ISO 8601 UTC with milliseconds and `Z`, as every timestamp the service writes. */
export const Timestamp = z.string().meta({ format: 'date-time' });

/** Arbitrary JSON object (task params, metadata, state). */
export const JsonObject = z.record(z.string(), z.unknown());

export const ID_PREFIXES = {
  org: 'org_',
  namespace: 'ns_',
  project: 'prj_',
  agent: 'agt_',
  branch: 'br_',
  version: 'ver_',
  environment: 'env_',
  task: 'task_',
  state: 'st_',
  apiKey: 'key_',
  group: 'grp_',
  filesystem: 'fs_',
  event: 'evt_',
  message: 'msg_',
  tracker: 'trk_',
  schedule: 'sch_',
  consoleSession: 'ses_',
  secret: 'sec_',
  rollout: 'ro_',
  migration: 'mig_',
  rehearsal: 'reh_',
} as const;

export const TaskStatus = z.enum(TASK_STATUSES);
export type TaskStatus = z.infer<typeof TaskStatus>;
/** Statuses from which a task never comes back (lifecycle.ts). */
export { TERMINAL_TASK_STATUSES };

export const VersionStatus = z.enum(VERSION_STATUSES);
export type VersionStatus = z.infer<typeof VersionStatus>;

export const AgentStatus = z.enum(AGENT_STATUSES);
export const AgentInputType = z.enum(['text', 'json']);
export const ACPType = z.enum(ACP_TYPES);
export const SDKType = z.enum(SDK_TYPES);

export const ResourceType = z.enum(RESOURCE_TYPES);
export type ResourceType = z.infer<typeof ResourceType>;

export { ROLES_BY_RESOURCE_TYPE };

export const Role = z.enum(ROLES);
export type Role = z.infer<typeof Role>;

/**
 * Where the value of a validation item came from, the first element of its `loc`: the JSON body, or
 * a parameter by OpenAPI's `in` (`query`, `path`, `header`).
 */
export const VALIDATION_LOC_ROOTS = ['body', 'query', 'path', 'header'] as const;
export type ValidationLocRoot = (typeof VALIDATION_LOC_ROOTS)[number];

/**
 * The codes of a 422 answered as `{detail, code}` rather than the validation list: input that is
 * well-formed field by field but cannot be used (an archive with a member that may not be written).
 */
export const UNPROCESSABLE_CODES = ['invalid_archive'] as const;
export type UnprocessableCode = (typeof UNPROCESSABLE_CODES)[number];

/** 422 body: exactly the spec's shape. */
export const ValidationErrorItem = z.object({
  loc: z.tuple([z.enum(VALIDATION_LOC_ROOTS)], z.union([z.string(), z.number().int()])),
  msg: z.string(),
  type: z.string(),
});
export const ValidationErrorBody = z.object({ detail: z.array(ValidationErrorItem) });
export type ValidationErrorBody = z.infer<typeof ValidationErrorBody>;

/**
 * Every HTTP status the service answers (the README explains each). 304 and 428 belong to the
 * filesystem archive routes; 408 and 431 come from the HTTP layer, before a route runs.
 */
export const RESPONSE_STATUSES = [200, 201, 304, 400, 401, 403, 404, 408, 409, 412, 413, 414, 415, 422, 428, 429, 431, 500, 503] as const;

/**
 * Every code of a 409 (or 412) the service answers: the server's conflicts are typed by it and
 * the CLI keeps one hint for each (src/cli/output/failure.ts).
 */
export const CONFLICT_CODES = [
  'ambiguous_version',
  'branch_has_tasks',
  'branch_retired',
  'branch_rule_conflict',
  'cursor_backwards',
  'delta_offset_mismatch',
  'delivery_failed',
  'delivery_not_sent',
  'environment_exists',
  'filesystem_in_use',
  'group_exists',
  'history_pruned',
  'idempotency_key_in_use',
  'image_expired',
  'invalid_target',
  'invalid_transition',
  'key_revoked',
  'last_org_admin',
  'lease_lost',
  'message_not_streamable',
  'message_not_streaming',
  'migration_moved_on',
  'migration_too_large',
  'namespace_exists',
  'no_rollback_target',
  'no_routable_version',
  'no_runtime',
  'not_a_dev_version',
  'nothing_to_rehearse',
  'nothing_to_roll_back',
  'precondition_failed',
  'prod_environment',
  'project_exists',
  'schedule_name_taken',
  'secret_exists',
  'rollout_finished',
  'rollout_in_progress',
  'source_retired',
  'rehearsal_too_large',
  'stale_base',
  'state_exists',
  'target_not_routable',
  'task_busy',
  'task_name_taken',
  'task_not_migratable',
  'task_terminal',
] as const;
export type ConflictCode = (typeof CONFLICT_CODES)[number];

/** Every other error: one human sentence and a stable snake_case code. */
export const ErrorBody = z.object({ detail: z.string(), code: z.string() });
export type ErrorBody = z.infer<typeof ErrorBody>;

export const DeleteResponse = z.object({ id: z.string(), message: z.string() });

/** Query-string boolean: `true/false/1/0/yes/no/on/off`. */
export const QueryBool = z.stringbool();

/**
 * A query-string integer: plain decimal digits only (`0x10`, `+5`, ` 5 `, `1e1` and `5.0` are
 * refused, not read as numbers); a number passes as it is (in-process callers).
 */
export const QueryInt = (min: number, max?: number) => {
  const bounded = z.number().int().min(min);
  return z
    .union(
      [
        z.number(),
        z
          .string()
          .regex(/^-?[0-9]{1,16}$/)
          .transform(Number),
      ],
      { error: 'Expected a decimal integer' },
    )
    .pipe(max === undefined ? bounded : bounded.max(max));
};

/** A name or other label that must say something: not empty, not only whitespace. */
export const NonBlank = (max: number) => z.string().min(1).max(max).regex(/\S/, 'must not be blank');

export const PageQuery = {
  limit: QueryInt(PAGE_LIMIT.min, PAGE_LIMIT.max).default(PAGE_LIMIT.default),
  page_number: QueryInt(1).default(1),
  order_direction: z.enum(['asc', 'desc']).default('desc'),
};

export const Slug = z
  .string()
  .min(3)
  .max(63)
  .regex(/^[a-z0-9][a-z0-9-]*[a-z0-9]$/, 'lowercase letters, digits and dashes; starts and ends with a letter or digit');

export const ResourceName = z
  .string()
  .min(1)
  .max(63)
  .regex(/^[a-z0-9][a-z0-9_-]*$/, 'lowercase letters, digits, `_` and `-`; starts with a letter or digit');
