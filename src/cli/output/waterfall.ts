import type { ChalkInstance } from 'chalk';
import type { Trace, TraceSpan } from '../../contract/traces.js';

export interface WaterfallOptions {
  chalk: ChalkInstance;
  /** Terminal width (default 100). */
  columns?: number;
  /** Show the database spans too (hidden by default: a turn makes dozens). */
  db?: boolean;
}

const isDb = (span: TraceSpan) => span.name.startsWith('db ') && span.kind === 'client';

/**
 * A trace as a waterfall: one line per span, nested under its parent, with a bar placed and sized by
 * its time within the trace, its duration, and errors marked.
 */
export function renderWaterfall(trace: Trace, options: WaterfallOptions): string {
  const { chalk } = options;
  const shown = options.db ? trace.spans : trace.spans.filter((s) => !isDb(s));
  const hidden = trace.spans.length - shown.length;
  const ids = new Set(shown.map((s) => s.span_id));
  const children = new Map<string | null, TraceSpan[]>();
  // A span whose parent is not shown (hidden, or recorded nowhere) hangs from its nearest shown ancestor, else the top.
  const byId = new Map(trace.spans.map((s) => [s.span_id, s]));
  const shownParent = (span: TraceSpan): string | null => {
    let parent = span.parent_span_id;
    for (let hops = 0; parent && !ids.has(parent) && hops < 100; hops++) parent = byId.get(parent)?.parent_span_id ?? null;
    return parent && ids.has(parent) ? parent : null;
  };
  for (const span of shown) {
    const parent = shownParent(span);
    const list = children.get(parent) ?? [];
    list.push(span);
    children.set(parent, list);
  }
  const rows: { span: TraceSpan; depth: number }[] = [];
  const walk = (parent: string | null, depth: number) => {
    for (const span of (children.get(parent) ?? []).sort((a, b) => a.start_time_us - b.start_time_us)) {
      rows.push({ span, depth });
      walk(span.span_id, depth + 1);
    }
  };
  walk(null, 0);

  const start = Math.min(...trace.spans.map((s) => s.start_time_us));
  const total = Math.max(1, Math.max(...trace.spans.map((s) => s.end_time_us)) - start);
  const label = (row: { span: TraceSpan; depth: number }) =>
    `${'  '.repeat(Math.min(row.depth, 12))}${row.span.status === 'error' ? '✗ ' : ''}${row.span.name}${row.span.service === 'agentctl-server' ? '' : ` [${row.span.service}]`}`;
  const columns = Math.max(60, options.columns ?? 100);
  const nameWidth = Math.min(Math.max(10, ...rows.map((r) => label(r).length)), Math.floor(columns * 0.45));
  const durationWidth = 10;
  const barWidth = Math.max(10, columns - nameWidth - durationWidth - 4);

  const lines = [
    `${chalk.bold(`trace ${trace.trace_id}`)}${trace.task_id ? `  task ${trace.task_id}` : ''}  ${formatMs(trace.duration_ms)}  ${trace.spans.length} spans  ${chalk.dim(trace.start_time)}`,
  ];
  for (const row of rows) {
    const { span } = row;
    const from = Math.floor(((span.start_time_us - start) / total) * barWidth);
    const length = Math.max(1, Math.round(((span.end_time_us - span.start_time_us) / total) * barWidth));
    const bar = ' '.repeat(Math.min(from, barWidth - 1)) + '█'.repeat(Math.max(1, Math.min(length, barWidth - Math.min(from, barWidth - 1))));
    let name = label(row);
    if (name.length > nameWidth) name = `${name.slice(0, nameWidth - 1)}…`;
    const painted = span.status === 'error' ? chalk.red(bar) : span.service === 'agentctl-server' ? chalk.cyan(bar) : chalk.magenta(bar);
    lines.push(
      `${(span.status === 'error' ? chalk.red : (s: string) => s)(name.padEnd(nameWidth))}  ${painted}${' '.repeat(barWidth - bar.length)}  ${formatMs(span.duration_ms).padStart(durationWidth - 2)}`,
    );
    if (span.status === 'error' && span.status_message) lines.push(`${' '.repeat(Math.min(row.depth, 12) * 2 + 2)}${chalk.red(span.status_message)}`);
  }
  const input = sum(trace.spans, 'gen_ai.usage.input_tokens');
  const output = sum(trace.spans, 'gen_ai.usage.output_tokens');
  if (input || output) lines.push(chalk.dim(`tokens: ${input} in, ${output} out`));
  if (hidden) lines.push(chalk.dim(`${hidden} database ${hidden === 1 ? 'span' : 'spans'} not shown (--db shows them)`));
  return `${lines.join('\n')}\n`;
}

const sum = (spans: TraceSpan[], key: string) => spans.reduce((n, s) => n + (typeof s.attributes[key] === 'number' ? (s.attributes[key] as number) : 0), 0);

export function formatMs(ms: number): string {
  if (ms >= 10_000) return `${(ms / 1000).toFixed(1)} s`;
  if (ms >= 1000) return `${(ms / 1000).toFixed(2)} s`;
  if (ms >= 10) return `${ms.toFixed(0)} ms`;
  return `${ms.toFixed(1)} ms`;
}
