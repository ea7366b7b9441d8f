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
export const PRESET_IDS = ['deploy', 'read-only', 'agent-runner', 'custom'] as const;

/** The most versions one versions list answers (GET .../versions takes `limit` 1..this). */
export const VERSION_LIST_MAX = 100;
