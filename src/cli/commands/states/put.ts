import type { ApiResponse } from '../../../client/index.js';
import { ApiRequestError } from '../../../client/errors.js';
import type { State } from '../../../contract/resources.js';
import { defineCommand } from '../../command.js';
import type { CommandContext } from '../../context.js';
import { CliError, usageError } from '../../errors.js';
import { ExitCode } from '../../exit-codes.js';
import { parseJsonObject, readJsonObject } from '../../json-input.js';
import { stateRecord } from '../../output/resources.js';
import { findState, ifMatch } from './shared.js';
import { agent } from '../../options.js';

/** The JSON object from --data (JSON, @file or -), --file (- is standard input) or piped standard input. */
async function readData(ctx: CommandContext, options: { data?: string; file?: string }): Promise<Record<string, unknown>> {
  if (options.data !== undefined && options.file !== undefined) throw usageError('Give --data or --file, not both');
  if (options.data !== undefined) return readJsonObject(ctx, options.data, '--data');
  // --file PATH is --data @PATH, kept for scripts that use it.
  if (options.file !== undefined) return readJsonObject(ctx, options.file === '-' ? '-' : `@${options.file}`, '--file');
  if (!ctx.io.stdin.isTTY) {
    const piped = await ctx.readStdin();
    if (piped.trim()) return parseJsonObject(piped, 'standard input');
  }
  throw usageError('No state given', 'Pass --data JSON (or @file, or - for standard input), --file PATH, or pipe the JSON object into standard input.');
}

export default defineCommand({
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
  handler: async (ctx, [id], options) => {
    const data = await readData(ctx, options);
    const target = await findState(ctx, id, options, 'agentctl states put');
    const headers = ifMatch(options.ifMatch);
    let result: ApiResponse<State>;
    let created = false;
    if (!target.state) {
      if (options.ifMatch !== undefined) {
        throw new CliError(`No state exists yet for task ${target.taskId}, so --if-match ${options.ifMatch} cannot match`, {
          exitCode: ExitCode.conflict,
          code: 'precondition_failed',
        });
      }
      try {
        result = await ctx.call('createState', { body: { task_id: target.taskId!, agent_id: target.agentId!, state: data } });
        created = true;
      } catch (error) {
        // Someone created it between our lookup and our create: write over (or into) theirs.
        if (!(error instanceof ApiRequestError && error.status === 409)) throw error;
        const again = await findState(ctx, undefined, options, 'agentctl states put');
        result = await write(ctx, again.state!, data, options.merge, headers);
      }
    } else {
      result = await write(ctx, target.state, data, options.merge, headers);
    }
    ctx.success(`${created ? 'Created' : options.merge ? 'Merged into' : 'Replaced'} state ${result.data.id} (version ${result.data.version})`);
    return { json: result.raw, view: stateRecord(result.data) };
  },
});

async function write(
  ctx: CommandContext,
  state: State,
  data: Record<string, unknown>,
  merge: boolean | undefined,
  headers: Record<string, string> | undefined,
): Promise<ApiResponse<State>> {
  return merge
    ? ctx.call('mergeState', { params: { state_id: state.id }, body: { state: data } }, { headers })
    : ctx.call('replaceState', { params: { state_id: state.id }, body: { task_id: state.task_id, agent_id: state.agent_id, state: data } }, { headers });
}
