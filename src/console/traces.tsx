// A task's traces (GET /tasks/{id}/traces): one per turn, each a waterfall of its spans, nested by
// parent and placed on a shared time axis, so where a turn spent its time reads at a glance.
import { useState } from 'preact/hooks';
import type { Trace, TraceSpan } from '../contract/traces.js';
import { api } from './api.js';
import { Pending, Section, ShowEarlier, useLoad, usePages, when } from './ui.js';

/** Spans in depth-first order (children by start), each with its depth; orphans start at the top. */
export function nest(spans: TraceSpan[]): { span: TraceSpan; depth: number }[] {
  const ids = new Set(spans.map((s) => s.span_id));
  const children = new Map<string | null, TraceSpan[]>();
  for (const s of spans) {
    const parent = s.parent_span_id && ids.has(s.parent_span_id) ? s.parent_span_id : null;
    children.set(parent, [...(children.get(parent) ?? []), s]);
  }
  const out: { span: TraceSpan; depth: number }[] = [];
  const visit = (parent: string | null, depth: number) => {
    for (const s of (children.get(parent) ?? []).sort((a, b) => a.start_time_us - b.start_time_us)) {
      out.push({ span: s, depth });
      visit(s.span_id, depth + 1);
    }
  };
  visit(null, 0);
  return out;
}

const ms = (v: number) => (v >= 1000 ? `${(v / 1000).toFixed(2)} s` : `${v.toFixed(v < 10 ? 2 : 0)} ms`);

/** The recent turns first: a long task keeps thousands of traces, drawn a page at a time. */
const TRACE_PAGE = 10;

export function TaskTraces({ taskId }: { taskId: string }) {
  const pages = usePages(TRACE_PAGE);
  const loaded = useLoad(() => api.getTaskTraces({ params: { task_id: taskId }, query: { limit: pages.limit } }), [taskId, pages.limit]);
  return (
    <Section id="traces" title="Trace" onReload={loaded.reload}>
      <Pending loaded={loaded}>
        {(data) =>
          data.traces.length === 0 ? (
            <p class="empty">No spans kept for this task.</p>
          ) : (
            <>
              {data.traces.length < data.total && (
                <p class="muted small">
                  The last {data.traces.length} of {data.total} turns kept, newest first.
                </p>
              )}
              {[...data.traces].reverse().map((t, i) => (
                <Waterfall key={t.trace_id} trace={t} turn={data.total - i} open={i === 0} />
              ))}
              <ShowEarlier shown={data.traces.length} total={data.total} onMore={pages.more}>
                Show earlier turns ({data.total - data.traces.length} more)
              </ShowEarlier>
            </>
          )
        }
      </Pending>
    </Section>
  );
}

function Waterfall({ trace, turn, open }: { trace: Trace; turn: number; open: boolean }) {
  const [selected, setSelected] = useState<string | undefined>();
  const rows = nest(trace.spans);
  const start = Math.min(...trace.spans.map((s) => s.start_time_us));
  const end = Math.max(...trace.spans.map((s) => s.end_time_us));
  const total = Math.max(1, end - start);
  const chosen = trace.spans.find((s) => s.span_id === selected);
  return (
    <details class="trace" open={open}>
      <summary>
        Turn {turn} · {when(trace.start_time)} · {ms(trace.duration_ms)} · {trace.spans.length} spans · <code>{trace.trace_id}</code>
      </summary>
      <ol class="waterfall" aria-label={`Spans of turn ${turn}`}>
        {rows.map(({ span, depth }) => {
          const left = ((span.start_time_us - start) / total) * 100;
          const width = Math.max(0.3, ((span.end_time_us - span.start_time_us) / total) * 100);
          return (
            <li key={span.span_id} data-depth={depth} class={span.status === 'error' ? 'error-span' : ''}>
              <button
                type="button"
                class="span-name"
                aria-expanded={selected === span.span_id}
                onClick={() => setSelected(selected === span.span_id ? undefined : span.span_id)}
              >
                <span class="indent" style={{ width: `${Math.min(depth, 8)}rem` }} aria-hidden="true" />
                <span class="text">{span.name}</span> <span class="muted small">{span.service}</span>
              </button>
              <span class="lane" aria-hidden="true">
                {/* Set through the CSSOM (not a style attribute), which the strict CSP allows. */}
                <span class={`bar ${span.status}`} style={{ left: `${left.toFixed(2)}%`, width: `${width.toFixed(2)}%` }} />
              </span>
              <span class="dur">
                {ms(span.duration_ms)} <span class="sr-only">starting {ms((span.start_time_us - start) / 1000)} in</span>
              </span>
            </li>
          );
        })}
      </ol>
      {chosen && (
        <dl class="facts span-facts">
          <dt>Span</dt>
          <dd class="text">
            {chosen.name} ({chosen.kind}) <code>{chosen.span_id}</code>
          </dd>
          <dt>Status</dt>
          <dd class="text">
            {chosen.status}
            {chosen.status_message && `: ${chosen.status_message}`}
          </dd>
          {Object.entries(chosen.attributes).map(([k, v]) => (
            <>
              <dt class="text" key={k}>
                {k}
              </dt>
              <dd class="text">{String(v)}</dd>
            </>
          ))}
        </dl>
      )}
    </details>
  );
}
