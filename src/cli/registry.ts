import type { CommandDeclaration, OptionSpec } from './command.js';
import { manifest } from './manifest.js';
import { DEFAULT_BASE_URL } from '../contract/enums.js';

/** Flags every command accepts (README "The CLI"). */
export const GLOBAL_OPTIONS: readonly OptionSpec[] = [
  { flags: '--json', description: 'Print the API’s JSON response (errors as {"error": ...} on stderr); never prompts. --json id,name: only those fields' },
  { flags: '--jq <expr>', description: 'Filter the JSON response with a jq expression (implies --json; strings print raw)' },
  { flags: '--wide', description: 'Tables and records: the ids too, beside the names' },
  { flags: '--profile <name>', description: 'Config profile to use (env AGENTCTL_PROFILE)', complete: 'profiles' },
  { flags: '--base-url <url>', description: `Service URL (env AGENTCTL_BASE_URL; default ${DEFAULT_BASE_URL})` },
  { flags: '--api-key <key>', description: 'API key (env AGENTCTL_API_KEY)' },
  { flags: '--no-color', description: 'Plain output without colour (also NO_COLOR)' },
  { flags: '-q, --quiet', description: 'Print only data: no progress, hints or notes' },
  { flags: '--debug', description: 'Trace every HTTP request and response on stderr (secrets redacted)' },
  { flags: '--non-interactive', description: 'Never prompt; fail naming the flag instead (also CI=true)' },
  { flags: '-y, --yes', description: 'Answer yes to confirmations' },
  { flags: '-v, --version', description: 'Print the version' },
  { flags: '-h, --help', description: 'Show help' },
];

/** One line per noun, for `agentctl --help`. */
export const NOUNS: Record<string, string> = {
  auth: 'Log in and see which key and profile are in use',
  config: 'Read and change profiles (base URL and key each)',
  server: 'Run the service locally (embedded PGlite, or PostgreSQL with DATABASE_URL)',
  namespaces: 'List and create namespaces',
  projects: 'List and create projects',
  agents: 'List, show and delete agents',
  branches: 'List, show and retire branches of an agent',
  versions: 'List and show versions (deploys) of an agent',
  envs: 'Manage environments: which branches an environment serves',
  secrets: 'Set, list and delete an agent’s secrets (given to it as environment variables)',
  tasks: 'Create, inspect, cancel, migrate and replay tasks',
  rollouts: 'Watch, pause, resume and abort rollouts (tasks migrate --steps starts one)',
  migrations: 'The migration history: list, show and undo migrations',
  rehearsals: 'Show the reports of rehearsed migrations (tasks migrate --rehearse, tasks replay)',
  states: 'Read and write the JSON state of a (task, agent) pair',
  keys: 'Create (wizard or flags), list, revoke and rotate API keys',
  groups: 'List and create sharing groups, and add or remove their members',
  fs: 'Filesystems: create, list, inspect, and push or pull a directory',
  schedules: 'Run agents on a timetable: cron schedules that create tasks or send events',
  completion: 'Print a shell completion script',
  init: 'Start a new agent project on the ADK',
};

/** `ls` and `rm` for `list` and `delete` of every noun, as gh, docker and kubectl users type them. */
export const VERB_ALIASES: Readonly<Record<string, string>> = { list: 'ls', delete: 'rm' };

/** Every other word a command's verb answers to: VERB_ALIASES' and its own (`keys revoke`: `rm`). */
export function aliasesOf(spec: Pick<CommandDeclaration, 'path' | 'aliases'>): string[] {
  const verb = spec.path[1];
  if (verb === undefined) return [];
  return [...(VERB_ALIASES[verb] ? [VERB_ALIASES[verb]] : []), ...(spec.aliases ?? [])];
}

/**
 * Every command, as `npm run build` collected them from `commands/**` into `manifest.ts`: the
 * declarations without the handlers, which load only when their command runs.
 */
export const registry = manifest;
