/**
 * The contract's enumerations as plain data, no zod: the schemas in common.ts and endpoints.ts are
 * built from these, and the CLI's flag choices (and so its completions) import them without
 * loading the schemas at start-up (as version-ref.ts does for version references). Statuses and
 * their sets live in lifecycle.ts.
 */
export const ACP_TYPES = ['sync', 'async'] as const;
export const SDK_TYPES = ['alpha_agent_sdk', 'beta_agent_sdk'] as const;
/**
 * What a deploy that leaves `sdk_type` or `acp_type` out gets: what `agentctl deploy` sends by
 * default (its flag defaults are these), so a client of the upstream API that omits them deploys
 * as the CLI would.
 */
export const DEFAULT_SDK_TYPE: (typeof SDK_TYPES)[number] = 'alpha_agent_sdk';
export const DEFAULT_ACP_TYPE: (typeof ACP_TYPES)[number] = 'async';
/** The methods the service calls on an agent (contract/acp.ts). */
/** `task/migrate` (issue 22): a migrated task's onMigrate, a control delivery enqueued by the migration. */
export const ACP_METHODS = ['task/create', 'event/send', 'task/cancel', 'message/send', 'task/migrate'] as const;
export const PRESET_IDS = ['deploy', 'read-only', 'agent-runner', 'custom'] as const;

/**
 * The bounds of the contract's numeric inputs, as plain data: the schemas are built from these and
 * the CLI's help quotes them (`boundsText`), so a limit is written once.
 */
export interface Bounds {
  readonly min: number;
  readonly max: number;
  readonly default?: number;
}
/** `limit` of the paged lists (agents, tasks, groups, namespaces, projects, states, filesystems). */
export const PAGE_LIMIT = { min: 1, max: 1000, default: 100 } as const satisfies Bounds;
/** `limit` of a versions list (GET .../versions): the newest versions only. */
export const VERSION_LIST_LIMIT = { min: 1, max: 100, default: 20 } as const satisfies Bounds;
/** The most versions one versions list answers. */
export const VERSION_LIST_MAX = VERSION_LIST_LIMIT.max;
/** `limit` of a task's events (GET /events). */
export const EVENT_LIST_LIMIT = { min: 1, max: 500, default: 100 } as const satisfies Bounds;
/** `limit` of a task's messages (GET /messages). */
/** Characters in a message's text, reasoning summary or tool arguments, whole or streamed. */
export const MESSAGE_TEXT_MAX = 262_144;
/** Characters in one delta (`POST /messages/{id}/deltas`); more is 413. */
export const MESSAGE_DELTA_MAX = 65_536;
export const MESSAGE_LIST_LIMIT = { min: 1, max: 500, default: 50 } as const satisfies Bounds;
/** `replicas` of a deploy (and of agentctl.json). */
export const DEPLOY_REPLICAS = { min: 1, max: 10, default: 1 } as const satisfies Bounds;
/** `tail` of a version's logs: the last N lines; 0 with `follow` sends only new lines. */
export const LOG_TAIL = { min: 0, max: 10_000, default: 100 } as const satisfies Bounds;

/** Bounds as help text says them: `1..500`, or with the server's default `1..500, default 100`. */
export const boundsText = (b: Bounds, withDefault = false): string =>
  `${b.min}..${b.max}${withDefault && b.default !== undefined ? `, default ${b.default}` : ''}`;

export const RESOURCE_TYPES = ['org', 'namespace', 'project', 'agent'] as const;
export const ROLES = ['admin', 'member', 'discoverer', 'viewer', 'editor', 'owner', 'executor'] as const;

/** The spec's table: valid roles per resource type. */
export const ROLES_BY_RESOURCE_TYPE: Record<(typeof RESOURCE_TYPES)[number], readonly string[]> = {
  org: ['admin', 'member'],
  namespace: ['admin'],
  project: ['discoverer', 'viewer', 'editor', 'owner'],
  agent: ['discoverer', 'viewer', 'editor', 'owner', 'executor'],
};

/** Where `agentctl server start` listens unless told otherwise, and so where a client without a URL looks. */
export const DEFAULT_HOST = '127.0.0.1';
export const DEFAULT_PORT = 7420;
export const DEFAULT_BASE_URL = `http://${DEFAULT_HOST}:${DEFAULT_PORT}`;

/** What runs deployed versions (`agentctl server start --runtime`, AGENTCTL_RUNTIME); the first is the default. */
export const RUNTIME_NAMES = ['local', 'kubernetes', 'none'] as const;
export type RuntimeName = (typeof RUNTIME_NAMES)[number];
export const DEFAULT_RUNTIME: RuntimeName = RUNTIME_NAMES[0];

/** The SSE event name of a version's log lines (GET .../logs?follow=true). */
export const LOG_SSE_EVENT = 'log';
