import { readFileSync } from 'node:fs';
import path from 'node:path';
import { configDir, ConfigStore, resolveCredentials, type CredentialFlags } from './config.js';
import type { CliIO } from './context.js';
import { VERSION } from './version.js';

/** What `agentctl __complete KIND` answers; the completion scripts name these (OptionSpec.complete). */
export const COMPLETION_KINDS = ['profiles', 'agents', 'tasks', 'versions', 'branches'] as const;
export type CompletionKind = (typeof COMPLETION_KINDS)[number];

/**
 * The live values of a flag or argument that does not name its kind (`complete`), by its name: a
 * task (`--task`, TASK), a version reference (`--from`, `--to`, `--on-version`, VERSION), a branch.
 */
const KIND_BY_NAME: Readonly<Record<string, CompletionKind>> = {
  task: 'tasks',
  version: 'versions',
  from: 'versions',
  to: 'versions',
  'on-version': 'versions',
  branch: 'branches',
};
export const completionByName = (name: string): CompletionKind | undefined => KIND_BY_NAME[name];

/** How long one TAB may wait for the service before it completes nothing. */
const DEFAULT_TIMEOUT_MS = 1000;

/**
 * The hidden `agentctl __complete KIND [--profile P] [--base-url U] [--api-key K]` the generated
 * completion scripts call (as cobra's and wrangler's do): candidates on stdout, one per line.
 * Profiles come from the config file alone; agent names from one round trip with a short timeout.
 * It never prompts and never writes to stderr: whatever goes wrong, the shell just gets no words.
 */
export async function complete(args: readonly string[], io: CliIO): Promise<number> {
  try {
    const [kind, ...rest] = args;
    const flags = parseFlags(rest);
    const words = kind === 'profiles' ? profiles(io) : kind === 'agents' ? await agents(io, flags) : isLive(kind) ? await live(kind, io, flags) : [];
    if (words.length) io.stdout.write(`${words.join('\n')}\n`);
  } catch {
    // Nothing to offer: a broken config, an unreachable or refusing service.
  }
  return 0;
}

function parseFlags(args: readonly string[]): CredentialFlags & { agent?: string } {
  const flags: CredentialFlags & { agent?: string } = {};
  for (let i = 0; i < args.length; i++) {
    const [name, inline] = args[i].split(/=(.*)/s, 2);
    const value = inline ?? args[i + 1];
    if (inline === undefined && ['--profile', '--base-url', '--api-key', '--agent'].includes(name)) i++;
    if (!value) continue;
    if (name === '--profile') flags.profile = value;
    else if (name === '--base-url') flags.baseUrl = value;
    else if (name === '--api-key') flags.apiKey = value;
    else if (name === '--agent') flags.agent = value;
  }
  return flags;
}

const store = (io: CliIO) => new ConfigStore(configDir(io.env));

function profiles(io: CliIO): string[] {
  return Object.keys(store(io).profiles()).sort();
}

async function clientFor(io: CliIO, flags: CredentialFlags) {
  const credentials = resolveCredentials(flags, io.env, store(io));
  if (!credentials.apiKey) return undefined;
  const { createClient } = await import('../client/index.js');
  const timeoutMs = Number(io.env.AGENTCTL_COMPLETE_TIMEOUT_MS) || DEFAULT_TIMEOUT_MS;
  return createClient({
    baseUrl: credentials.baseUrl,
    apiKey: credentials.apiKey,
    timeoutMs,
    retries: 0,
    shortLived: true,
    userAgent: `agentctl/${VERSION}`,
    signal: AbortSignal.timeout(timeoutMs),
  });
}

async function agents(io: CliIO, flags: CredentialFlags): Promise<string[]> {
  const client = await clientFor(io, flags);
  if (!client) return [];
  // Agents carry only their namespace's id: both lists at once, one round trip.
  const [{ agents: list }, { namespaces }] = await Promise.all([
    client.listAgents({ query: { limit: 1000 } }),
    client.listNamespaces({ query: { limit: 1000 } }),
  ]);
  const slug = new Map(namespaces.map((n) => [n.id, n.slug]));
  return list.flatMap((a) => (slug.has(a.namespace_id) ? [`${slug.get(a.namespace_id)}/${a.name}`] : [])).sort();
}

const LIVE_KINDS = ['tasks', 'versions', 'branches'] as const;
const isLive = (kind: string | undefined): kind is (typeof LIVE_KINDS)[number] => (LIVE_KINDS as readonly (string | undefined)[]).includes(kind);

/**
 * Tasks (names and ids, newest first), or the version references (`v3`) and branch names of the
 * agent: `--agent` on the command line being completed, else the `agent` of ./agentctl.json.
 */
async function live(kind: (typeof LIVE_KINDS)[number], io: CliIO, flags: CredentialFlags & { agent?: string }): Promise<string[]> {
  const agent = flags.agent ?? directoryAgent(io.cwd);
  const client = await clientFor(io, flags);
  if (!client) return [];
  if (kind === 'tasks') {
    const { tasks } = await client.listTasks({ query: { limit: 100, ...(agent ? { agent_name: agent } : {}) } });
    return tasks.flatMap((t) => (t.name ? [t.name, t.id] : [t.id]));
  }
  const [namespace_slug, agent_name] = (agent ?? '').split('/');
  if (!namespace_slug || !agent_name) return [];
  if (kind === 'versions') {
    const { versions } = await client.listAgentVersions({ params: { namespace_slug, agent_name }, query: { limit: 100 } });
    return versions.map((v) => `v${v.number}`);
  }
  const { branches } = await client.listAgentBranches({ params: { namespace_slug, agent_name } });
  return branches.map((b) => b.git_branch).sort();
}

/**
 * `agent` of ./agentctl.json, read plainly: a TAB has no time for the schema (a bad file gives
 * nothing), nor for the module of AGENT_PROJECT_FILE, which loads zod, hence the name written here.
 */
function directoryAgent(cwd: string): string | undefined {
  try {
    const agent = (JSON.parse(readFileSync(path.join(cwd, 'agentctl.json'), 'utf8')) as { agent?: unknown }).agent;
    return typeof agent === 'string' ? agent : undefined;
  } catch {
    return undefined;
  }
}
