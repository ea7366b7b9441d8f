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
/** `task/migrate` (issue 22): a migrated task's onMigrate, enqueued by the migration, in the task's order like a turn. */
export const ACP_METHODS = ['task/create', 'event/send', 'task/cancel', 'message/send', 'task/interrupt', 'task/migrate'] as const;

/**
 * What a delivery is (README "Interrupt and double-texting"): a `turn` (task/create, event/send,
 * task/cancel) runs a handler, one at a time per task in order; the others are control deliveries,
 * sent through the same outbox and signing. Those in OUT_OF_ORDER_DELIVERY_KINDS neither wait behind
 * the task's open turn nor hold up its later ones.
 */
export const DELIVERY_KINDS = ['turn', 'interrupt'] as const;
export type DeliveryKind = (typeof DELIVERY_KINDS)[number];
export const OUT_OF_ORDER_DELIVERY_KINDS = ['interrupt'] as const satisfies readonly DeliveryKind[];

/**
 * What an agent does with an event that arrives while one of the task's turns is open (agentctl.json
 * `double_texting`, stored on the version): queue it (`enqueue`, the default), interrupt the running
 * turn and then handle it (`interrupt`), refuse it with 409 task_busy (`reject`), or deliver the
 * events queued meanwhile together as one turn (`merge`).
 */
export const DOUBLE_TEXTING_POLICIES = ['enqueue', 'interrupt', 'reject', 'merge'] as const;
export type DoubleTextingPolicy = (typeof DOUBLE_TEXTING_POLICIES)[number];
export const DEFAULT_DOUBLE_TEXTING: DoubleTextingPolicy = 'enqueue';
/** How long an interrupted handler that ignores `ctx.signal` may run on before its turn is cut off (default; the server's AGENTCTL_INTERRUPT_GRACE_MS). */
export const DEFAULT_INTERRUPT_GRACE_MS = 10_000;
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

/**
 * The image URL of a dev version (`agentctl dev`): `dev://<user>@<host>`. No runtime driver runs it
 * and the dispatcher never pushes to it: the developer's `agentctl dev` pulls its deliveries over
 * `GET /versions/{id}/deliveries/stream` (README "Developing an agent: agentctl dev").
 */
export const DEV_IMAGE_PREFIX = 'dev://';
/** Git branches of dev versions: `dev/<user>`. */
export const DEV_BRANCH_PREFIX = 'dev/';
/** SSE event names of `GET /versions/{id}/deliveries/stream`: a signed delivery to hand to the agent. */
export const PULL_DELIVERY_SSE_EVENT = 'delivery';
/** ... and the first event, once the stream is open (`data: {"stream": <its id>}`). */
export const PULL_OPEN_SSE_EVENT = 'open';

/** The SSE event name of a version's log lines (GET .../logs?follow=true). */
export const LOG_SSE_EVENT = 'log';

/** A schedule runs its ticks while ACTIVE; PAUSED keeps it without running (README "Schedules"). */
export const SCHEDULE_STATUSES = ['ACTIVE', 'PAUSED'] as const;
/** What a schedule does with ticks missed while no server ran: none of them, or one run for them all. */
export const MISSED_TICK_POLICIES = ['skip', 'catch-up-one'] as const;
export const DEFAULT_MISSED_TICK_POLICY: (typeof MISSED_TICK_POLICIES)[number] = 'skip';
/** Why a tick ran: its time came, it stands for missed ones (catch-up-one), or someone asked (trigger). */
export const SCHEDULE_TICK_KINDS = ['scheduled', 'catch_up', 'manual'] as const;
/** A tick run at most this late is on time; an older one was missed and follows the missed-tick policy. */
export const MISSED_TICK_GRACE_MS = 10_000;
/** Ticks listed with a schedule (`GET /schedules/{id}`): the most recent ones. */
export const SCHEDULE_RECENT_TICKS = 10;
/** The content kinds a message delta can extend, and the field it appends to (conversation.ts). */
export const STREAMED_FIELDS = { text: 'text', reasoning: 'summary', tool_request: 'arguments' } as const;
/** SSE `event:` names of `GET /tasks/{id}/stream` (conversation.ts). Here, without zod, for the stream reader and the console. */
export const STREAM_RECORD_KINDS = ['event', 'message', 'message_update', 'message_delta', 'task', 'tracker'] as const;
/** An agent secret's name: an environment variable name (README "Secrets"); anything else is 422. */
export const SECRET_NAME_PATTERN = /^[A-Za-z_][A-Za-z0-9_]*$/;
/** The longest secret name. */
export const SECRET_NAME_MAX = 255;
/** The largest secret value, in UTF-8 bytes; more is 413. */
export const SECRET_VALUE_MAX_BYTES = 65_536;
/** Where a secret applies: every version of the agent, or the versions whose branch falls in one environment. */
export const SECRET_SCOPES = ['agent', 'environment'] as const;

/** The most deliveries one `POST /deliveries/complete` may report (the ADK sends no more in one). */
export const MAX_COMPLETIONS_PER_REQUEST = 500;
