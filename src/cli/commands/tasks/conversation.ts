// Shared by tasks send/watch/messages/events and create --watch: task references, how content
// reads for a person, and the live watch loop.
import { isTerminalTask } from '../../../contract/lifecycle.js';
import type { MessageContent as Content, Message, StreamRecord } from '../../../contract/conversation.js';
import type { Ora } from 'ora';
import type { CommandContext } from '../../context.js';
import { LiveMessages } from '../../output/live-messages.js';
import { resolveTaskId as resolveTask } from '../../refs.js';
import { ExitCode } from '../../exit-codes.js';

/** A task_ id as it is, or a task name resolved to its id (as `tasks get` takes either). */
export const resolveTaskId = async (ctx: CommandContext, ref: string): Promise<string> => resolveTask(await ctx.client(), ref);

export interface HandlerError {
  handler: string;
  message: string;
  event_id: string | null;
}

/** The `{handler_error: ...}` DataPart an agent reports when a handler threw. */
export function handlerErrorOf(content: Content): HandlerError | undefined {
  if (content.type !== 'data') return undefined;
  const value = (content.data as { handler_error?: HandlerError }).handler_error;
  return value && typeof value === 'object' && typeof value.message === 'string' ? value : undefined;
}

/** Text as it is; a tool call, its answer and reasoning in one readable line; structured data as compact JSON. */
export function contentText(content: Content): string {
  switch (content.type) {
    case 'text':
      return content.text;
    case 'reasoning':
      return `(thinking) ${content.summary}`;
    case 'tool_request':
      return `→ ${content.name}(${content.arguments}) [${content.call_id}]`;
    case 'tool_response':
      return content.error !== undefined ? `← ${content.call_id} error: ${content.error}` : `← ${content.call_id} ${JSON.stringify(content.result ?? null)}`;
    case 'data':
      return JSON.stringify(content.data);
  }
}

/** One line for a list: handler errors flagged. */
export function contentSummary(content: Content): string {
  const error = handlerErrorOf(content);
  return error ? `handler error (${error.handler}): ${error.message}` : contentText(content);
}

/** Failed connections in a row before a watch gives up with exit 6 (about 20 s with the stream's backoff); `--retry` has no limit. */
const WATCH_RECONNECTS = 8;

/** Exit code of a finished task: 0 when it completed, 1 otherwise. */
const exitCodeFor = (status: string | null | undefined) => (status === 'COMPLETED' ? ExitCode.ok : ExitCode.failure);

/** Polls the task's turn until its agent is idle; resolves with the stream position everything of the turn is at or before. */
async function idleAt(ctx: CommandContext, taskId: string, signal: AbortSignal): Promise<number | undefined> {
  const interval = Math.min(Number(ctx.env.AGENTCTL_POLL_INTERVAL_MS ?? 250), 250);
  while (!signal.aborted) {
    const { data } = await ctx.call('getTaskTurn', { params: { task_id: taskId } });
    if (!data.busy) return data.last_sequence_id;
    await ctx.sleep(interval);
  }
  return undefined;
}

/**
 * Follows the task's stream until its terminal status (or, `untilIdle`, until its agent has no turn
 * open any more and everything of it was shown: exit 0). People: agent messages on stdout as they
 * stream; events, progress, status and handler errors on stderr, and on a terminal a spinner while a
 * tool runs. `--json`: JSON Lines of records.
 */
