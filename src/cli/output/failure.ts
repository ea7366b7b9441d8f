import type { ChalkInstance } from 'chalk';
import { ApiRequestError, NotServiceAnswerError, ResponseShapeError, UnreachableError } from '../../client/errors.js';
import { CliError, InterruptedError } from '../errors.js';
import { ExitCode, exitCodeForStatus } from '../exit-codes.js';
import type { ConflictCode } from '../../contract/common.js';

/** An error as the CLI reports it: one line, a hint, the next command; `--json` prints it as `{error}`. */
export interface Failure {
  exitCode: number;
  code: string;
  message: string;
  status?: number;
  /** The server's detail (a sentence, or the 422 items). */
  detail?: unknown;
  hint?: string;
  next?: string;
  /** The command's trace (README "Traces"), when its request reached the service. */
  traceId?: string;
}

/** What to do about each conflict the service can answer: one table, checked against the contract's list. */
const CONFLICT_HINTS: Record<ConflictCode, string> = {
  ambiguous_version: 'Name the version by its number (vN) or give more characters of the hash.',
  branch_has_tasks: 'Move its tasks first (agentctl tasks migrate), or pass --force to terminate them.',
  branch_retired: 'The branch is retired: a deploy to it brings it back.',
  branch_rule_conflict: 'A rule belongs to one environment: take it out of the other one first (agentctl envs update).',
  cursor_backwards: 'The tracker only moves forward: name a later event.',
  delta_offset_mismatch:
    'The message’s text is not what the writer expected (another writer, or a replaced content): read it (GET /messages/{id}) and append at its length.',
  delivery_failed: 'That delivery failed with its task: there is nothing left to complete.',
  delivery_not_sent: 'The delivery has not reached the agent yet: complete it after handling it.',
  environment_exists: 'Pick another name, or change that environment with agentctl envs update.',
  filesystem_in_use: 'A task or version still uses the filesystem: it stays while they do.',
  group_exists: 'Group names are unique in the org: pick another (agentctl groups list shows them).',
  history_pruned:
    'The task keeps its state and file history back to its last migration and within AGENTCTL_HISTORY_RETENTION: start from the sequence named, or later (or from its creation).',
  idempotency_key_in_use: 'The same request is still running: retry when it has finished.',
  image_expired: 'That version’s image is past its retention; pick a newer version.',
  invalid_target: 'That version failed to deploy and cannot serve: pick another (agentctl versions list).',
  invalid_transition: 'The version’s status does not allow this (agentctl versions get shows it).',
  key_revoked: 'A revoked key stays revoked: create a new one (agentctl keys create).',
  last_org_admin: 'The org keeps one usable org-admin key: create another org-admin key first.',
  lease_lost: 'The lease ran out before this renewal: the delivery will be sent again, so the handler need not finish it.',
  message_not_streamable: 'Deltas extend text, reasoning and tool_request messages only: send the whole part instead.',
  message_not_streaming: 'That message is not streaming (finished, or never started IN_PROGRESS): send a new message.',
  migration_moved_on: 'Its tasks moved on since (another migration, or they ended): agentctl migrations list shows what moved them.',
  rehearsal_too_large: 'One rehearsal replays at most 1,000 tasks: pick some with --sample N.',
  migration_too_large: 'One request moves at most 10,000 tasks: move them in groups with --task ID (up to 1,000 each).',
  namespace_exists: 'Slugs are unique in the org: pick another (agentctl namespaces list shows them).',
  no_rollback_target: 'No earlier version can serve again: deploy the commit you want instead.',
  no_routable_version: 'The branch has no ACTIVE or DEPLOYING version: deploy one first.',
  not_a_dev_version: 'Only a dev version (made by `agentctl dev`) has its deliveries pulled; others are pushed to their processes.',
  no_runtime: 'This server runs no agents (--runtime none): read their output where they run.',
  nothing_to_roll_back: 'The branch serves no version yet: deploy one first.',
  nothing_to_rehearse: 'The source version has no RUNNING or IDLE tasks: there is nothing to replay. Name tasks with --task, or rehearse another version.',
  precondition_failed: 'The record changed since you read it: read it again, then retry with the new version.',
  prod_environment: 'The production environment always exists: change its rule with agentctl envs update.',
  project_exists: 'Project names are unique in a namespace: pick another.',
  secret_exists: 'Another set of the same secret landed at the same moment: set it again.',
  rollout_finished: 'The rollout has ended: start a new one (agentctl tasks migrate --steps ...).',
  rollout_in_progress: 'One rollout per source version: pause, resume or abort the running one (agentctl rollouts list).',
  source_retired: 'That version takes no tasks any more: roll the branch back instead (agentctl rollback).',
  stale_base: 'The filesystem changed since you last synced: pull it, then push again (or push --force).',
  state_exists: 'The pair has a state already: agentctl states put replaces it (--merge merges).',
  target_not_routable: 'Tasks move only to an ACTIVE or DEPLOYING version: pick another, or --to-latest.',
  schedule_name_taken: 'Schedule names are unique per agent: pick another --name.',
  task_busy:
    'The agent rejects events while it works on a turn (double_texting: reject): send it again when it is idle, or interrupt it (agentctl tasks interrupt).',
  task_name_taken: 'Task names are unique in the org: pick another --name.',
  task_not_migratable: 'Only RUNNING or IDLE tasks move: leave out the ones that ended.',
  task_terminal: 'The task has ended (COMPLETED, FAILED, CANCELED, ...): it takes no more changes; create a new task instead.',
};

