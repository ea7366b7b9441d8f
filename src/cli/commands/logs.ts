import type { Client } from '../../client/index.js';
import { readEventStream } from '../../client/sse.js';
import { boundsText, LOG_SSE_EVENT, LOG_TAIL } from '../../contract/enums.js';
import type { VersionLogLine } from '../../contract/runtime.js';
import { isIn, LIVE_VERSION_STATUSES } from '../../contract/lifecycle.js';
import { defineCommand } from '../command.js';
import type { CommandContext } from '../context.js';
import { CliError, usageError } from '../errors.js';
import { ExitCode } from '../exit-codes.js';
import { requireAgentOption, resolveBranch, resolveVersionId } from '../refs.js';
import { agentctl } from '../shell.js';
import { agent } from '../options.js';

/** `10m`, `2h`, `30s`, `1d`, or an ISO 8601 time: the instant logs start from. */
export function parseSince(value: string, now = Date.now()): string {
  const relative = /^(\d+)(s|m|h|d)$/.exec(value.trim());
  if (relative) {
    const unit = { s: 1_000, m: 60_000, h: 3_600_000, d: 86_400_000 }[relative[2] as 's' | 'm' | 'h' | 'd'];
    return new Date(now - Number(relative[1]) * unit).toISOString();
  }
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
    'One version by its ver_ id (or a git-hash prefix with --agent), or every version of an agent’s branch (default main), merged by time. On a terminal each line starts with v<n>/<replica>; --json prints JSON Lines.',
  args: [{ name: 'version', description: 'A ver_ id, or a git-hash prefix with --agent' }],
  options: [
    { ...agent, description: 'Agent as namespace/name: every version of its branch' },
    { flags: '--branch <name>', description: 'Git branch with --agent (default main)' },
    { flags: '-f, --follow', description: 'Keep printing new lines until Ctrl-C' },
    { flags: '--since <when>', description: 'Only lines since a duration ago (10m, 2h, 1d) or a time' },
    { flags: '--tail <n>', description: `The last N lines (${boundsText(LOG_TAIL)})`, integer: true, default: LOG_TAIL.default },
  ],
  examples: ['agentctl logs --agent default/my-bot -f', 'agentctl logs ver_01J9Z3 --since 10m', 'agentctl logs --agent default/my-bot --branch feature/search --json'],
  notFoundNext: 'agentctl versions list --agent <ns/name>',
  handler: async (ctx, args, options) => {
    const client = await ctx.client();
    const since = options.since ? parseSince(options.since) : undefined;
    const tail: number = options.tail ?? LOG_TAIL.default;
    const sources = await sourcesOf(ctx, client, args[0], options);
    const prefix = Boolean(ctx.io.stdout.isTTY) && !ctx.globals.json;
    const print = (source: Source, line: VersionLogLine) => {
      if (ctx.globals.json) return void ctx.io.stdout.write(JSON.stringify(line) + '\n');
      const text = line.stream === 'stderr' ? ctx.chalk.red(line.line) : line.line;
      ctx.io.stdout.write(prefix ? `${ctx.chalk.dim(`${source.label}/${line.replica}`)} ${text}\n` : `${text}\n`);
    };

    if (!options.follow) {
      const all: Array<{ source: Source; line: VersionLogLine }> = [];
      for (const source of sources) {
        const { lines } = await client.getVersionLogs({ params: { version_id: source.versionId }, query: { tail, since } });
        for (const line of lines) all.push({ source, line });
      }
      // Versions merged by capture time, each version's own order kept (the sort is stable).
      all.sort((a, b) => (a.line.time < b.line.time ? -1 : a.line.time > b.line.time ? 1 : 0));
      for (const { source, line } of sources.length > 1 ? all.slice(-tail || all.length) : all) print(source, line);
      if (all.length === 0) ctx.info(`No output yet from ${sources.map((s) => s.versionId).join(', ')}.`);
      return { exitCode: ExitCode.ok };
    }

    ctx.info(`Following ${sources.map((s) => `${s.label} (${s.versionId})`).join(', ')}; Ctrl-C to stop.`);
    const abort = new AbortController();
    const stopOnSignal = () => abort.abort();
    ctx.signal.addEventListener('abort', stopOnSignal, { once: true });
    try {
      await Promise.all(
        sources.map(async (source) => {
          const events = readEventStream(client, `/versions/${encodeURIComponent(source.versionId)}/logs`, { tail, since, follow: true }, abort.signal);
          for await (const event of events) {
            if (event.event === LOG_SSE_EVENT) print(source, JSON.parse(event.data) as VersionLogLine);
          }
        }),
      );
    } finally {
      ctx.signal.removeEventListener('abort', stopOnSignal);
    }
    return { exitCode: ctx.signal.aborted ? ExitCode.interrupted : ExitCode.ok };
  },
});

/** The versions to read: the one named, or every version of the agent's branch (oldest first). */
async function sourcesOf(ctx: CommandContext, client: Client, versionRef: string | undefined, options: Record<string, any>): Promise<Source[]> {
  if (versionRef) {
    if (options.branch) throw usageError('Give a VERSION or --agent with --branch, not both');
    const versionId = await resolveVersionId(client, versionRef, options.agent, 'VERSION');
    return [{ versionId, label: versionId.slice(-6).toLowerCase() }];
  }
  const agent = requireAgentOption(options.agent, 'agentctl logs');
  const branch = await resolveBranch(client, options.branch ?? 'main', agent, 'agentctl logs');
  const { versions } = await client.listBranchVersions({ params: { branch_id: branch.id }, query: { limit: 100 } });
  if (versions.length === 0) {
    throw new CliError(`Branch ${branch.git_branch} of ${agent} has no versions`, { exitCode: ExitCode.notFound, code: 'not_found', next: agentctl('deploy', '--agent', agent) });
  }
  // Newest first from the API; numbered from the oldest, as people count them.
  const numbered = [...versions].reverse().map((v, index) => ({ versionId: v.id, label: `v${index + 1}`, status: v.status }));
  if (!options.follow) return numbered;
  // Following: the versions that can still write, else the newest.
  const live = numbered.filter((v) => isIn(LIVE_VERSION_STATUSES, v.status));
  return live.length > 0 ? live : numbered.slice(-1);
}
