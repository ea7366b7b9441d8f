import type { Client } from '../../client/index.js';
import { readEventStream } from '../../client/sse.js';
import { boundsText, LOG_SSE_EVENT, LOG_TAIL } from '../../contract/enums.js';
import type { VersionLogLine } from '../../contract/runtime.js';
import { versionLabel } from '../../contract/version-ref.js';
import { parseDuration } from '../../contract/rollout-rules.js';
import { defineCommand } from '../command.js';
import type { CommandContext } from '../context.js';
import { CliError, usageError } from '../errors.js';
import { ExitCode } from '../exit-codes.js';
import { requireAgentOption, resolveBranch, resolveVersionId } from '../refs.js';
import { agentctl } from '../shell.js';
import { agent } from '../options.js';

/** `10m`, `2h`, `30s`, `1d`, or an ISO 8601 time: the instant logs start from. */
export function parseSince(value: string, now = Date.now()): string {
  const relative = parseDuration(value);
  if (relative !== undefined) return new Date(now - relative).toISOString();
  const time = Date.parse(value);
  if (Number.isNaN(time)) throw usageError(`--since ${value} is neither a duration (10m, 2h, 1d) nor a time (2026-01-31T12:00:00Z)`);
  return new Date(time).toISOString();
}

interface Source {
  versionId: string;
  /** `v3` (its place among the branch's versions) or a short id. */
  label: string;
}

export default defineCommand({
  path: ['logs'],
  summary: 'Show (or follow) what a version’s processes write',
  description:
    'One version by its ver_ id (or a git-hash prefix with --agent), or every version of an agent’s branch (default main), merged by time; -f then follows every one of them. On a terminal each line starts with v<n>/<replica>; piped, each line is time, version, replica, stream and text, tab-separated; --json prints JSON Lines.',
  args: [{ name: 'version', description: 'A ver_ id, or a git-hash prefix with --agent' }],
  options: [
    { ...agent, description: 'Agent as namespace/name: every version of its branch' },
    { flags: '--branch <name>', description: 'Git branch with --agent (default main)' },
    { flags: '-f, --follow', description: 'Keep printing new lines until Ctrl-C' },
    { flags: '--since <when>', description: 'Only lines since a duration ago (10m, 2h, 1d) or a time' },
    { flags: '--tail <n>', description: `The last N lines (${boundsText(LOG_TAIL)})`, integer: true, default: LOG_TAIL.default },
    { flags: '--task <task>', description: 'Only the lines its handlers wrote with ctx.log (task_ id or name); the task’s versions by default' },
    { flags: '--trace <trace_id>', description: 'Only the lines written in this trace (a turn); its task’s versions by default' },
  ],
  examples: [
    'agentctl logs --agent default/my-bot -f',
    'agentctl logs ver_01J9Z3 --since 10m',
    'agentctl logs --agent default/my-bot --branch feature/search --json',
    'agentctl logs --task nightly-report',
  ],
  notFoundNext: 'agentctl versions list --agent <ns/name>',
  handler: async (ctx, args, options) => {
    const client = await ctx.client();
    const since = options.since ? parseSince(options.since) : undefined;
    const tail: number = options.tail ?? LOG_TAIL.default;
    const turn = await turnFilter(ctx, client, options);
    const sources =
      !args[0] && !options.agent && turn.versionIds ? await versionSources(client, turn.versionIds) : await sourcesOf(ctx, client, args[0], options);
    const tty = Boolean(ctx.io.stdout.isTTY);
    const print = (source: Source, line: VersionLogLine) => {
      if (ctx.globals.json) return void ctx.io.stdout.write(`${JSON.stringify(line)}\n`);
      // Piped: tab-separated fields with the ISO time, as every list prints for scripts.
      if (!tty) return void ctx.io.stdout.write(`${line.time}\t${source.label}\t${line.replica}\t${line.stream}\t${line.line}\n`);
      const text = line.stream === 'stderr' ? ctx.chalk.red(line.line) : line.line;
      ctx.io.stdout.write(`${ctx.chalk.dim(`${source.label}/${line.replica}`)} ${text}\n`);
    };

    // What is stored first, every version merged by time (each version's own order kept: the sort is stable).
    const all: Array<{ source: Source; line: VersionLogLine }> = [];
    const fetched = new Map<Source, VersionLogLine[]>();
    for (const source of sources) {
      const { lines } = await client.getVersionLogs({ params: { version_id: source.versionId }, query: { tail, since, ...turn.query } });
      fetched.set(source, lines);
      for (const line of lines) all.push({ source, line });
    }
    all.sort((a, b) => (a.line.time < b.line.time ? -1 : a.line.time > b.line.time ? 1 : 0));
    for (const { source, line } of sources.length > 1 ? all.slice(-tail || all.length) : all) print(source, line);
    if (!options.follow) {
      if (all.length === 0) ctx.info(`No output yet from ${sources.map((s) => s.versionId).join(', ')}.`);
      return { exitCode: ExitCode.ok };
    }

    // Then every version's new lines as they come: each stream starts at the last stored line read
    // above, and skips the lines at that instant that were already read.
    ctx.info(`Following ${sources.map((s) => `${s.label} (${s.versionId})`).join(', ')}; Ctrl-C to stop.`);
    const abort = new AbortController();
    const stopOnSignal = () => abort.abort();
    ctx.signal.addEventListener('abort', stopOnSignal, { once: true });
    try {
      await Promise.all(
        sources.map(async (source) => {
          const read = fetched.get(source) ?? [];
          const from = read.at(-1)?.time;
          const seen = new Map<string, number>();
          for (const line of read) if (line.time === from) seen.set(lineKey(line), (seen.get(lineKey(line)) ?? 0) + 1);
          // Nothing read (none stored yet, or --tail 0): from now, or whatever came since the read.
          const query = { tail: tail === 0 ? 0 : MAX_TAIL, since: from ?? since, follow: true, ...turn.query };
          const events = readEventStream(client, `/versions/${encodeURIComponent(source.versionId)}/logs`, query, abort.signal);
          for await (const event of events) {
            if (event.event !== LOG_SSE_EVENT) continue;
            const line = JSON.parse(event.data) as VersionLogLine;
            const left = seen.get(lineKey(line));
            if (line.time === from && left) {
              seen.set(lineKey(line), left - 1);
              continue;
            }
            print(source, line);
          }
        }),
      );
    } finally {
      ctx.signal.removeEventListener('abort', stopOnSignal);
    }
    return { exitCode: ctx.signal.aborted ? ExitCode.interrupted : ExitCode.ok };
  },
});