/** A filesystem whose stored archive is gone (404 `archive_missing`): only a push can bring it back. */
export const ARCHIVE_MISSING_HINT = 'Its content is lost on the server: push a copy you have to replace it (agentctl fs push DIR --fs ID --force).';

/** The hint of a conflict code (a code this CLI does not know yet gets the general one). */
const conflictHint = (code: string) => (CONFLICT_HINTS as Record<string, string>)[code] ?? 'The resource’s current state does not allow this.';

export interface FailureContext {
  /** The command that failed, for "try" lines (`agentctl tasks get`). */
  commandPath?: readonly string[];
  notFoundNext?: string;
  baseUrl?: string;
  /** The command's flag for each API field (flagsByField), to name `--limit` instead of `query.limit`. */
  flags?: ReadonlyMap<string, string>;
}

/**
 * `query.limit: Too big` as `--limit: Too big` when the command has a flag for that field, and
 * `body.branch_rules.1: Too small` as `--rule #2: Too small`; else as the API says.
 */
function validationText(item: { loc: (string | number)[]; msg: string }, flags: ReadonlyMap<string, string> = new Map()): string {
  const [where, field, ...rest] = item.loc;
  const flag = (where === 'query' || where === 'body' || where === 'path') && typeof field === 'string' ? flags.get(field) : undefined;
  if (!flag) return `${item.loc.join('.')}: ${item.msg}`;
  const inside = rest.map((part) => (typeof part === 'number' ? ` #${part + 1}` : ` ${part}`)).join('');
  return `${flag}${inside}: ${item.msg}`;
}

