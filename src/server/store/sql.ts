import { sql, type RawBuilder } from 'kysely';
import type { AgentStatus, TaskStatus, VersionStatus } from '../../contract/lifecycle.js';

type Status = AgentStatus | TaskStatus | VersionStatus;

/** A status written into SQL text as a literal (a partial index's predicate matches it), typed by the contract. */
export const statusLit = (status: Status): RawBuilder<unknown> => sql.lit(status);
/** Statuses for `IN (...)`, as literals: `status IN (${statusList(LIVE_TASK_STATUSES)})`. */
export const statusList = (statuses: readonly Status[]): RawBuilder<unknown> => sql.join(statuses.map(statusLit));

/** PostgreSQL's unique_violation, optionally on one named constraint or index. */
export function isUniqueViolation(error: unknown, constraint?: string): boolean {
  const e = error as { code?: string; constraint?: string; message?: string };
  if (e?.code !== '23505') return false;
  return !constraint || e.constraint === constraint || (e.message ?? '').includes(constraint);
}

/** A transaction PostgreSQL aborted to break a deadlock or a serialization conflict: it changed nothing. */
export function isSerializationFailure(error: unknown): boolean {
  const code = (error as { code?: string } | null)?.code;
  return code === '40P01' || code === '40001';
}

/** A timestamptz as the service writes it: ISO 8601 UTC with milliseconds and `Z`. */
export const isoSql = (column: string) => `to_char(${column} AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')`;

/**
 * A task row as the contract's Task, as a select list over `alias` (the contract's fields, in its
 * order): `json_agg(r ORDER BY r.id)` over `(SELECT <this> FROM ...) r` builds the JSON array in the
 * database, so bulk responses (migrations of 10,000 tasks) cost one text column instead of a parsed
 * row and a re-serialization per task. Aggregating the row itself (row_to_json) takes half the time
 * of a json_build_object per row.
 */
export function taskRowSql(alias: string): RawBuilder<unknown> {
  const c = (name: string) => `${alias}.${name}`;
  return sql.raw(`${c('id')}, ${c('filesystem_id')}, ${c('namespace_id')}, ${c('name')}, ${c('status')}, ${c('status_reason')},
    ${c('params')}, ${c('task_metadata')}, ${c('created_version_id')}, ${c('current_version_id')},
    ${isoSql(c('created_at'))} AS created_at, ${isoSql(c('updated_at'))} AS updated_at`);
}
