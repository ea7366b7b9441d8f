/**
 * Rehearsals from the CLI (`tasks migrate --rehearse`, `tasks replay`): start one, follow it until
 * it completes, and print the report: a table per task, the differences event by event, and one
 * plain sentence on whether it found regressions (exit 1 when it did, README "Versions and migration").
 */
import type { Rehearsal, RehearsalTask, RehearsedEvent } from '../contract/rehearsals.js';
import type { CreateRehearsalRequest } from '../contract/rehearsals.js';
import { plural } from '../contract/plural.js';
import type { MessageContent } from '../contract/conversation.js';
import { versionLabel } from '../contract/version-ref.js';
import type { Outcome } from './command.js';
import type { CommandContext } from './context.js';
import { ExitCode } from './exit-codes.js';
import { InterruptedError } from './errors.js';
import { text } from './output/view.js';
import { agentctl } from './shell.js';

/** How many events with differences the terminal report shows per task (all of them with --json). */
const EVENTS_SHOWN = 10;

/** Starts the rehearsal and polls it until it completes, with its progress on stderr. */
export async function rehearse(ctx: CommandContext, body: Partial<CreateRehearsalRequest>): Promise<{ data: Rehearsal; raw: unknown }> {
  const started = await ctx.call('createRehearsal', { body: body as CreateRehearsalRequest });
  const id = started.data.id;
  const interval = Number(ctx.env.AGENTCTL_POLL_INTERVAL_MS ?? 1000);
  const spinner = await ctx.spinner(`Rehearsing ${plural(started.data.totals.tasks, 'task')} (${id})`);
  try {
    let current = started;
    while (current.data.status !== 'completed') {
      await ctx.sleep(interval);
      current = await ctx.call('getRehearsal', { params: { rehearsal_id: id } });
      const t = current.data.totals;
      spinner.update(`Rehearsing: ${t.events_replayed} of ${plural(t.events_planned, 'event')} replayed, ${t.tasks_done} of ${plural(t.tasks, 'task')} done`);
    }
    spinner.stop();
    return current;
  } catch (error) {
    if (error instanceof InterruptedError) {
      spinner.stop();
      ctx.info(`Stopped waiting; the rehearsal goes on on the server: ${agentctl('rehearsals', 'get', id)}`);
    }
    throw error;
  }
}

/** The report as the command's outcome: JSON as the server answered, else the readable report; exit 1 on regressions. */
export async function rehearsalOutcome(ctx: CommandContext, data: Rehearsal, raw: unknown): Promise<Outcome> {
  const exitCode = data.regressions_found ? ExitCode.failure : ExitCode.ok;
  if (ctx.globals.json) return { json: raw, exitCode };
  const client = await ctx.client();
  const label = async (id: string | null) => (id ? versionLabel((await client.getVersion({ params: { version_id: id } })).number) : 'the original');
  const [from, to] = await Promise.all([label(data.from_version_id), label(data.to_version_id)]);
  return { view: text(renderReport(ctx, data, from, to)), exitCode };
}

const mean = (values: (number | null)[]) => {
  const known = values.filter((v): v is number => v !== null);
  return known.length ? Math.round(known.reduce((a, b) => a + b, 0) / known.length) : null;
};

function verdict(t: RehearsalTask): string {
  if (t.skipped) return 'SKIPPED';
  if (t.regressions.length) return 'REGRESSION';
  if (t.status !== 'done') return 'RUNNING';
  return t.events.some((e) => e.differences.length) || t.state_diff.length ? 'DIFFERS' : 'SAME';
}

function pad(rows: string[][]): string[] {
  const widths = rows[0].map((_, i) => Math.max(...rows.map((r) => r[i].length)));
  return rows.map((r) => r.map((cell, i) => (i === r.length - 1 ? cell : cell.padEnd(widths[i]))).join('  '));
}

const short = (value: unknown) => {
  // Object keys sorted: the database keeps its own order (jsonb), the reader expects a stable one.
  const s = JSON.stringify(value, (_key, v) =>
    v && typeof v === 'object' && !Array.isArray(v)
      ? Object.fromEntries(
          Object.keys(v)
            .sort()
            .map((k) => [k, (v as Record<string, unknown>)[k]]),
        )
      : v,
  );
  return s === undefined ? 'absent' : s.length > 80 ? `${s.slice(0, 77)}...` : s;
};

/** A message part in a line: a text as it reads, a structured part (data, tool_request, ...) as JSON. */
const part = (content: MessageContent) => (content.type === 'text' ? content.text.split('\n')[0] : short(content));