export function toFailure(error: unknown, context: FailureContext = {}): Failure {
  const command = context.commandPath?.length ? `agentctl ${context.commandPath.join(' ')}` : 'agentctl';
  if (error instanceof CliError) {
    return { exitCode: error.exitCode, code: error.code, message: error.message, hint: error.hint, next: error.next };
  }
  if (error instanceof InterruptedError || isAbort(error)) {
    return { exitCode: ExitCode.interrupted, code: 'interrupted', message: error instanceof InterruptedError ? error.message : 'Interrupted' };
  }
  if (error instanceof UnreachableError) {
    return {
      exitCode: ExitCode.unreachable,
      code: 'unreachable',
      message: error.message,
      hint: `Is the service running at ${error.baseUrl}? Set another URL with --base-url or AGENTCTL_BASE_URL.`,
      next: 'agentctl server start',
    };
  }
  if (error instanceof NotServiceAnswerError) {
    if (error.body === 'truncated_json') {
      return {
        exitCode: ExitCode.failure,
        code: 'truncated_response',
        status: error.status,
        message: error.message,
        hint: 'A proxy or the network cut the answer short; run the command again.',
      };
    }
    return {
      exitCode: ExitCode.unreachable,
      code: 'not_the_service',
      status: error.status,
      message: error.message,
      hint: `Is AGENTCTL_BASE_URL right? This agentctl talks to ${error.baseUrl} (set with --base-url, AGENTCTL_BASE_URL or the profile).`,
      next: 'agentctl auth status',
    };
  }
  if (error instanceof ResponseShapeError) {
    return {
      exitCode: ExitCode.failure,
      code: 'unexpected_response',
      message: error.message,
      hint: 'This agentctl and the service disagree on the API; use matching versions.',
    };
  }
  if (error instanceof ApiRequestError) {
    const base = { exitCode: exitCodeForStatus(error.status), code: error.code, status: error.status, detail: error.detail, message: error.message };
    switch (error.status) {
      case 401:
        return { ...base, hint: 'The API key was refused: it is missing, unknown, revoked or expired.', next: 'agentctl auth login' };
      case 403:
        return { ...base, hint: 'This key may see the resource but not do this; an org admin can widen its scopes.', next: 'agentctl auth status' };
      case 404:
        // The filesystem exists; its stored content does not: the usual "check the id" would mislead.
        if (error.code === 'archive_missing') return { ...base, hint: ARCHIVE_MISSING_HINT };
        return { ...base, hint: 'Check the id or name: a key only sees what its scopes and groups reach.', next: context.notFoundNext };
      case 409:
      case 412:
        return { ...base, hint: conflictHint(error.code) };
      case 400:
      case 413:
      case 415:
      case 422:
        return {
          ...base,
          message: `Invalid request: ${error.validationItems.length ? error.validationItems.map((item) => validationText(item, context.flags)).join('; ') : error.message}`,
          hint: 'Fix the values named above.',
          next: `${command} --help`,
        };
      case 429:
        return { ...base, hint: `Rate limited${error.retryAfter !== undefined ? `: retry in ${Math.ceil(error.retryAfter)} s` : ''}.` };
      default:
        return {
          ...base,
          hint: error.status >= 500 ? 'The service failed; its log has the details.' : undefined,
          next: error.status >= 500 ? 'agentctl server status' : undefined,
        };
    }
  }
  const message = error instanceof Error ? error.message : String(error);
  return { exitCode: ExitCode.failure, code: 'error', message };
}

function isAbort(error: unknown): boolean {
  const name = (error as Error)?.name;
  return name === 'AbortError' || name === 'ExitPromptError' || name === 'AbortPromptError';
}

/** The human form: `error: ...`, then `hint:` and `try:` lines. */
export function formatFailure(failure: Failure, chalk: ChalkInstance): string {
  // Answering no is a calm outcome, not an error: one plain line (the exit code still says it).
  if (failure.code === 'declined') return `${failure.message}\n`;
  const lines = [`${chalk.red('error:')} ${failure.message}${failure.status ? chalk.gray(` (${failure.status} ${failure.code})`) : ''}`];
  if (failure.hint) lines.push(`${chalk.gray('hint:')} ${failure.hint}`);
  if (failure.next) lines.push(`${chalk.gray('try:')}  ${failure.next}`);
  if (failure.traceId) lines.push(`${chalk.gray('trace:')} ${failure.traceId}`);
  return `${lines.join('\n')}\n`;
}

/** The `--json` form, on stderr: `{"error": {code, message, status, detail, hint, trace_id}}`. */
export function jsonFailure(failure: Failure): string {
  const { code, message, status, detail, hint, traceId } = failure;
  return `${JSON.stringify({ error: { code, message, status: status ?? null, detail: detail ?? null, hint: hint ?? null, trace_id: traceId ?? null } })}\n`;
}
