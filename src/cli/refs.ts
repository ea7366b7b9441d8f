import type { Client } from '../client/index.js';
import type { Agent, Branch, Version } from '../contract/resources.js';
import { parseVersionRef, VERSION_REF_FORMS } from '../contract/version-ref.js';
import { ApiRequestError } from '../client/errors.js';
import { CliError, usageError } from './errors.js';
import { ExitCode } from './exit-codes.js';
import { agentctl } from './shell.js';

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
  if (!agent)
    throw usageError(
      'Missing --agent',
      'Name the agent as --agent namespace/name, or run where an agentctl.json names it.',
      `${command} --agent default/<name>`,
    );
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

/**
 * A version reference (`ver_` id, `vN`, or a git-hash prefix) as a version id. Numbers and prefixes
 * need the agent (`--agent`, or the directory's agentctl.json) and are resolved by the server in one
 * request; a `ver_` id is used as given.
 */
export async function resolveVersionId(client: Client, ref: string, agentRef: string | undefined, flag: string): Promise<string> {
  return (await resolveVersion(client, ref, agentRef, flag))?.id ?? ref;
}

/** The version a `vN` or git-hash reference names; undefined for a `ver_` id (nothing to look up). */
export async function resolveVersion(client: Client, ref: string, agentRef: string | undefined, flag: string): Promise<Version | undefined> {
  const parsed = parseVersionRef(ref);
  if (!parsed)
    throw usageError(
      `${flag} ${ref} is not a version reference`,
      `Give ${VERSION_REF_FORMS}.`,
      agentRef ? agentctl('versions', 'list', '--agent', agentRef) : undefined,
    );
  if (parsed.kind === 'id') return undefined;
  if (!agentRef) {
    throw usageError(
      `${flag} ${ref} names a version of an agent: add --agent namespace/name (or run where agentctl.json names the agent)`,
      undefined,
      `agentctl versions list --agent <ns/name>`,
    );
  }
  const path = await agentPathOf(client, agentRef);
  try {
    return await client.resolveAgentVersion({ params: { ...path, ref } });
  } catch (error) {
    if (error instanceof ApiRequestError && error.code === 'ambiguous_version') {
      throw usageError(
        `${flag} ${error.message}`,
        'Name the version by its number (vN) or give more characters of the hash.',
        agentctl('versions', 'list', '--agent', agentRef),
      );
    }
    if (error instanceof ApiRequestError && error.status === 404 && !/was not found$/.test(error.message)) {
      throw new CliError(error.message, { exitCode: ExitCode.notFound, code: 'not_found', next: agentctl('versions', 'list', '--agent', agentRef) });
    }
    throw error;
  }
}

/** A branch by `br_` id, or by git branch name with an agent. */
export async function resolveBranch(client: Client, ref: string, agentRef: string | undefined, command: string): Promise<Branch> {
  if (ref.startsWith('br_')) return client.getBranch({ params: { branch_id: ref } });
  if (!agentRef) throw usageError(`Branch "${ref}" needs --agent namespace/name (or pass a br_ id)`, undefined, `${command} --agent default/<name>`);
  const path = await agentPathOf(client, agentRef);
  const { branches } = await client.listAgentBranches({ params: path, query: { include_retired: 'true' } });
  const found = branches.find((b) => b.git_branch === ref) ?? branches.find((b) => b.git_branch_normalized === ref);
  if (!found) {
    throw new CliError(`${agentRef} has no branch "${ref}"`, {
      exitCode: ExitCode.notFound,
      code: 'not_found',
      next: agentctl('branches', 'list', '--agent', agentRef, '--include-retired'),
    });
  }
  return found;
}

/** A `task_` id as it is, or a task name (unique in the org) as its id: every command that takes a task takes either, as `tasks get` does. */
export async function resolveTaskId(client: Client, ref: string): Promise<string> {
  if (ref.startsWith('task_')) return ref;
  return (await client.getTaskByName({ params: { task_name: ref } })).id;
}

/**
 * A `key_` id as it is, or a key name as its id. Names need not be unique: a name several keys
 * share is refused, naming their ids. Revoked keys count only with `includeRevoked`.
 */
export async function resolveKeyId(client: Client, ref: string, includeRevoked: boolean): Promise<string> {
  if (ref.startsWith('key_')) return ref;
  const { api_keys: keys } = await client.listKeys({ query: { include_revoked: includeRevoked ? 'true' : 'false' } });
  const named = keys.filter((k) => k.name === ref);
  if (named.length === 1) return named[0]!.id;
  if (named.length === 0) {
    throw new CliError(`No API key is named "${ref}"${includeRevoked ? '' : ' (revoked keys left out)'}`, {
      exitCode: ExitCode.notFound,
      code: 'not_found',
      hint: 'Give a key_ id or the name of a key.',
      next: agentctl('keys', 'list', ...(includeRevoked ? ['--include-revoked'] : [])),
    });
  }
  throw usageError(
    `${named.length} API keys are named "${ref}": ${named.map((k) => k.id).join(', ')}`,
    'Give the key_ id of the one you mean.',
    agentctl('keys', 'list'),
  );
}

/** Short form of a git hash for people. */
export const shortHash = (hash: string) => hash.slice(0, 7);
