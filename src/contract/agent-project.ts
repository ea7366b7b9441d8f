import { z } from 'zod';
import { ACPType } from './common.js';
import { DEFAULT_ACP_TYPE, DEFAULT_DOUBLE_TEXTING, DEPLOY_REPLICAS, DOUBLE_TEXTING_POLICIES } from './enums.js';

/** The file an agent repository keeps at its root; `agentctl init` writes it, `deploy` and the runtime read it. */
export const AGENT_PROJECT_FILE = 'agentctl.json';

/**
 * `agentctl.json` (README "Local runtime and logs"). The CLI takes the default `--agent` of every command run in
 * the directory from `agent`, and `deploy` its defaults from the rest; the runtime reads `entry`,
 * `build` and `env` from the deployed source snapshot.
 */
export const AgentProjectFile = z
  .object({
    /** `namespace/name`. */
    agent: z.string().regex(/^[a-z0-9][a-z0-9-]*[a-z0-9]\/[a-z0-9][a-z0-9_-]*$/, 'namespace/name, e.g. default/my-bot'),
    /** The file Node runs: JavaScript, or erasable TypeScript (Node 24 runs it directly). */
    entry: z.string().min(1).default('src/index.ts'),
    acp_type: ACPType.default(DEFAULT_ACP_TYPE),
    description: z.string().max(1000).default(''),
    replicas: z.number().int().min(DEPLOY_REPLICAS.min).max(DEPLOY_REPLICAS.max).default(DEPLOY_REPLICAS.default),
    are_tasks_sticky: z.boolean().default(false),
    /**
     * What an event that arrives while a turn of the task is open does: `enqueue` (default), `interrupt`,
     * `reject` (409 task_busy) or `merge` (README "Interrupt and double-texting"). Stored on the version.
     */
    double_texting: z.enum(DOUBLE_TEXTING_POLICIES).default(DEFAULT_DOUBLE_TEXTING),
    /** A shell command run in the source directory before the entry starts (optional). */
    build: z.string().min(1).optional(),
    /** Extra environment of every replica (never the platform's secrets). */
    env: z.record(z.string().regex(/^[A-Za-z_][A-Za-z0-9_]*$/), z.string()).default({}),
  })
  .meta({ id: 'AgentProjectFile' });
export type AgentProjectFile = z.infer<typeof AgentProjectFile>;
