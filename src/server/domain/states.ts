import { sql, type RawBuilder } from 'kysely';
import type { State, StateHistoryEntry } from '../../contract/resources.js';
import type { Db, StatesTable } from '../store/db.js';
import type { Selectable } from 'kysely';
import type { Permission, Permissions, Visibility } from '../auth/policy.js';
import { ValidationFailure, conflict, invalid, notFound, stale, tooLarge, named } from './errors.js';
import { newId } from '../store/ids.js';
import { iso, toState } from '../store/mappers.js';
import { isUniqueViolation, statusLit } from '../store/sql.js';
import { LIVE_AGENT_STATUS } from '../../contract/lifecycle.js';
import { inCallerOrg, agentById, taskById } from './lookup.js';
import { pageOffset } from './paging.js';
import { visibleRows } from './visibility.js';
import type { ListStateHistoryQuery, ListStatesQuery } from '../../contract/endpoints.js';

/** README "HTTP conventions": a state object is at most 256 KiB, measured as PostgreSQL stores its JSON text. */
export const STATE_MAX_BYTES = 256 * 1024;

type StateRow = Selectable<StatesTable>;

/**
 * Which versions a conditional write accepts: undefined for any (no condition), '*' for any
 * current version, else the versions named (none matches nothing).
 */
export type ExpectedVersions = undefined | '*' | number[];

const stateTooLarge = () => tooLarge('state_too_large', `A state object may be at most ${STATE_MAX_BYTES} bytes serialized`);

const preconditionFailed = (stateId: string, current: number) =>
  stale('precondition_failed', `State ${stateId} is at version ${current}; If-Match does not name it`, String(current));

/** The state with its agent's namespace, checked against `permission` on that agent (404 when not discoverable). */
async function stateForAccess(db: Db, perms: Permissions, permission: Permission, stateId: string): Promise<StateRow> {
  const row = await db
    .selectFrom('states as s')
    .innerJoin('agents as a', 'a.id', 's.agent_id')
    .selectAll('s')
    .select('a.namespace_id')
    .where('s.id', '=', stateId)
    .where(inCallerOrg(perms, 'a.namespace_id'))
    .where('a.status', '=', 'ACTIVE')
    .executeTakeFirst();
  if (!row) throw notFound('State', stateId);
  perms.require(permission, { type: 'agent', id: row.agent_id, namespaceId: row.namespace_id }, `State ${stateId}`);
  const { namespace_id: _ns, ...state } = row;
  return state;
}

/** `AND version = ANY(...)` for an If-Match naming versions; nothing for none or `*`. */
const versionCondition = (expected: ExpectedVersions, column = 'version'): RawBuilder<unknown> =>
  Array.isArray(expected) ? sql`AND ${sql.ref(column)} = ANY(${expected}::int[])` : sql``;

/**
 * Why a conditional write touched no row, checked after the fact: the state is gone or hidden
 * from the key (404), the key may not write it (403), its version is not the one If-Match names
 * (412), or the result would be too large (413).
 */
async function explainNoRow(db: Db, perms: Permissions, stateId: string, expected: ExpectedVersions): Promise<never> {
  const row = await stateForAccess(db, perms, 'write_task_data', stateId);
  if (Array.isArray(expected) && !expected.includes(row.version)) throw preconditionFailed(stateId, row.version);
  throw stateTooLarge();
}

/** `POST /states`: 200; 409 `state_exists` when the (task, agent) pair has one (the unique index decides, so concurrent creates are safe). */
export async function createState(db: Db, perms: Permissions, input: { task_id: string; agent_id: string; state: Record<string, unknown> }): Promise<State> {
  const agent = await agentById(db, perms, 'write_task_data', input.agent_id);
  const task = await taskById(db, perms, 'read', input.task_id);
  try {
    const inserted = await sql<StateRow>`
      INSERT INTO states (id, task_id, agent_id, state)
      SELECT ${newId('state')}, ${input.task_id}, ${input.agent_id}, j FROM (SELECT ${JSON.stringify(input.state)}::jsonb AS j) AS input
      WHERE octet_length(j::text) <= ${STATE_MAX_BYTES}
      RETURNING *`.execute(db);
    if (inserted.rows.length === 0) throw stateTooLarge();
    return toState(inserted.rows[0]);
  } catch (error) {
    if (isUniqueViolation(error))
      throw conflict('state_exists', `Task ${named(task.name, input.task_id)} already has a state for agent ${named(agent.name, input.agent_id)}`);
    throw error;
  }
}

