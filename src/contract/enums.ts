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

export const RESOURCE_TYPES = ['org', 'namespace', 'project', 'agent'] as const;
export const ROLES = ['admin', 'member', 'discoverer', 'viewer', 'editor', 'owner', 'executor'] as const;

/** The spec's table: valid roles per resource type. */
export const ROLES_BY_RESOURCE_TYPE: Record<(typeof RESOURCE_TYPES)[number], readonly string[]> = {
  org: ['admin', 'member'],
  namespace: ['admin'],
  project: ['discoverer', 'viewer', 'editor', 'owner'],
  agent: ['discoverer', 'viewer', 'editor', 'owner', 'executor'],
};

/** The SSE event name of a version's log lines (GET .../logs?follow=true). */
export const LOG_SSE_EVENT = 'log';