function eventLines(ctx: CommandContext, e: RehearsedEvent, from: string, to: string): string[] {
  const c = ctx.chalk;
  const head = e.event_id ? `event ${e.position} (${e.event_id}) "${e.summary}"` : 'task creation (onCreate)';
  const lines = [`  ${head}`];
  if (e.rehearsal.handler_error) lines.push(c.red(`    ${to}: ${e.rehearsal.handler_error}`));
  if (e.rehearsal.timed_out) lines.push(c.red(`    ${to}: no answer within the event timeout`));
  for (const d of e.differences) {
    lines.push(`    message ${d.index + 1}:`);
    if (d.text_diff) for (const line of d.text_diff) lines.push(`      ${line.startsWith('-') ? c.red(line) : line.startsWith('+') ? c.green(line) : line}`);
    else {
      lines.push(c.red(`      - ${d.original ? part(d.original) : `(no message on ${from})`}`));
      lines.push(c.green(`      + ${d.rehearsal ? part(d.rehearsal) : `(no message on ${to})`}`));
    }
  }
  return lines;
}

export function renderReport(ctx: CommandContext, r: Rehearsal, from: string, to: string): string {
  const c = ctx.chalk;
  const t = r.totals;
  const out: string[] = [];
  out.push(
    `Rehearsal ${r.id}: ${plural(t.tasks, 'task')} of ${from} replayed on ${to}, ${t.events_replayed} of ${plural(t.events_planned, 'event')} (${r.status})`,
    '',
  );
  const rows = [['TASK', 'EVENTS', 'ERRORS', 'TIMEOUTS', 'MESSAGE DIFFS', 'STATE DIFFS', `MEAN ms ${from} / ${to}`, 'RESULT']];
  for (const task of r.tasks) {
    const events = task.events.filter((e) => e.event_id !== null);
    rows.push([
      task.task_name ? `${task.task_name} (${task.task_id})` : task.task_id,
      `${task.events_replayed}/${task.events_total}${task.truncated ? '*' : ''}`,
      String(task.events.filter((e) => e.rehearsal.handler_error).length),
      String(task.events.filter((e) => e.rehearsal.timed_out).length),
      String(task.events.filter((e) => e.differences.length).length),
      String(task.state_diff.length),
      `${mean(events.map((e) => e.original.latency_ms)) ?? '-'} / ${mean(events.map((e) => e.rehearsal.latency_ms)) ?? '-'}`,
      verdict(task),
    ]);
  }
  out.push(...pad(rows));
  if (r.tasks.some((task) => task.truncated)) out.push('* bounded by --max-events: see below');

  for (const task of r.tasks) {
    const notes: string[] = [];
    if (task.skipped) notes.push(`  Replayed nothing: ${task.skipped}`);
    if (task.truncated) notes.push(`  ${task.truncated}`);
    for (const reg of task.regressions) notes.push(c.red(`  Regression (${reg.kind.replace('_', ' ')}): ${reg.detail}`));
    const differing = task.events.filter((e) => e.differences.length || e.rehearsal.handler_error || e.rehearsal.timed_out);
    for (const e of differing.slice(0, EVENTS_SHOWN)) notes.push(...eventLines(ctx, e, from, to));
    if (differing.length > EVENTS_SHOWN) notes.push(`  ... and ${differing.length - EVENTS_SHOWN} more events that differ (--json shows all)`);
    if (task.state_diff.length) {
      notes.push(`  final state (${from} -> ${to}):`);
      for (const d of task.state_diff) notes.push(`    ${d.path}: ${c.red(short(d.original))} -> ${c.green(short(d.rehearsal))}`);
    }
    if (notes.length)
      out.push('', `${task.task_name ? `${task.task_name} (${task.task_id})` : task.task_id}, shadow ${task.shadow_task_id ?? 'none'}:`, ...notes);
  }
  out.push('');
  if (r.regressions_found) {
    out.push(
      c.red(
        `Regressions found: ${plural(t.tasks_with_regressions, 'task')} of ${t.tasks} (${plural(t.handler_errors, 'handler error')}, ${plural(t.timeouts, 'timeout')}). ${to} is not ready for these tasks.`,
      ),
    );
  } else if (r.status !== 'completed') {
    out.push('The rehearsal has not completed yet.');
  } else if (t.tasks > 0 && t.skipped_tasks === t.tasks) {
    // Nothing ran on the target: no verdict to give, only why.
    const why = r.tasks.find((task) => task.skipped)?.skipped;
    out.push(c.yellow(`Nothing was replayed, so nothing was checked${why ? `: ${why}` : ''}.`));
  } else {
    const diffs = t.message_differences + t.state_differences;
    out.push(
      c.green(
        `No regressions: every replayed event ran on ${to} without a handler error or timeout${diffs ? ` (${plural(t.message_differences, 'event')} answered differently, ${plural(t.state_differences, 'state difference')}: review them above)` : ', with the same messages and state'}.`,
      ),
    );
  }
  return out.join('\n');
}
