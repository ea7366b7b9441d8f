import { ACP_TYPES, DEFAULT_ACP_TYPE, DEFAULT_SDK_TYPE, PRESET_IDS, SDK_TYPES } from '../contract/enums.js';
import type { CommandSpec, OptionSpec } from './command.js';
import { DEFAULT_KEY_EXPIRY } from './key-expiry.js';
import { REPORTED_VERSION_STATUSES, TASK_STATUSES, VERSION_STATUSES } from '../contract/lifecycle.js';

/** Flags every command accepts (README "The CLI"). */
export const GLOBAL_OPTIONS: readonly OptionSpec[] = [
  { flags: '--json', description: 'Print the API’s JSON response (errors as {"error": ...} on stderr); never prompts' },
  { flags: '--wide', description: 'Tables and records: the ids too, beside the names' },
  { flags: '--profile <name>', description: 'Config profile to use (env AGENTCTL_PROFILE)', complete: 'profiles' },
  { flags: '--base-url <url>', description: 'Service URL (env AGENTCTL_BASE_URL; default http://127.0.0.1:7420)' },
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
  tasks: 'Create, inspect, cancel and migrate tasks',
  states: 'Read and write the JSON state of a (task, agent) pair',
  keys: 'Create (wizard or flags), list, revoke and rotate API keys',
  groups: 'List and create sharing groups, and add or remove their members',
  fs: 'Filesystems: create, list, inspect, and push or pull a directory',
  completion: 'Print a shell completion script',
  init: 'Start a new agent project on the ADK',
};

/** `ls` and `rm` for `list` and `delete` of every noun, as gh, docker and kubectl users type them. */
export const VERB_ALIASES: Readonly<Record<string, string>> = { list: 'ls', delete: 'rm' };

const agent: OptionSpec = { flags: '-a, --agent <ns/name>', description: 'Agent as namespace/name (or an agt_ id)', complete: 'agents', field: ['agent', 'agent_id', 'agent_name', 'namespace'] };
const limit = (fallback: number, max = 1000): OptionSpec => ({ flags: '--limit <n>', description: `How many to list (1..${max})`, integer: true, default: fallback });
const page: OptionSpec = { flags: '--page <n>', description: 'Page number, from 1', integer: true, default: 1, field: 'page_number' };
const all: OptionSpec = { flags: '--all', description: 'Every page, --limit rows per request (--json keeps total)' };
const waitOptions: OptionSpec[] = [
  { flags: '--timeout <seconds>', description: 'How long to wait for ACTIVE or FAILED', integer: true, default: 300 },
  { flags: '--detach', description: 'Return at once instead of waiting' },
];

