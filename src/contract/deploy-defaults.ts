/**
 * The deploy choices and their defaults, as plain data: the CLI's flag table (src/cli/registry.ts)
 * reads them without loading zod, and the contract's enums (common.ts) are built from them, so a
 * deploy that leaves `sdk_type` or `acp_type` out gets what `agentctl deploy` would have sent.
 */
export const SDK_TYPES = ['alpha_agent_sdk', 'beta_agent_sdk'] as const;
export const ACP_TYPES = ['sync', 'async'] as const;

export const DEFAULT_SDK_TYPE: (typeof SDK_TYPES)[number] = 'alpha_agent_sdk';
export const DEFAULT_ACP_TYPE: (typeof ACP_TYPES)[number] = 'async';
