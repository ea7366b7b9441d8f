import type { Client } from '../client/index.js';
import type { Agent, Branch, Version } from '../contract/resources.js';
import { CliError, usageError } from './errors.js';
import { ExitCode } from './exit-codes.js';

export interface AgentPath {
  namespace_slug: string;
  agent_name: string;
}

/** `ns/name`, or a bare name in the `default` namespace. */
export function parseAgentPath(ref: string): AgentPath {
  const parts = ref.split('/');
  if (parts.length === 1 && parts[0]) return { namespace_slug: 'default', agent_name: parts[0] };
  if (parts.length === 2 && parts[0] && parts[1]) return { namespace_slug: parts[0], agent_name: parts[1] };
  throw usageError(`"${ref}" is not an agent reference`, 'Name an agent as namespace/name, e.g. default/bot.');
}

export function requireAgentOption(agent: string | undefined, command: string): string {
  if (!agent) throw usageError('Missing --agent', 'Name the agent as --agent namespace/name.', `${command} --agent default/<name>`);
  return agent;
}

/** An agent by `agt_` id or `ns/name`. */
export async function resolveAgent(client: Client, ref: string): Promise<Agent> {
  if (ref.startsWith('agt_')) return client.getAgent({ params: { agent_id: ref } });
  return client.getAgentByName({ params: parseAgentPath(ref) });
}

/** The `ns/name` path of an agent reference (fetching the agent when given an id). */
export async function agentPathOf(client: Client, ref: string): Promise<AgentPath> {
  if (!ref.startsWith('agt_')) return parseAgentPath(ref);
  const agent = await client.getAgent({ params: { agent_id: ref } });
  const { namespaces } = await client.listNamespaces({ query: { limit: 1000 } });
  const namespace = namespaces.find((n) => n.id === agent.namespace_id);
  if (!namespace) throw new CliError(`The namespace of ${ref} is not visible to this key`, { exitCode: ExitCode.notFound, code: 'not_found' });
  return { namespace_slug: namespace.slug, agent_name: agent.name };
}

const HEX = /^[0-9a-f]{4,64}$/i;

/**
 * A version reference: a `ver_` id, or with an agent a unique git-hash prefix (looked up among the
 * agent's 100 newest versions).
 */
export async function resolveVersionId(client: Client, ref: string, agentRef: string | undefined, flag: string): Promise<string> {
  if (ref.startsWith('ver_')) return ref;
  if (!HEX.test(ref)) throw usageError(`${flag} ${ref} is neither a ver_ id nor a git-hash prefix`);
  if (!agentRef) throw usageError(`${flag} ${ref} looks like a git hash: add --agent namespace/name to look it up`, undefined, `agentctl versions list --agent <ns/name>`);
  const versions = await versionsByHashPrefix(client, agentRef, ref);
  if (versions.length === 0) {
    throw new CliError(`No version of ${agentRef} has a git hash starting with ${ref}`, { exitCode: ExitCode.notFound, code: 'not_found', next: `agentctl versions list --agent ${agentRef}` });
  }
  if (versions.length > 1) {
    throw usageError(`${flag} ${ref} matches ${versions.length} versions (${versions.map((v) => `${v.id} ${v.git_hash.slice(0, 10)}`).join(', ')})`, 'Give more characters of the hash, or the ver_ id.');
  }
  return versions[0].id;
}

async function versionsByHashPrefix(client: Client, agentRef: string, prefix: string): Promise<Version[]> {
  const path = await agentPathOf(client, agentRef);
  const { versions } = await client.listAgentVersions({ params: path, query: { limit: 100 } });
  const wanted = prefix.toLowerCase();
  return versions.filter((v) => v.git_hash.toLowerCase().startsWith(wanted));
}

/** A branch by `br_` id, or by git branch name with an agent. */
export async function resolveBranch(client: Client, ref: string, agentRef: string | undefined, command: string): Promise<Branch> {
  if (ref.startsWith('br_')) return client.getBranch({ params: { branch_id: ref } });
  if (!agentRef) throw usageError(`Branch "${ref}" needs --agent namespace/name (or pass a br_ id)`, undefined, `${command} --agent default/<name>`);
  const path = await agentPathOf(client, agentRef);
  const { branches } = await client.listAgentBranches({ params: path, query: { include_retired: 'true' } });
  const found = branches.find((b) => b.git_branch === ref) ?? branches.find((b) => b.git_branch_normalized === ref);
  if (!found) {
    throw new CliError(`${agentRef} has no branch "${ref}"`, { exitCode: ExitCode.notFound, code: 'not_found', next: `agentctl branches list --agent ${agentRef} --include-retired` });
  }
  return found;
}

/** Short form of a git hash for people. */
export const shortHash = (hash: string) => hash.slice(0, 7);
