import { createHash } from 'node:crypto';
import type { EndpointInput, EndpointOutput } from '../../src/contract/endpoints.js';
import type { TestService } from './service.js';

// Setup, not what the tests check: these go through the typed client (src/client), which throws on
// an error status and parses the answer with the contract's schema.

let commit = 0;
/** A fresh 40-character hex hash, distinct per call (and in its first 7 characters, as the CLI shows it). */
export const nextHash = () => createHash('sha1').update(`commit ${++commit}`).digest('hex');

type DeployBody = EndpointInput<'deploy'>['body'];

export interface DeployOptions extends Partial<Omit<DeployBody, 'namespace' | 'agent_name' | 'git_hash'>> {
  /** `namespace/name`, or a name in the default namespace (default `support-bot`). */
  agent?: string;
  /** The commit (default: `nextHash()`). */
  hash?: string;
  /** The key to deploy with (default: the admin key). */
  key?: string;
}

/** The deploy answer, and the commit deployed. */
export type Deployed = EndpointOutput<'deploy'> & { git_hash: string };

/** `POST /agents/deploy` with sensible defaults: a DEPLOYING version. */
export async function deploy(svc: TestService, options: DeployOptions = {}): Promise<Deployed> {
  const { agent = 'support-bot', hash = nextHash(), key, ...fields } = options;
  const [namespace, agent_name] = agent.includes('/') ? agent.split('/') : [undefined, agent];
  const body: DeployBody = {
    namespace,
    agent_name,
    branch: 'main',
    git_hash: hash,
    git_message: `commit ${hash.slice(0, 7)}`,
    author_name: 'Ada',
    author_email: 'ada@example.com',
    image_url: `registry.local/${agent_name}:${hash.slice(0, 7)}`,
    sdk_type: 'alpha_agent_sdk',
    acp_type: 'async',
    ...fields,
  };
  return { ...(await svc.client(key).deploy({ body })), git_hash: hash };
}

/** Reports a version ready (or another status), as its container would on start. */
export async function register(svc: TestService, versionId: string, key?: string, status: 'ACTIVE' | 'UNHEALTHY' | 'FAILED' = 'ACTIVE') {
  return svc.client(key).registerVersion({ body: { version_id: versionId, status } });
}

/** Deploy and register: an ACTIVE version. */
export async function deployActive(svc: TestService, options: DeployOptions = {}): Promise<Deployed> {
  const deployed = await deploy(svc, options);
  await register(svc, deployed.version_id, options.key);
  return deployed;
}

/** `POST /tasks` on an agent (default `default/support-bot`). */
export async function createTask(svc: TestService, body: Partial<EndpointInput<'createTask'>['body']> = {}, key?: string) {
  return svc.client(key).createTask({ body: { agent_name: 'default/support-bot', ...body } });
}

export async function createTasks(svc: TestService, count: number, body: Partial<EndpointInput<'createTask'>['body']> = {}) {
  const tasks = [];
  for (let i = 0; i < count; i++) tasks.push(await createTask(svc, body));
  return tasks;
}
