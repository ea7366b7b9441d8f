import type { State } from '../../../contract/resources.js';
import type { CommandContext } from '../../context.js';
import { CliError, usageError } from '../../errors.js';
import { ExitCode } from '../../exit-codes.js';
import { resolveAgent, resolveTaskId } from '../../refs.js';
import { agentctl } from '../../shell.js';

export interface StateTarget {
  /** The record when it exists. */
  state?: State;
  /** The record as the server sent it (for --json). */
  raw?: unknown;
  taskId?: string;
  agentId?: string;
}

/** A state addressed by `st_` id, or by `--task` and `--agent` (the record may not exist yet). */
export async function findState(
  ctx: CommandContext,
  id: string | undefined,
  options: { task?: string; agent?: string },
  command: string,
): Promise<StateTarget> {
  const client = await ctx.client();
  if (id) {
    if (options.task || options.agent) throw usageError('Give a state id or --task and --agent, not both');
    const { data, raw } = await ctx.call('getState', { params: { state_id: id } });
    return { state: data, raw };
  }
  if (!options.task || !options.agent)
    throw usageError('Name the state: a st_ id, or --task and --agent', undefined, `${command} --task <task_id> --agent <ns/name>`);
  const agentId = options.agent.startsWith('agt_') ? options.agent : (await resolveAgent(client, options.agent)).id;
  const taskId = await resolveTaskId(client, options.task);
  const { data, raw } = await ctx.call('listStates', { query: { task_id: taskId, agent_id: agentId } });
  return { state: data.states[0], raw: (raw as { states: unknown[] }).states[0], taskId, agentId };
}

export function noState(target: StateTarget, agentRef: string | undefined): CliError {
  return new CliError(`Task ${target.taskId} has no state for agent ${agentRef}`, {
    exitCode: ExitCode.notFound,
    code: 'not_found',
    next: agentctl('states', 'put', '--task', target.taskId, '--agent', agentRef, '--data', '{}'),
  });
}

/** `If-Match` carries the record's version as an ETag. */
export const ifMatch = (version: number | undefined) => (version === undefined ? undefined : { 'if-match': `"${version}"` });
