import { PROCESS_ENV } from '../contract/acp.js';
import { DEFAULT_BASE_URL } from '../contract/enums.js';

/** Scripts outside a runtime authenticate with this (a runtime's agent gets its key by registering). */
export const API_KEY_ENV = 'AGENTCTL_API_KEY';

/** The process contract (README "Writing agents: the ADK") as read from the environment. */
export interface ProcessConfig {
  baseUrl: string;
  apiKey?: string;
  versionId?: string;
  branchId?: string;
  registrationToken?: string;
  signingSecret?: string;
  port?: number;
  dataRoot?: string;
}

export function readProcessConfig(env: NodeJS.ProcessEnv = process.env): ProcessConfig {
  const port = env[PROCESS_ENV.port];
  return {
    baseUrl: env[PROCESS_ENV.baseUrl] || DEFAULT_BASE_URL,
    apiKey: env[API_KEY_ENV] || undefined,
    versionId: env[PROCESS_ENV.versionId] || undefined,
    branchId: env[PROCESS_ENV.branchId] || undefined,
    registrationToken: env[PROCESS_ENV.registrationToken] || undefined,
    signingSecret: env[PROCESS_ENV.signingSecret] || undefined,
    port: port ? Number(port) : undefined,
    dataRoot: env[PROCESS_ENV.dataRoot] || undefined,
  };
}
