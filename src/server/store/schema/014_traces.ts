import type { Kysely } from 'kysely';
import { runScript } from './script.js';

/**
 * Traces (issue 24): a delivery keeps the W3C trace context of the request that enqueued it; the
 * in-server span store is one table, bounded by count and age (oldest out first); a task sums the
 * GenAI token counts its agent's spans report.
 */
export const script = /* sql */ `
ALTER TABLE deliveries ADD COLUMN traceparent text;
ALTER TABLE deliveries ADD COLUMN tracestate text;
ALTER TABLE tasks ADD COLUMN input_tokens bigint NOT NULL DEFAULT 0;
ALTER TABLE tasks ADD COLUMN output_tokens bigint NOT NULL DEFAULT 0;
CREATE TABLE trace_spans (
  id bigserial PRIMARY KEY,
  org_id text NOT NULL,
  trace_id text NOT NULL,
  span_id text NOT NULL,
  parent_span_id text,
  task_id text,
  name text NOT NULL,
  kind text NOT NULL,
  service text NOT NULL,
  start_us bigint NOT NULL,
  end_us bigint NOT NULL,
  status text NOT NULL,
  status_message text,
  attributes jsonb NOT NULL DEFAULT '{}'::jsonb,
  recorded_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX trace_spans_trace ON trace_spans (trace_id);
CREATE INDEX trace_spans_task ON trace_spans (task_id) WHERE task_id IS NOT NULL;
CREATE INDEX trace_spans_recorded ON trace_spans (recorded_at);
`;

export const up = (db: Kysely<unknown>) => runScript(db, script);