/** `GET /states?task_id=&agent_id=`: at least one filter; only states whose agent the key may read; paged in the database. */
export async function listStates(db: Db, perms: Permissions, query: ListStatesQuery): Promise<{ states: State[]; total: number }> {
  if (query.task_id === undefined && query.agent_id === undefined) {
    throw new ValidationFailure([{ loc: ['query'], msg: 'Give task_id, agent_id or both', type: 'missing' }]);
  }
  if (query.agent_id !== undefined) await agentById(db, perms, 'read', query.agent_id);
  if (query.task_id !== undefined) await taskById(db, perms, 'discover', query.task_id);
  let q = db
    .selectFrom('states as s')
    .innerJoin('agents as a', 'a.id', 's.agent_id')
    .where('a.status', '=', 'ACTIVE')
    .where((eb) => visibleRows(eb, perms.visible('agent', 'read'), 'a.namespace_id', 'a.id'));
  if (query.task_id !== undefined) q = q.where('s.task_id', '=', query.task_id);
  if (query.agent_id !== undefined) q = q.where('s.agent_id', '=', query.agent_id);
  const [rows, count] = await Promise.all([
    q
      .selectAll('s')
      .orderBy(`s.${query.order_by}`, query.order_direction)
      .orderBy('s.id', query.order_direction)
      .limit(query.limit)
      .offset(pageOffset(query))
      .execute(),
    q.select(sql<number>`count(*)::int`.as('n')).executeTakeFirstOrThrow(),
  ]);
  return { states: rows.map(toState), total: count.n };
}

/**
 * `GET /tasks/{id}/states/history`: the values the task's states held before they were replaced,
 * written since its last migration (all of them when it never moved; a value whose time was not
 * recorded only then), of the agents the key may read; newest first by default, paged.
 */
export async function listStateHistory(
  db: Db,
  perms: Permissions,
  taskId: string,
  query: ListStateHistoryQuery,
): Promise<{ history: StateHistoryEntry[]; total: number; since_migration: string | null }> {
  const task = await taskById(db, perms, 'discover', taskId);
  if (query.agent_id !== undefined) await agentById(db, perms, 'read', query.agent_id);
  const since = task.moved_at;
  let q = db
    .selectFrom('state_history as h')
    .innerJoin('agents as a', 'a.id', 'h.agent_id')
    .where('h.task_id', '=', taskId)
    // One value a sequence, the last written at it: a value a move replaced (schema 041) was written before the move.
    .where('h.before_move', '=', false)
    .where('a.status', '=', 'ACTIVE')
    .where((eb) => visibleRows(eb, perms.visible('agent', 'read'), 'a.namespace_id', 'a.id'));
  if (query.agent_id !== undefined) q = q.where('h.agent_id', '=', query.agent_id);
  if (since) q = q.where('h.written_at', '>=', since);
  const [rows, count] = await Promise.all([
    q
      .select(['h.task_id', 'h.agent_id', 'h.sequence_id', 'h.state', 'h.written_at', 'h.written_by_version_id'])
      .orderBy('h.sequence_id', query.order_direction)
      .orderBy('h.agent_id', query.order_direction)
      .limit(query.limit)
      .offset(pageOffset(query))
      .execute(),
    q.select(sql<number>`count(*)::int`.as('n')).executeTakeFirstOrThrow(),
  ]);
  return {
    history: rows.map((r) => ({
      task_id: r.task_id,
      agent_id: r.agent_id,
      sequence_id: Number(r.sequence_id),
      state: r.state as Record<string, unknown>,
      written_at: iso(r.written_at),
      written_by_version_id: r.written_by_version_id ?? null,
    })),
    total: count.n,
    since_migration: iso(since),
  };
}

export async function getState(db: Db, perms: Permissions, stateId: string): Promise<State> {
  return toState(await stateForAccess(db, perms, 'read', stateId));
}

/** `PUT /states/{id}`: replaces the object; `task_id` and `agent_id` must be the record's (422). */
export async function replaceState(
  db: Db,
  perms: Permissions,
  stateId: string,
  input: { task_id: string; agent_id: string; state: Record<string, unknown> },
  expected: ExpectedVersions,
): Promise<State> {
  const current = await stateForAccess(db, perms, 'write_task_data', stateId);
  if (input.task_id !== current.task_id) throw invalid(['body', 'task_id'], `State ${stateId} belongs to task ${current.task_id}`);
  if (input.agent_id !== current.agent_id) throw invalid(['body', 'agent_id'], `State ${stateId} belongs to agent ${current.agent_id}`);
  const updated = await sql<StateRow>`
    UPDATE states SET state = input.j, version = version + 1, updated_at = now()
    FROM (SELECT ${JSON.stringify(input.state)}::jsonb AS j) AS input
    WHERE id = ${stateId} ${versionCondition(expected)} AND octet_length(input.j::text) <= ${STATE_MAX_BYTES}
    RETURNING states.*`.execute(db);
  if (updated.rows.length === 0) return explainNoRow(db, perms, stateId, expected);
  return toState(updated.rows[0]);
}

