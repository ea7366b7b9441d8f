import type { Schedule, ScheduleTick } from '../../../contract/schedules.js';
import { record, table, type Column, type View } from '../../output/view.js';

/** What each tick does, in a few words. */
const action = (s: Schedule) => (s.task_name ? `event to task ${s.task_name}` : 'new task');

export const scheduleColumns: Column<Schedule>[] = [
  { header: 'ID', value: (s) => s.id },
  { header: 'NAME', value: (s) => s.name },
  { header: 'CRON', value: (s) => s.cron },
  { header: 'TZ', value: (s) => s.timezone },
  { header: 'STATUS', value: (s) => s.status, format: 'status' },
  { header: 'NEXT RUN', value: (s) => s.next_run_at, format: 'time' },
  { header: 'LAST RUN', value: (s) => s.last_run_at, format: 'time' },
  { header: 'DOES', value: action },
  { header: 'AGENT ID', value: (s) => s.agent_id, wide: true },
];

export const scheduleRecord = (s: Schedule): View =>
  record([
    ['ID', s.id],
    ['Name', s.name],
    ['Agent', s.agent_id],
    ['Cron', s.cron],
    ['Time zone', s.timezone],
    ['Status', s.status, 'status'],
    ['Next run', s.next_run_at, 'time'],
    ['Last run', s.last_run_at, 'time'],
    ['Last error', s.last_error],
    ['Does', action(s)],
    ['Branch', s.branch],
    ['Params', s.params, 'json'],
    ['Event', s.event, 'json'],
    ['Missed ticks', s.missed],
    ['Recent runs', s.recent_ticks?.length ? s.recent_ticks.map(tickLine).join('\n') : null],
    ['Created', s.created_at, 'time'],
  ]);

/** `2025-01-31T12:00:00.000Z scheduled task_01J...` */
export const tickLine = (t: ScheduleTick) => `${t.tick_at} ${t.kind} ${t.task_id ?? t.event_id ?? `failed: ${t.error}`}`;

export const tickRecord = (t: ScheduleTick): View =>
  record([
    ['Schedule', t.schedule_id],
    ['Tick', t.tick_at, 'time'],
    ['Kind', t.kind],
    ['Task', t.task_id],
    ['Event', t.event_id],
    ['Error', t.error],
  ]);

export { table };
