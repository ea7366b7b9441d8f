/** How rollouts and migration records read for people: tables, records and the live view of `rollouts get --follow`. */
import type { MigrationRecord, Rollout, RolloutFigures, RolloutStepReport } from '../contract/rollouts.js';
import { formatDuration } from '../contract/rollout-rules.js';
import type { CommandContext } from './context.js';
import { versionLabels } from './names.js';
import { record, table, type Column, type RecordField, type View } from './output/view.js';

type Labels = Map<string, string>;
const label = (labels: Labels, id: string) => labels.get(id) ?? id;

/** The version labels (v1, v2) of every version these rollouts and records name. */
export const labelsOf = (ctx: CommandContext, ids: Iterable<string>) => versionLabels(ctx, ids);

export const figuresText = (f: RolloutFigures | null) =>
  f
    ? `${f.error_rate_percent}% errors: ${f.handler_errors} handler errors, ${f.delivery_failures} failed deliveries${
        f.migration_errors ? `, ${f.migration_errors} failed onMigrate` : ''
      } in ${f.deliveries} deliveries (${f.tasks} tasks)`
    : '-';

/** The failed onMigrate hooks of a step's moved tasks, one line each: the task and its error. */
const migrationFailureLines = (f: RolloutFigures | null) =>
  (f?.migration_failures ?? []).map((m) => `onMigrate failed on ${m.task_id} (moved back): ${m.message}`);

export function stepLine(r: Rollout, s: RolloutStepReport, labels: Labels): string {
  const head = `step ${s.step}/${r.steps.length} (${s.percent}%): moved ${s.moved} — ${s.decision.toUpperCase()}`;
  const body = s.target ? `; ${label(labels, r.to_version_id)} ${figuresText(s.target)}; ${label(labels, r.from_version_id)} ${figuresText(s.source)}` : '';
  return `${head}${body}${s.reason ? ` — ${s.reason}` : ''}`;
}

export function rolloutColumns(labels: Labels): Column<Rollout>[] {
  return [
    { header: 'ID', value: (r) => r.id },
    { header: 'FROM', value: (r) => label(labels, r.from_version_id) },
    { header: 'TO', value: (r) => label(labels, r.to_version_id) },
    { header: 'STATUS', value: (r) => r.status, format: 'status' },
    { header: 'STEP', value: (r) => `${r.step}/${r.steps.length} (${r.percent}%)` },
    { header: 'STEPS', value: (r) => r.steps.join(',') },
    { header: 'WATCH', value: (r) => formatDuration(r.watch_ms) },
    { header: 'MAX ERRORS', value: (r) => `${r.max_error_rate_percent}%` },
    { header: 'REASON', value: (r) => r.reason ?? '' },
    { header: 'CREATED', value: (r) => r.created_at, format: 'time' },
  ];
}

export function rolloutRecord(r: Rollout, labels: Labels): View {
  const fields: RecordField[] = [
    ['Rollout', r.id],
    ['Status', r.status, 'status'],
    ['From', `${label(labels, r.from_version_id)} (${r.from_version_id})`],
    ['To', `${label(labels, r.to_version_id)} (${r.to_version_id})`],
    ['Steps', r.steps.map((s) => `${s}%`).join(', ')],
    ['Watch', `${formatDuration(r.watch_ms)} per step`],
    ['Max error rate', `${r.max_error_rate_percent}% above the source's`],
    [
      'Step',
      r.step === 0 ? 'not started (waiting for the target to be ACTIVE)' : `${r.step} of ${r.steps.length}: ${r.percent}% on ${label(labels, r.to_version_id)}`,
    ],
    ['Window ends', r.window_ends_at, 'time'],
    ['New tasks', `${r.new_tasks} created during the rollout, ${r.new_tasks_to_target} on ${label(labels, r.to_version_id)}`],
    ['Reason', r.reason],
    ['Created', r.created_at, 'time'],
    ['Finished', r.finished_at, 'time'],
  ];
  for (const s of r.report) {
    fields.push([`Step ${s.step}`, stepLine(r, s, labels)]);
    const failures = migrationFailureLines(s.target);
    if (failures.length) fields.push([`Step ${s.step} onMigrate`, failures.join('\n')]);
  }
  return record(fields);
}

export function migrationColumns(labels: Labels): Column<MigrationRecord>[] {
  return [
    { header: 'ID', value: (m) => m.id },
    { header: 'KIND', value: (m) => (m.step ? `${m.kind} ${m.step}` : m.kind) },
    { header: 'FROM', value: (m) => m.from_version_ids.map((id) => label(labels, id)).join(', ') },
    { header: 'TO', value: (m) => label(labels, m.to_version_id) },
    { header: 'TASKS', value: (m) => m.count },
    { header: 'ROLLOUT', value: (m) => m.rollout_id ?? '' },
    { header: 'UNDONE BY', value: (m) => m.undone_by_id ?? '' },
    { header: 'CREATED', value: (m) => m.created_at, format: 'time' },
  ];
}

export function migrationRecordView(m: MigrationRecord, labels: Labels): View {
  return record([
    ['Migration', m.id],
    ['Kind', m.step ? `${m.kind} (step ${m.step})` : m.kind],
    ['From', m.from_version_ids.map((id) => `${label(labels, id)} (${id})`).join(', ')],
    ['To', `${label(labels, m.to_version_id)} (${m.to_version_id})`],
    ['Tasks', m.count],
    ['Rollout', m.rollout_id],
    ['Reason', m.reason],
    ['Undoes', m.undoes_id],
    ['Undone by', m.undone_by_id],
    ['Created', m.created_at, 'time'],
    ['Moved', (m.moves ?? []).map((t) => `${t.task_id} (from ${label(labels, t.from_version_id)})`).join(', ')],
  ]);
}

/** Filtered: says no rollout matched; else how to start one. */
export const rolloutTable = (rollouts: Rollout[], labels: Labels, filtered = false) =>
  table(
    rolloutColumns(labels),
    rollouts,
    filtered ? 'No rollouts match.' : 'No rollouts yet. Start one with: agentctl tasks migrate --from v1 --to-latest --steps 10,50,100',
  );