/**
 * `--task` / `--trace`: the server's filter, and the versions to read when no version or agent is
 * named (the task's current one and the one it was created on).
 */
// biome-ignore lint/suspicious/noExplicitAny: commander's parsed options are untyped
async function turnFilter(ctx: CommandContext, client: Client, options: Record<string, any>) {
  if (options.task === undefined && options.trace === undefined) return { query: {} };
  const query: { task_id?: string; trace_id?: string } = {};
  let taskId: string | undefined;
  if (options.trace !== undefined) {
    query.trace_id = String(options.trace).trim().toLowerCase();
    if (!/^[0-9a-f]{32}$/.test(query.trace_id)) throw usageError(`--trace ${options.trace} is not a trace id: 32 hex digits`);
  }
  if (options.task !== undefined) {
    const { resolveTaskId } = await import('./tasks/conversation.js');
    taskId = query.task_id = await resolveTaskId(ctx, String(options.task));
  } else {
    taskId = (await client.getTrace({ params: { trace_id: query.trace_id! } })).task_id ?? undefined;
  }
  if (!taskId) return { query };
  const task = await client.getTask({ params: { task_id: taskId } });
  const versionIds = [...new Set([task.created_version_id, task.current_version_id].filter((id): id is string => !!id))];
  return { query, versionIds };
}

async function versionSources(client: Client, versionIds: string[]): Promise<Source[]> {
  return Promise.all(
    versionIds.map(async (versionId) => ({ versionId, label: versionLabel((await client.getVersion({ params: { version_id: versionId } })).number) })),
  );
}

/** The most stored lines one request answers (the `tail` limit). */
const MAX_TAIL = 10_000;
const lineKey = (line: VersionLogLine) => `${line.replica}\u0000${line.stream}\u0000${line.line}`;

/** The versions to read: the one named, or every version of the agent's branch (oldest first). */
// biome-ignore lint/suspicious/noExplicitAny: commander's parsed options are untyped
async function sourcesOf(_ctx: CommandContext, client: Client, versionRef: string | undefined, options: Record<string, any>): Promise<Source[]> {
  if (versionRef) {
    if (options.branch) throw usageError('Give a VERSION or --agent with --branch, not both');
    const versionId = await resolveVersionId(client, versionRef, options.agent, 'VERSION');
    const { number } = await client.getVersion({ params: { version_id: versionId } });
    return [{ versionId, label: versionLabel(number) }];
  }
  const agent = requireAgentOption(options.agent, 'agentctl logs');
  const branch = await resolveBranch(client, options.branch ?? 'main', agent, 'agentctl logs');
  const { versions } = await client.listBranchVersions({ params: { branch_id: branch.id }, query: { limit: 100 } });
  if (versions.length === 0) {
    throw new CliError(`Branch ${branch.git_branch} of ${agent} has no versions`, {
      exitCode: ExitCode.notFound,
      code: 'not_found',
      next: agentctl('deploy', '--agent', agent),
    });
  }
  // Newest first from the API; labelled by their number, as people count them. Following reads every
  // version too: a retired one may run again (a rollback) and a draining one still writes.
  return [...versions].reverse().map((v) => ({ versionId: v.id, label: versionLabel(v.number) }));
}
