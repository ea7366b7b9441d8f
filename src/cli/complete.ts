import { configDir, ConfigStore, resolveCredentials, type CredentialFlags } from './config.js';
import type { CliIO } from './context.js';
import { VERSION } from './version.js';

/** What `agentctl __complete KIND` answers; the completion scripts name these (OptionSpec.complete). */
export const COMPLETION_KINDS = ['profiles', 'agents'] as const;
export type CompletionKind = (typeof COMPLETION_KINDS)[number];

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
    const words = kind === 'profiles' ? profiles(io) : kind === 'agents' ? await agents(io, flags) : [];
    if (words.length) io.stdout.write(words.join('\n') + '\n');
  } catch {
    // Nothing to offer: a broken config, an unreachable or refusing service.
  }
  return 0;
}

function parseFlags(args: readonly string[]): CredentialFlags {
  const flags: CredentialFlags = {};
  for (let i = 0; i < args.length; i++) {
    const [name, inline] = args[i].split(/=(.*)/s, 2);
    const value = inline ?? args[i + 1];
    if (inline === undefined && ['--profile', '--base-url', '--api-key'].includes(name)) i++;
    if (!value) continue;
    if (name === '--profile') flags.profile = value;
    else if (name === '--base-url') flags.baseUrl = value;
    else if (name === '--api-key') flags.apiKey = value;
  }
  return flags;
}

const store = (io: CliIO) => new ConfigStore(configDir(io.env));

function profiles(io: CliIO): string[] {
  return Object.keys(store(io).profiles()).sort();
}

async function agents(io: CliIO, flags: CredentialFlags): Promise<string[]> {
  const credentials = resolveCredentials(flags, io.env, store(io));
  if (!credentials.apiKey) return [];
  const { createClient } = await import('../client/index.js');
  const timeoutMs = Number(io.env.AGENTCTL_COMPLETE_TIMEOUT_MS) || DEFAULT_TIMEOUT_MS;
  const client = createClient({ baseUrl: credentials.baseUrl, apiKey: credentials.apiKey, timeoutMs, retries: 0, shortLived: true, userAgent: `agentctl/${VERSION}`, signal: AbortSignal.timeout(timeoutMs) });
  // Agents carry only their namespace's id: both lists at once, one round trip.
  const [{ agents: list }, { namespaces }] = await Promise.all([client.listAgents({ query: { limit: 1000 } }), client.listNamespaces({ query: { limit: 1000 } })]);
  const slug = new Map(namespaces.map((n) => [n.id, n.slug]));
  return list.flatMap((a) => (slug.has(a.namespace_id) ? [`${slug.get(a.namespace_id)}/${a.name}`] : [])).sort();
}