/** Every command; `load` imports its handler only when it runs, keeping start-up small. */
export const registry: readonly CommandSpec[] = [
  // ---- auth ------------------------------------------------------------------------------------
  {
    path: ['auth', 'login'],
    summary: 'Save an API key (and base URL) into a profile after checking it',
    description: 'Prompts for the key on a terminal; otherwise pipe it in with --with-token (kept out of shell history and ps), or pass --api-key.',
    options: [{ flags: '--with-token', description: 'Read the API key from standard input' }],
    examples: ['agentctl auth login', 'agentctl auth login --with-token --profile prod < key.txt', 'echo "$KEY" | agentctl auth login --with-token --base-url https://agents.example.com --profile prod'],
    load: () => import('./commands/auth/login.js'),
  },
  {
    path: ['auth', 'logout'],
    summary: 'Remove the API key from a profile',
    examples: ['agentctl auth logout', 'agentctl auth logout --profile prod'],
    load: () => import('./commands/auth/logout.js'),
  },
  {
    path: ['auth', 'status'],
    summary: 'Show the active profile, where the URL and key come from, and who the key is',
    examples: ['agentctl auth status', 'agentctl auth status --json'],
    load: () => import('./commands/auth/status.js'),
  },

  // ---- config ----------------------------------------------------------------------------------
  {
    path: ['config', 'get'],
    summary: 'Print one setting of the active profile (base_url, api_key, current_profile)',
    args: [{ name: 'key', description: 'base_url, api_key or current_profile', required: true, choices: ['base_url', 'api_key', 'current_profile'] }],
    options: [{ flags: '--reveal', description: 'Print the whole API key instead of its prefix' }],
    examples: ['agentctl config get base_url', 'agentctl config get api_key --reveal --profile prod'],
    load: () => import('./commands/config/get.js'),
  },
  {
    path: ['config', 'set'],
    summary: 'Set a setting of the active profile (creates the profile)',
    args: [
      { name: 'key', description: 'base_url or api_key', required: true, choices: ['base_url', 'api_key'] },
      { name: 'value', description: 'The new value', required: true },
    ],
    examples: ['agentctl config set base_url https://agents.example.com --profile prod', 'agentctl config set api_key "$KEY" --profile prod'],
    load: () => import('./commands/config/set.js'),
  },
  {
    path: ['config', 'list'],
    summary: 'List profiles (keys shown by prefix only)',
    examples: ['agentctl config list', 'agentctl config list --json'],
    load: () => import('./commands/config/list.js'),
  },
  {
    path: ['config', 'use'],
    summary: 'Make a profile the current one',
    args: [{ name: 'profile', description: 'Profile name', required: true, complete: 'profiles' }],
    examples: ['agentctl config use prod', 'agentctl config use local'],
    load: () => import('./commands/config/use.js'),
  },

  // ---- server ----------------------------------------------------------------------------------
  {
    path: ['server', 'start'],
    summary: 'Start the service (foreground, or --detach with a pid file and a log file)',
    description:
      'Uses embedded PGlite under the data directory, or PostgreSQL when --database-url / DATABASE_URL is set. On a fresh database the bootstrap org-admin key is saved into the server’s own profile: "local" for the default data directory, "local-<dir name>" for another (made current when there is none).',
    options: [
      { flags: '--host <host>', description: 'Interface to listen on', default: '127.0.0.1' },
      { flags: '--port <port>', description: 'Port to listen on (0 picks a free one)', integer: true, default: 7420 },
      { flags: '--data-dir <dir>', description: 'Data directory (env AGENTCTL_DATA_DIR; default under the user data dir)' },
      { flags: '--database-url <url>', description: 'PostgreSQL URL instead of embedded PGlite (env DATABASE_URL)' },
      { flags: '--detach', description: 'Run in the background; stop it with agentctl server stop' },
      { flags: '--runtime <name>', description: 'What runs deployed versions: local child processes, kubernetes, or none (env AGENTCTL_RUNTIME; default local)', choices: ['local', 'kubernetes', 'none'] },
      { flags: '--log-level <level>', description: 'Request log: one JSON line per request on stderr (readable on a terminal)', choices: ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'], default: 'info' },
      { flags: '--metrics-port <port>', description: 'Also serve GET /metrics without a key on this port (on the main port it needs an org-admin key)', integer: true },
    ],
    examples: ['agentctl server start', 'agentctl server start --detach --port 7420', 'DATABASE_URL=postgres://localhost/agents agentctl server start --host 0.0.0.0', 'agentctl server start --runtime none'],
    load: () => import('./commands/server/start.js'),
  },
  {
    path: ['server', 'stop'],
    summary: 'Stop the background service started with --detach (by its pid file)',
    options: [
      { flags: '--data-dir <dir>', description: 'Data directory of the server (env AGENTCTL_DATA_DIR)' },
      { flags: '--timeout <seconds>', description: 'How long to wait for it to exit', integer: true, default: 20 },
    ],
    examples: ['agentctl server stop', 'agentctl server stop --data-dir ./data'],
    load: () => import('./commands/server/stop.js'),
  },
  {
    path: ['server', 'status'],
    summary: 'Show the background service’s URL, engine and health',
    options: [{ flags: '--data-dir <dir>', description: 'Data directory of the server (env AGENTCTL_DATA_DIR)' }],
    examples: ['agentctl server status', 'agentctl server status --json'],
    load: () => import('./commands/server/status.js'),
  },

  // ---- namespaces, projects --------------------------------------------------------------------
  {
    path: ['namespaces', 'list'],
    summary: 'List namespaces',
    options: [limit(100), page, all],
    examples: ['agentctl namespaces list', 'agentctl namespaces list --all --json'],
    load: () => import('./commands/namespaces/list.js'),
  },
  {
    path: ['namespaces', 'create'],
    summary: 'Create a namespace (org admins)',
    args: [{ name: 'slug', description: 'Slug: lowercase letters, digits and dashes', required: true }],
    options: [{ flags: '--name <name>', description: 'Display name (default: the slug)' }],
    examples: ['agentctl namespaces create research --name "Research"'],
    load: () => import('./commands/namespaces/create.js'),
  },
  {
    path: ['projects', 'list'],
    summary: 'List projects',
    options: [{ flags: '-n, --namespace <slug>', description: 'Only this namespace' }, limit(100), page, all],
    examples: ['agentctl projects list', 'agentctl projects list --namespace research --all --json'],
    load: () => import('./commands/projects/list.js'),
  },
  {
    path: ['projects', 'create'],
    summary: 'Create a project',
    args: [{ name: 'name', description: 'Project name', required: true }],
    options: [
      { flags: '-n, --namespace <slug>', description: 'Namespace', default: 'default' },
      { flags: '--description <text>', description: 'Description' },
    ],
    examples: ['agentctl projects create docs --namespace research --description "Shared files"'],
    load: () => import('./commands/projects/create.js'),
  },

  // ---- agents ----------------------------------------------------------------------------------
  {
    path: ['agents', 'list'],
    summary: 'List agents',
    options: [{ flags: '-n, --namespace <slug>', description: 'Only this namespace' }, limit(100), page, all],
    examples: ['agentctl agents list', 'agentctl agents list --namespace default --json'],
    notFoundNext: 'agentctl namespaces list',
    load: () => import('./commands/agents/list.js'),
  },
  {
    path: ['agents', 'get'],
    summary: 'Show an agent',
    args: [{ name: 'agent', description: 'namespace/name or an agt_ id', required: true, complete: 'agents' }],
    examples: ['agentctl agents get default/bot', 'agentctl agents get agt_01J... --json'],
    notFoundNext: 'agentctl agents list',
    load: () => import('./commands/agents/get.js'),
  },
  {
    path: ['agents', 'delete'],
    summary: 'Delete an agent (asks first; --yes to skip)',
    args: [{ name: 'agent', description: 'namespace/name or an agt_ id', required: true, complete: 'agents' }],
    examples: ['agentctl agents delete default/old-bot', 'agentctl agents delete default/old-bot --yes --json'],
    notFoundNext: 'agentctl agents list',
    load: () => import('./commands/agents/delete.js'),
  },

  // ---- deploy, rollback ------------------------------------------------------------------------
  {
    path: ['deploy'],
    summary: 'Deploy the current git commit as a new version and wait until it is ACTIVE or FAILED',
    description: 'Reads the commit hash, branch, subject, author and dirty state from git in the current directory, and defaults (agent, acp_type, replicas, description, are_tasks_sticky) from agentctl.json; flags override them.',
    options: [
      { ...agent, description: 'Agent as namespace/name (created on first deploy)' },
      { flags: '--image <url>', description: 'Container image of this version (without it: the commit’s tree is uploaded and run from source)', field: 'image_url' },
      { flags: '--branch <name>', description: 'Git branch to deploy as (default: the checked-out branch)' },
      { flags: '--replicas <n>', description: 'Replicas, 1..10', integer: true },
      { flags: '--sticky', description: 'Keep running tasks on their current version', field: 'are_tasks_sticky' },
      { flags: '--no-sticky', description: 'Move running tasks to the new version (the default)', field: 'are_tasks_sticky' },
      { flags: '--sdk-type <type>', description: 'Agent SDK kind', choices: SDK_TYPES, default: DEFAULT_SDK_TYPE },
      { flags: '--acp-type <type>', description: `Client-protocol server type (default: agentctl.json, else ${DEFAULT_ACP_TYPE})`, choices: ACP_TYPES },
      { flags: '--description <text>', description: 'Agent description (first deploy)' },
      { flags: '--allow-dirty', description: 'Deploy even with uncommitted changes (without --image: uploads the work tree as it is)' },
      ...waitOptions,
    ],
    examples: [
      'agentctl deploy --agent default/bot --image registry.local/bot:1.4.0',
      'agentctl deploy  # from agentctl.json, uploading the commit’s tree as the source',
      'agentctl deploy --agent default/bot --image registry.local/bot:pr-12 --branch feature/search --sticky --detach --json',
    ],
    notFoundNext: 'agentctl namespaces list',
    load: () => import('./commands/deploy.js'),
  },
  {
    path: ['rollback'],
    summary: 'Roll a branch back to an earlier version (asks first; --yes to skip)',
    description: 'Without --to, the newest earlier version whose image has not expired. State records and API keys are not rolled back.',
    options: [
      { ...agent, description: 'Agent as namespace/name' },
      { flags: '--branch <name>', description: 'Git branch (or a br_ id)' },
      { flags: '--to <ref>', description: 'Target version: vN, a git-hash prefix (4+ characters) or a ver_ id', field: 'target_version_id' },
      ...waitOptions,
    ],
    examples: ['agentctl rollback --agent default/bot --branch main', 'agentctl rollback --agent default/bot --branch main --to 3f2a9c1 --yes --json'],
    notFoundNext: 'agentctl branches list --agent <ns/name>',
    load: () => import('./commands/rollback.js'),
  },
  {
    path: ['logs'],
    summary: 'Show (or follow) what a version’s processes write',
    description:
      'One version by its ver_ id (or a git-hash prefix with --agent), or every version of an agent’s branch (default main), merged by time. On a terminal each line starts with v<n>/<replica>; --json prints JSON Lines.',
    args: [{ name: 'version', description: 'A ver_ id, or a git-hash prefix with --agent' }],
    options: [
      { ...agent, description: 'Agent as namespace/name: every version of its branch' },
      { flags: '--branch <name>', description: 'Git branch with --agent (default main)' },
      { flags: '-f, --follow', description: 'Keep printing new lines until Ctrl-C' },
      { flags: '--since <when>', description: 'Only lines since a duration ago (10m, 2h, 1d) or a time' },
      { flags: '--tail <n>', description: 'The last N lines (0..10000)', integer: true, default: 100 },
    ],
    examples: ['agentctl logs --agent default/my-bot -f', 'agentctl logs ver_01J9Z3 --since 10m', 'agentctl logs --agent default/my-bot --branch feature/search --json'],
    notFoundNext: 'agentctl versions list --agent <ns/name>',
    load: () => import('./commands/logs.js'),
  },

  // ---- branches, versions ----------------------------------------------------------------------
  {
    path: ['branches', 'list'],
    summary: 'List branches of an agent',
    options: [agent, { flags: '--include-retired', description: 'Include retired branches' }, { flags: '--env <name>', description: 'Only branches that this environment serves' }],
    examples: ['agentctl branches list --agent default/bot', 'agentctl branches list --agent default/bot --env preview --json'],
    notFoundNext: 'agentctl agents list',
    load: () => import('./commands/branches/list.js'),
  },
  {
    path: ['branches', 'get'],
    summary: 'Show a branch and its current version',
    args: [{ name: 'branch', description: 'br_ id, or a git branch name with --agent', required: true }],
    options: [agent],
    examples: ['agentctl branches get main --agent default/bot', 'agentctl branches get br_01J... --json'],
    notFoundNext: 'agentctl branches list --agent <ns/name>',
    load: () => import('./commands/branches/get.js'),
  },
  {
    path: ['branches', 'retire'],
    summary: 'Retire a branch: its versions become RETIRED (asks first; --yes to skip)',
    args: [{ name: 'branch', description: 'br_ id, or a git branch name with --agent', required: true }],
    options: [agent, { flags: '--reason <text>', description: 'Why (recorded on the branch)' }, { flags: '--force', description: 'Terminate its running tasks instead of refusing' }],
    examples: ['agentctl branches retire feature/old --agent default/bot --reason "merged"', 'agentctl branches retire br_01J... --reason merged --force --yes'],
    notFoundNext: 'agentctl branches list --agent <ns/name>',
    load: () => import('./commands/branches/retire.js'),
  },
  {
    path: ['versions', 'list'],
    summary: 'List versions of an agent, newest first',
    options: [agent, { flags: '--branch <name>', description: 'Only this git branch (or a br_ id)' }, { flags: '--status <status>', description: 'Only this status', choices: VERSION_STATUSES }, limit(20, 100)],
    examples: ['agentctl versions list --agent default/bot', 'agentctl versions list --agent default/bot --branch main --status ACTIVE --json'],
    notFoundNext: 'agentctl agents list',
    load: () => import('./commands/versions/list.js'),
  },
  {
    path: ['versions', 'get'],
    summary: 'Show a version (and with --events its lifecycle events)',
    args: [{ name: 'version', description: 'vN or a git-hash prefix (4+ characters) of the --agent, or a ver_ id', required: true }],
    options: [agent, { flags: '--events', description: 'List its lifecycle events instead' }],
    examples: ['agentctl versions get v3 --agent default/bot', 'agentctl versions get 3f2a9c1 --agent default/bot --events', 'agentctl versions get ver_01J...'],
    notFoundNext: 'agentctl versions list --agent <ns/name>',
    load: () => import('./commands/versions/get.js'),
  },

  {
    path: ['versions', 'register'],
    summary: 'Report a version ready, unhealthy or failed, as its runtime does',
    description: 'What an agent container reports when it starts (POST /versions/register). Use it with a runtime that has no driver here, or by hand: a DEPLOYING version becomes ACTIVE and the branch\'s previous version hands over.',
    args: [{ name: 'version', description: 'vN or a git-hash prefix (4+ characters) of the --agent, or a ver_ id', required: true }],
    options: [
      agent,
      { flags: '--status <status>', description: 'What to report', choices: REPORTED_VERSION_STATUSES, default: 'ACTIVE' },
      { flags: '--reason <reason>', description: 'With --status FAILED: image_pull_failed, crash_loop, scheduling_failed, ...', field: 'failure_reason' },
    ],
    examples: ['agentctl versions register ver_01J...', 'agentctl versions register 3f2a9c1 --agent default/bot --status FAILED --reason crash_loop'],
    notFoundNext: 'agentctl versions list --agent <ns/name>',
    load: () => import('./commands/versions/register.js'),
  },
  {
    path: ['versions', 'credentials'],
    summary: 'Print what an agent process started by hand needs: a one-time registration token and the signing secret',
    description: 'Shell-sourceable AGENTCTL_* lines on stdout (version and branch ids, a fresh one-time registration token, the version\'s signing secret, the base URL), for an agent run without a runtime driver. Needs admin on the agent. Like `keys create`, the one place these secrets are printed.',
    args: [{ name: 'version', description: 'ver_ id, or a git-hash prefix with --agent', required: true }],
    options: [agent],
    examples: ['eval "$(agentctl versions credentials ver_01J...)" && node src/index.ts', 'agentctl versions credentials 3f2a9c1 --agent default/bot > .env.agent'],
    notFoundNext: 'agentctl versions list --agent <ns/name>',
    load: () => import('./commands/versions/credentials.js'),
  },

  // ---- environments ----------------------------------------------------------------------------
  {
    path: ['envs', 'list'],
    summary: 'List environments of an agent',
    options: [agent],
    examples: ['agentctl envs list --agent default/bot'],
    notFoundNext: 'agentctl agents list',
    load: () => import('./commands/envs/list.js'),
  },
  {
    path: ['envs', 'get'],
    summary: 'Show an environment',
    args: [{ name: 'name', description: 'Environment name', required: true }],
    options: [agent],
    examples: ['agentctl envs get production --agent default/bot --json'],
    notFoundNext: 'agentctl envs list --agent <ns/name>',
    load: () => import('./commands/envs/get.js'),
  },
  {
    path: ['envs', 'create'],
    summary: 'Create an environment with branch rules',
    args: [{ name: 'name', description: 'Environment name', required: true }],
    options: [agent, { flags: '--rule <rule>', description: 'Branch rule: exact name, prefix wildcard feature/*, or *; repeat for more', repeatable: true, field: 'branch_rules' }, { flags: '--description <text>', description: 'Description' }],
    examples: ['agentctl envs create staging --agent default/bot --rule staging --rule "release/*"'],
    notFoundNext: 'agentctl agents list',
    load: () => import('./commands/envs/create.js'),
  },
  {
    path: ['envs', 'update'],
    summary: 'Change an environment’s rules or description',
    args: [{ name: 'name', description: 'Environment name', required: true }],
    options: [agent, { flags: '--rule <rule>', description: 'Replace the branch rules; repeat for more', repeatable: true, field: 'branch_rules' }, { flags: '--description <text>', description: 'New description' }],
    examples: ['agentctl envs update staging --agent default/bot --rule "release/*"'],
    notFoundNext: 'agentctl envs list --agent <ns/name>',
    load: () => import('./commands/envs/update.js'),
  },
  {
    path: ['envs', 'delete'],
    summary: 'Delete an environment (asks first; --yes to skip)',
    args: [{ name: 'name', description: 'Environment name', required: true }],
    options: [agent],
    examples: ['agentctl envs delete staging --agent default/bot --yes'],
    notFoundNext: 'agentctl envs list --agent <ns/name>',
    load: () => import('./commands/envs/delete.js'),
  },
  {
    path: ['envs', 'resolve'],
    summary: 'Show which environment a git branch falls in',
    options: [agent, { flags: '--branch <name>', description: 'Git branch name' }],
    examples: ['agentctl envs resolve --agent default/bot --branch feature/search'],
    notFoundNext: 'agentctl agents list',
    load: () => import('./commands/envs/resolve.js'),
  },

  // ---- tasks -----------------------------------------------------------------------------------
  {
    path: ['tasks', 'list'],
    summary: 'List tasks',
    options: [
      agent,
      { flags: '--branch <name>', description: 'Only this git branch (with --agent) or br_ id', field: ['branch', 'branch_id'] },
      { flags: '--on-version <ref>', description: 'Only tasks currently on this version (vN or git-hash prefix of the --agent, or a ver_ id)', field: 'version_id' },
      { flags: '--status <status>', description: 'Only this status', choices: TASK_STATUSES },
      limit(100),
      page,
      all,
    ],
    examples: ['agentctl tasks list --agent default/bot --status RUNNING', 'agentctl tasks list --agent default/bot --all --json', 'agentctl tasks list --on-version ver_01J... --json'],
    load: () => import('./commands/tasks/list.js'),
  },
  {
    path: ['tasks', 'get'],
    summary: 'Show a task (by task_ id or by name)',
    args: [{ name: 'task', description: 'task_ id or task name', required: true }],
    examples: ['agentctl tasks get task_01J...', 'agentctl tasks get nightly-report --json'],
    notFoundNext: 'agentctl tasks list',
    load: () => import('./commands/tasks/get.js'),
  },
  {
    path: ['tasks', 'create'],
    summary: 'Create a task on an agent (it starts RUNNING)',
    options: [
      agent,
      { flags: '--branch <name>', description: 'Git branch (default: the one the production environment names)' },
      { flags: '--name <name>', description: 'Unique task name' },
      { flags: '--params <json>', description: 'Task parameters: a JSON object, @file.json, or - for standard input' },
      { flags: '--project <id>', description: 'Use the filesystem of this project (prj_ id)', field: 'project_id' },
      { flags: '--watch', description: 'Then follow the task as `tasks watch` does (exit 0 when it completes)' },
    ],
    examples: ['agentctl tasks create --agent default/bot', 'agentctl tasks create --agent default/bot --name report-42 --params \'{"topic":"sales"}\' --json'],
    notFoundNext: 'agentctl agents list',
    load: () => import('./commands/tasks/create.js'),
  },
  {
    path: ['tasks', 'cancel'],
    summary: 'Cancel a task',
    args: [{ name: 'task', description: 'task_ id or task name', required: true }],
    examples: ['agentctl tasks cancel task_01J...', 'agentctl tasks cancel nightly-report --json'],
    notFoundNext: 'agentctl tasks list',
    load: () => import('./commands/tasks/cancel.js'),
  },
  {
    path: ['tasks', 'delete'],
    summary: 'Delete a task (soft; asks first; --yes to skip)',
    args: [{ name: 'task', description: 'task_ id or task name', required: true }],
    examples: ['agentctl tasks delete task_01J... --yes'],
    notFoundNext: 'agentctl tasks list',
    load: () => import('./commands/tasks/delete.js'),
  },
  {
    path: ['tasks', 'migrate'],
    summary: 'Move tasks between versions of one branch (shows the plan and asks on a terminal)',
    description:
      'Source: --from REF (every RUNNING task on that version) or --task TASK (a task_ id or name; repeat). Target: --to REF or --to-latest. A REF is vN or a unique git-hash prefix (4+ characters) of the --agent (default: agentctl.json), or a ver_ id. --yes or --json applies without asking.',
    options: [
      { flags: '--from <ref>', description: 'Move every RUNNING task of this version', field: 'from_version_id' },
      { flags: '--task <task>', description: 'Move this task (task_ id or name); repeat for more', repeatable: true, field: 'task_ids' },
      { flags: '--to <ref>', description: 'Target version', field: 'to_version_id' },
      { flags: '--to-latest', description: 'Target the branch’s newest ACTIVE or DEPLOYING version' },
      { ...agent, description: 'Agent (namespace/name) for vN and git-hash references' },
      { flags: '--dry-run', description: 'Only show what would move' },
    ],
    examples: [
      'agentctl tasks migrate --from v1 --to-latest --agent default/bot',
      'agentctl tasks migrate --from ver_01J... --to-latest',
      'agentctl tasks migrate --agent default/bot --from 3f2a9c1 --to 9b8e7d6 --yes',
      'agentctl tasks migrate --task task_01J... --task task_01K... --to ver_01J... --json',
    ],
    notFoundNext: 'agentctl versions list --agent <ns/name>',
    load: () => import('./commands/tasks/migrate.js'),
  },
  {
    path: ['tasks', 'send'],
    summary: 'Send an event to a task: TEXT, or structured data with --data',
    args: [
      { name: 'task', description: 'task_ id or task name', required: true },
      { name: 'text', description: 'The event text (or use --data)' },
    ],
    options: [{ flags: '--data <json>', description: 'Send a DataPart: a JSON object, @file.json, or - for standard input', field: 'content' }],
    examples: ['agentctl tasks send task_01J... "hello"', 'agentctl tasks send nightly-report --data \'{"action":"approve"}\' --json'],
    notFoundNext: 'agentctl tasks list',
    load: () => import('./commands/tasks/send.js'),
  },
  {
    path: ['tasks', 'watch'],
    summary: 'Follow a task live: messages on stdout, events, progress and status on stderr',
    description:
      'Ends when the task does: exit 0 when it COMPLETED, 1 when it failed, was canceled or terminated; Ctrl-C exits 130. --json prints the stream records as JSON Lines. A dropped connection resumes where it left off.',
    args: [{ name: 'task', description: 'task_ id or task name', required: true }],
    options: [{ flags: '--after <sequence>', description: 'Start after this sequence_id (default: from the beginning)', integer: true }],
    examples: ['agentctl tasks watch task_01J...', 'agentctl tasks watch nightly-report --json | jq -c .kind'],
    notFoundNext: 'agentctl tasks list',
    load: () => import('./commands/tasks/watch.js'),
  },
  {
    path: ['tasks', 'messages'],
    summary: 'List a task’s messages in order (handler errors flagged)',
    args: [{ name: 'task', description: 'task_ id or task name', required: true }],
    options: [
      { flags: '--after <sequence>', description: 'Only messages after this sequence_id', integer: true, field: 'after_sequence_id' },
      { flags: '--limit <n>', description: 'At most this many (1-500, default 50)', integer: true },
    ],
    examples: ['agentctl tasks messages task_01J...', 'agentctl tasks messages nightly-report --after 40 --json'],
    notFoundNext: 'agentctl tasks list',
    load: () => import('./commands/tasks/messages.js'),
  },
  {
    path: ['tasks', 'events'],
    summary: 'List the events sent to a task, in order',
    args: [{ name: 'task', description: 'task_ id or task name', required: true }],
    options: [
      { flags: '--after <sequence>', description: 'Only events after this sequence_id', integer: true, field: 'after_sequence_id' },
      { flags: '--limit <n>', description: 'At most this many (1-500, default 100)', integer: true },
    ],
    examples: ['agentctl tasks events task_01J...', 'agentctl tasks events nightly-report --json'],
    notFoundNext: 'agentctl tasks list',
    load: () => import('./commands/tasks/events.js'),
  },

  // ---- states ----------------------------------------------------------------------------------
  {
    path: ['states', 'get'],
    summary: 'Show a state record (by st_ id, or by --task and --agent)',
    args: [{ name: 'state', description: 'st_ id (or use --task and --agent)' }],
    options: [{ flags: '--task <task>', description: 'Task: task_ id or task name', field: 'task_id' }, { ...agent, description: 'Agent (namespace/name or agt_ id)' }],
    examples: ['agentctl states get st_01J...', 'agentctl states get --task task_01J... --agent default/bot --json'],
    notFoundNext: 'agentctl states list --task <task_id>',
    load: () => import('./commands/states/get.js'),
  },
  {
    path: ['states', 'put'],
    summary: 'Write a state record: replaces by default, --merge merges; creates it when the pair has none',
    description: 'The JSON object comes from --data (JSON, @file.json, or - for standard input), --file, or piped standard input.',
    args: [{ name: 'state', description: 'st_ id (or use --task and --agent)' }],
    options: [
      { flags: '--task <task>', description: 'Task: task_ id or task name', field: 'task_id' },
      { ...agent, description: 'Agent (namespace/name or agt_ id)' },
      { flags: '--data <json>', description: 'The state: a JSON object, @file.json, or - for standard input', field: 'state' },
      { flags: '--file <path>', description: 'Read the JSON object from a file (- for standard input)' },
      { flags: '--merge', description: 'Merge top-level keys (null deletes a key) instead of replacing' },
      { flags: '--if-match <version>', description: 'Only if the record is still at this version (else exit 5)', integer: true },
    ],
    examples: [
      'agentctl states put --task task_01J... --agent default/bot --data \'{"step":2}\'',
      'echo \'{"done":true}\' | agentctl states put st_01J... --merge --if-match 3',
    ],
    notFoundNext: 'agentctl states list --task <task_id>',
    load: () => import('./commands/states/put.js'),
  },
  {
    path: ['states', 'list'],
    summary: 'List state records of a task and/or an agent',
    options: [{ flags: '--task <task>', description: 'Task: task_ id or task name', field: 'task_id' }, { ...agent, description: 'Agent (namespace/name or agt_ id)' }],
    examples: ['agentctl states list --task task_01J...', 'agentctl states list --agent default/bot --json'],
    load: () => import('./commands/states/list.js'),
  },
  {
    path: ['states', 'delete'],
    summary: 'Delete a state record (asks first; --yes to skip)',
    args: [{ name: 'state', description: 'st_ id (or use --task and --agent)' }],
    options: [{ flags: '--task <task>', description: 'Task: task_ id or task name', field: 'task_id' }, { ...agent, description: 'Agent (namespace/name or agt_ id)' }, { flags: '--if-match <version>', description: 'Only if still at this version', integer: true }],
    examples: ['agentctl states delete st_01J... --yes', 'agentctl states delete --task task_01J... --agent default/bot --yes'],
    notFoundNext: 'agentctl states list --task <task_id>',
    load: () => import('./commands/states/delete.js'),
  },

  // ---- keys, groups ----------------------------------------------------------------------------
  {
    path: ['keys', 'create'],
    summary: 'Create an API key: a four-step wizard on a terminal, or flags',
    description:
      'Steps: preset, scopes, sharing groups, review. Every step has a flag, so CI never prompts. --scope is type:id:role (type namespace, agent, project or org; an agent may be namespace/name, a namespace its slug); with --preset, type:id takes the preset’s role for that type. The secret is printed once, on stdout.',
    options: [
      { flags: '--preset <preset>', description: 'Scope preset', choices: PRESET_IDS },
      { flags: '--scope <type:id[:role]>', description: 'A scope; repeat for more', repeatable: true, field: 'scopes' },
      { flags: '--group <id>', description: 'Sharing group (grp_ id or name); repeat for more', repeatable: true, field: 'sharing_group_ids' },
      { flags: '--name <name>', description: 'Key name' },
      { flags: '--description <text>', description: 'Description' },
      { flags: '--expires <when>', description: `Lifetime (90d, 12h, 2w, 1y), an ISO date, or never (default ${DEFAULT_KEY_EXPIRY}, as in the wizard)`, field: 'expires_at' },
    ],
    examples: [
      'agentctl keys create',
      'agentctl keys create --preset deploy --scope namespace:default --scope agent:default/bot --name ci-deploy --expires 90d',
      'agentctl keys create --name reader --scope agent:agt_01J...:viewer --group grp_01J... --json',
    ],
    load: () => import('./commands/keys/create.js'),
  },
  {
    path: ['keys', 'list'],
    summary: 'List API keys (prefixes only)',
    options: [{ flags: '--include-revoked', description: 'Include revoked keys' }],
    examples: ['agentctl keys list', 'agentctl keys list --include-revoked --json'],
    load: () => import('./commands/keys/list.js'),
  },
  {
    path: ['keys', 'get'],
    summary: 'Show an API key',
    args: [{ name: 'key', description: 'key_ id or key name (a name several keys share is refused)', required: true }],
    examples: ['agentctl keys get key_01J...', 'agentctl keys get ci-deploy --json'],
    notFoundNext: 'agentctl keys list',
    load: () => import('./commands/keys/get.js'),
  },
  {
    path: ['keys', 'revoke'],
    summary: 'Revoke an API key at once (asks first; --yes to skip)',
    args: [{ name: 'key', description: 'key_ id or key name (a name several keys share is refused)', required: true }],
    examples: ['agentctl keys revoke key_01J... --yes', 'agentctl keys revoke ci-deploy --yes'],
    notFoundNext: 'agentctl keys list',
    load: () => import('./commands/keys/revoke.js'),
  },
  {
    path: ['keys', 'rotate'],
    summary: 'Issue a new secret for a key; the old one stops working (asks first; --yes to skip)',
    args: [{ name: 'key', description: 'key_ id or key name (a name several keys share is refused)', required: true }],
    examples: ['agentctl keys rotate key_01J... --yes'],
    notFoundNext: 'agentctl keys list',
    load: () => import('./commands/keys/rotate.js'),
  },
  {
    path: ['groups', 'list'],
    summary: 'List sharing groups',
    options: [limit(100), page, all],
    examples: ['agentctl groups list', 'agentctl groups list --all --json'],
    load: () => import('./commands/groups/list.js'),
  },
  {
    path: ['groups', 'create'],
    summary: 'Create a sharing group (org admins)',
    args: [{ name: 'name', description: 'Group name', required: true }],
    options: [{ flags: '--description <text>', description: 'Description' }],
    examples: ['agentctl groups create platform --description "Platform team"'],
    load: () => import('./commands/groups/create.js'),
  },
  {
    path: ['groups', 'add-member'],
    summary: 'Add an API key to a sharing group (org admins): it shares the group’s access',
    args: [
      { name: 'group', description: 'grp_ id or group name', required: true },
      { name: 'key', description: 'key_ id or key name', required: true },
    ],
    examples: ['agentctl groups add-member platform ci-deploy', 'agentctl groups add-member grp_01J... key_01J... --json'],
    notFoundNext: 'agentctl groups list',
    load: () => import('./commands/groups/add-member.js'),
  },
  {
    path: ['groups', 'remove-member'],
    summary: 'Remove an API key from a sharing group (asks first; --yes to skip)',
    args: [
      { name: 'group', description: 'grp_ id or group name', required: true },
      { name: 'key', description: 'key_ id or key name', required: true },
    ],
    examples: ['agentctl groups remove-member platform ci-deploy --yes', 'agentctl groups remove-member grp_01J... key_01J... --yes --json'],
    notFoundNext: 'agentctl groups list',
    load: () => import('./commands/groups/remove-member.js'),
  },

  // ---- filesystems -----------------------------------------------------------------------------
  {
    path: ['fs', 'create'],
    summary: 'Create a filesystem in a project, or bare in a namespace (default: the default namespace)',
    options: [
      { flags: '--project <id>', description: 'Project (prj_ id) the filesystem belongs to', field: 'project_id' },
      { flags: '-n, --namespace <slug>', description: 'Namespace of a filesystem outside any project' },
    ],
    examples: ['agentctl fs create --project prj_01J...', 'agentctl fs create --namespace default --json'],
    load: () => import('./commands/fs/create.js'),
  },
  {
    path: ['fs', 'list'],
    summary: 'List the filesystems of a project, or the bare ones of a namespace',
    options: [
      { flags: '--project <id>', description: 'Project (prj_ id)', field: 'project_id' },
      { flags: '-n, --namespace <slug>', description: 'Namespace (default: default)' },
      limit(100),
      page,
      all,
    ],
    examples: ['agentctl fs list --project prj_01J...', 'agentctl fs list --namespace default --json'],
    load: () => import('./commands/fs/list.js'),
  },
  {
    path: ['fs', 'get'],
    summary: 'Show a filesystem: checksum, file count, size',
    args: [{ name: 'filesystem', description: 'fs_ id', required: true }],
    examples: ['agentctl fs get fs_01J...', 'agentctl fs get fs_01J... --json'],
    load: () => import('./commands/fs/get.js'),
  },
  {
    path: ['fs', 'files'],
    summary: 'List every file of a filesystem with its mode and size',
    args: [{ name: 'filesystem', description: 'fs_ id', required: true }],
    examples: ['agentctl fs files fs_01J...', 'agentctl fs files fs_01J... --json'],
    load: () => import('./commands/fs/files.js'),
  },
  {
    path: ['fs', 'push'],
    summary: 'Upload a directory into a filesystem if it changed; refused (exit 5) when the filesystem changed since the last sync',
    description: 'Leaves out .git/, node_modules/ and what .agentctlignore names. Only an upload based on the filesystem’s current content is accepted.',
    args: [{ name: 'dir', description: 'Directory to upload', required: true }],
    options: [
      { flags: '--fs <id>', description: 'Filesystem (fs_ id)' },
      { flags: '--force', description: 'Replace the remote content even if it changed since the last sync' },
    ],
    examples: ['agentctl fs push ./workspace --fs fs_01J...', 'agentctl fs push . --fs fs_01J... --json'],
    load: () => import('./commands/fs/push.js'),
  },
  {
    path: ['fs', 'pull'],
    summary: 'Make a directory equal to a filesystem (created if missing; files the filesystem lacks are removed)',
    args: [{ name: 'dir', description: 'Directory to write', required: true }],
    options: [{ flags: '--fs <id>', description: 'Filesystem (fs_ id)' }],
    examples: ['agentctl fs pull ./workspace --fs fs_01J...', 'agentctl fs pull ./workspace --fs fs_01J... --json'],
    load: () => import('./commands/fs/pull.js'),
  },

  // ---- completion ------------------------------------------------------------------------------
  {
    path: ['completion'],
    summary: 'Print the completion script for bash, zsh or fish',
    args: [{ name: 'shell', description: 'bash, zsh or fish', required: true, choices: ['bash', 'zsh', 'fish'] }],
    examples: ['agentctl completion bash > /etc/bash_completion.d/agentctl', 'agentctl completion zsh > "${fpath[1]}/_agentctl"', 'agentctl completion fish > ~/.config/fish/completions/agentctl.fish'],
    load: () => import('./commands/completion.js'),
  },

  // ---- init ------------------------------------------------------------------------------------
  {
    path: ['init'],
    summary: 'Write a new agent project (package.json, tsconfig, agentctl.json, src/index.ts on the ADK, README) and commit it',
    description: 'Refuses a non-empty directory unless --force. node_modules/agentctl links this agentctl (git-ignored), so the project needs no registry.',
    args: [{ name: 'dir', description: 'Directory to create (default: the current one)' }],
    options: [
      { ...agent, description: 'Agent as namespace/name (default: default/<directory name>)', complete: undefined },
      { flags: '--acp-type <type>', description: 'async (events; default) or sync (messages answered inline)', choices: ACP_TYPES, default: 'async' },
      { flags: '--force', description: 'Write into a non-empty directory (same-named files are replaced)' },
      { flags: '--no-git', description: 'Do not create a git repository and first commit' },
    ],
    examples: ['agentctl init my-bot', 'agentctl init . --agent team/support-bot --force', 'agentctl init answers --acp-type sync'],
    load: () => import('./commands/init.js'),
  },
];