export async function watchTask(
  ctx: CommandContext,
  taskId: string,
  afterSequenceId = 0,
  options: { retry?: boolean; untilIdle?: boolean } = {},
): Promise<number> {
  const client = await ctx.client();
  // Stream troubles are said on stderr (not only under --debug): a watch never sits silent.
  const onRetry = (failure: string, attempt: number, delayMs: number) => {
    const budget = options.retry ? 'retrying until it answers; Ctrl-C to stop' : `attempt ${attempt} of ${WATCH_RECONNECTS}; --retry keeps trying`;
    ctx.io.stderr.write(
      `${ctx.chalk.yellow('warning:')} lost the task stream from ${client.baseUrl} (${failure}); reconnecting in ${(delayMs / 1000).toFixed(1)} s (${budget})\n`,
    );
  };
  const onReconnected = () => ctx.io.stderr.write(`Reconnected to ${client.baseUrl}; the watch goes on where it left off.\n`);
  const { stdout, stderr } = ctx.io;
  const printed = new Set<string>();
  const note = (line: string) => {
    if (ctx.chatty) stderr.write(`${line}\n`);
  };
  // On a terminal, a spinner on stderr while a tool runs: from its tool_request to its tool_response.
  const tools = await ToolSpinner.create(ctx, Boolean(stdout.isTTY) && !ctx.globals.json);
  const print = (text: string) => {
    tools.pause();
    stdout.write(text);
  };
  const live = new LiveMessages(print, Boolean(stdout.isTTY));
  const showMessage = (message: Message) => {
    if (printed.has(message.id)) return;
    // Text, reasoning and tool arguments print as they stream (live); anything else shows once, when finished.
    if (live.message(message)) {
      if (message.streaming_status !== 'IN_PROGRESS') {
        printed.add(message.id);
        if (message.streaming_status === 'FAILED' || message.streaming_status === 'INTERRUPTED')
          stderr.write(
            `${ctx.chalk.yellow(`message ${message.streaming_status.toLowerCase()}`)}${message.streaming_error ? `: ${message.streaming_error}` : ''}\n`,
          );
      }
      return;
    }
    if (message.streaming_status === 'IN_PROGRESS') return;
    printed.add(message.id);
    const error = handlerErrorOf(message.content);
    if (error) {
      stderr.write(`${ctx.chalk.red('handler error')} ${error.handler}${error.event_id ? ` (event ${error.event_id})` : ''}: ${error.message}\n`);
      return;
    }
    const text = contentText(message.content);
    print(message.author === 'user' ? `${ctx.chalk.dim('you:')} ${text}\n` : `${text}\n`);
  };
  // Until idle: the turn's end is polled beside the stream; the watch ends once the stream reached it.
  const stop = new AbortController();
  let lastSeen = afterSequenceId;
  let idleTarget: number | undefined;
  // A poll that fails (the service went away) ends the watch with its error, rather than a watch that never ends.
  let pollFailure: unknown;
  if (options.untilIdle)
    idleAt(ctx, taskId, stop.signal).then(
      (target) => {
        idleTarget = target;
        if (target !== undefined && lastSeen >= target) stop.abort(new Error('idle'));
      },
      (error: unknown) => {
        pollFailure = error;
        stop.abort(error);
      },
    );
  try {
    for await (const record of client.streamTask(taskId, {
      afterSequenceId,
      signal: stop.signal,
      maxReconnects: options.retry ? Infinity : WATCH_RECONNECTS,
      onRetry,
      onReconnected,
    }) as AsyncGenerator<StreamRecord>) {
      lastSeen = record.sequence_id;
      showRecord(record);
      if (record.kind === 'task' && isTerminalTask(record.data.status)) return exitCodeFor(record.data.status);
      if (idleTarget !== undefined && lastSeen >= idleTarget) return ExitCode.ok;
    }
  } catch (error) {
    if (pollFailure !== undefined) throw pollFailure;
    if (stop.signal.aborted && idleTarget !== undefined) return ExitCode.ok;
    throw error;
  } finally {
    tools.pause();
    stop.abort(new Error('done'));
  }
  return ExitCode.failure;

  function showRecord(record: StreamRecord): void {
    if (ctx.globals.json) {
      stdout.write(`${JSON.stringify(record)}\n`);
    } else {
      switch (record.kind) {
        case 'event':
          note(ctx.chalk.dim(`→ event ${record.data.id}: ${contentText(record.data.content)}`));
          break;
        case 'message':
        case 'message_update':
          showMessage(record.data);
          break;
        case 'message_delta':
          if (!printed.has(record.data.message_id)) live.delta(record.data);
          break;
        case 'tracker': {
          const t = record.data;
          const progress = t.progress == null ? '' : ` ${Math.round(t.progress)}%`;
          note(ctx.chalk.dim(`… ${t.status}${progress}${t.status_message ? ` — ${t.status_message}` : ''}`));
          break;
        }
        case 'task':
          note(`${ctx.chalk.dim('task')} ${record.data.status}${record.data.status_reason ? ` (${record.data.status_reason})` : ''}`);
          break;
      }
      if (record.kind === 'message' || record.kind === 'message_update') tools.saw(record.data);
    }
  }
}

/**
 * The spinner of `tasks watch` on a terminal: shown while a tool call is open (its tool_request
 * finished, its tool_response not here yet), cleared, synchronously, before anything prints.
 */
class ToolSpinner {
  private readonly open = new Map<string, string>();
  private spinner: Ora | undefined;

  private constructor(
    private readonly ctx: CommandContext,
    private readonly ora: typeof import('ora').default | undefined,
  ) {}

  /** Enabled on a terminal (stdout printing in place, stderr a terminal) unless --json or --quiet. */
  static async create(ctx: CommandContext, enabled: boolean): Promise<ToolSpinner> {
    const on = enabled && Boolean(ctx.io.stderr.isTTY) && ctx.chatty;
    return new ToolSpinner(ctx, on ? (await import('ora')).default : undefined);
  }

  /** A message record: opens or closes tool calls. */
  saw(message: Message): void {
    if (!this.ora) return;
    const content = message.content;
    if (content.type === 'tool_request' && message.streaming_status !== 'IN_PROGRESS' && message.streaming_status !== 'INTERRUPTED')
      this.open.set(content.call_id, content.name);
    if (content.type === 'tool_response') this.open.delete(content.call_id);
    if (message.streaming_status === 'INTERRUPTED' || message.streaming_status === 'FAILED') this.open.clear();
    this.show();
  }

  /** Clears the spinner's line (before output); it comes back with the next record while a tool runs. */
  pause(): void {
    this.spinner?.stop();
    this.spinner = undefined;
  }

  private show(): void {
    if (this.open.size === 0 || !this.ora) {
      this.pause();
      return;
    }
    const text = `Running ${[...this.open].map(([callId, name]) => `${name} [${callId}]`).join(', ')}`;
    if (this.spinner) this.spinner.text = text;
    else this.spinner = this.ora({ text, stream: this.ctx.io.stderr as NodeJS.WritableStream, discardStdin: false, color: 'cyan' }).start();
  }
}