/** Which states a write may touch: those of live agents in the key's org that `visible` admits. */
export interface WriteScope {
  orgId: string;
  agents: Visibility;
}

export const writeScopeOf = (perms: Permissions): WriteScope => ({ orgId: perms.actor.orgId, agents: perms.visible('agent', 'write_task_data') });

/**
 * The merge as ONE statement, so concurrent merges lose no key: top-level keys of `patch` replace
 * the stored ones, a top-level `null` deletes its key (nested nulls are kept as values), the version
 * goes up by one. The same WHERE checks the key's write access to the state's agent, If-Match and
 * the size limit, so the hot path (the toolkit's state.update) is a single round trip; when no row
 * matches, `explainNoRow` finds out why.
 */
export function mergeStatement(stateId: string, patch: Record<string, unknown>, expected: ExpectedVersions, scope: WriteScope): RawBuilder<StateRow> {
  const deleted = Object.keys(patch).filter((key) => patch[key] === null);
  const merged = sql`((s.state || ${JSON.stringify(patch)}::jsonb) - ${deleted}::text[])`;
  const access = scope.agents.all ? sql`` : sql`AND (a.namespace_id = ANY(${scope.agents.namespaceIds}::text[]) OR a.id = ANY(${scope.agents.ids}::text[]))`;
  return sql<StateRow>`
    UPDATE states AS s SET state = ${merged}, version = s.version + 1, updated_at = now()
    FROM agents AS a JOIN namespaces AS n ON n.id = a.namespace_id
    WHERE s.id = ${stateId} AND a.id = s.agent_id AND a.status = ${statusLit(LIVE_AGENT_STATUS)} AND n.org_id = ${scope.orgId} ${access}
      ${versionCondition(expected, 's.version')} AND octet_length(${merged}::text) <= ${STATE_MAX_BYTES}
    RETURNING s.*`;
}

/** `PATCH /states/{id}` with `{state: {...}}`. */
export async function mergeState(db: Db, perms: Permissions, stateId: string, patch: Record<string, unknown>, expected: ExpectedVersions): Promise<State> {
  const updated = await mergeStatement(stateId, patch, expected, writeScopeOf(perms)).execute(db);
  if (updated.rows.length === 0) return explainNoRow(db, perms, stateId, expected);
  return toState(updated.rows[0]);
}

/**
 * `POST /states/merge`: the merge of `PATCH /states/{id}` addressed by the (task, agent) pair, into an
 * empty record when the pair has none. One INSERT ... ON CONFLICT DO UPDATE, so concurrent first
 * merges both land (the unique index on the pair makes the second one merge into the first's row).
 */
export async function mergeOrCreateState(
  db: Db,
  perms: Permissions,
  input: { task_id: string; agent_id: string; state: Record<string, unknown> },
): Promise<State> {
  await agentById(db, perms, 'write_task_data', input.agent_id);
  await taskById(db, perms, 'read', input.task_id);
  const patch = JSON.stringify(input.state);
  const deleted = Object.keys(input.state).filter((key) => input.state[key] === null);
  const merged = sql`((s.state || ${patch}::jsonb) - ${deleted}::text[])`;
  const written = await sql<StateRow>`
    INSERT INTO states AS s (id, task_id, agent_id, state)
    SELECT ${newId('state')}, ${input.task_id}, ${input.agent_id}, j FROM (SELECT (${patch}::jsonb - ${deleted}::text[]) AS j) AS input
    WHERE octet_length(j::text) <= ${STATE_MAX_BYTES}
    ON CONFLICT (task_id, agent_id) DO UPDATE SET state = ${merged}, version = s.version + 1, updated_at = now()
      WHERE octet_length(${merged}::text) <= ${STATE_MAX_BYTES}
    RETURNING s.*`.execute(db);
  if (written.rows.length === 0) throw stateTooLarge();
  return toState(written.rows[0]);
}

/** `DELETE /states/{id}`: answers the record as it was when deleted, with a message. */
export async function deleteState(db: Db, perms: Permissions, stateId: string, expected: ExpectedVersions): Promise<State & { message: string }> {
  await stateForAccess(db, perms, 'write_task_data', stateId);
  const deleted = await sql<StateRow>`DELETE FROM states WHERE id = ${stateId} ${versionCondition(expected)} RETURNING *`.execute(db);
  if (deleted.rows.length === 0) return explainNoRow(db, perms, stateId, expected);
  return { ...toState(deleted.rows[0]), message: `State ${stateId} deleted` };
}
