import type { VersionLogLine } from '../../contract/runtime.js';
import type { Permissions } from '../auth/policy.js';
import { conflict } from './errors.js';
import type { LogLine, RuntimeDriver } from '../runtime/driver.js';
import type { Db } from '../store/db.js';
import { versionById } from './lookup.js';

export interface LogsRequest {
  tail: number;
  since?: string;
  follow: boolean;
  signal?: AbortSignal;
  /** Only structured lines of this task, or of this trace (README "Traces"). */
  task_id?: string;
  trace_id?: string;
}

/** The most stored lines read to find a task's or a trace's (then cut to `tail`). */
const FILTER_SCAN_LINES = 10_000;

/**
 * The output of a version's processes, as the runtime of this server captured it (`read` on the
 * agent). A server without a runtime (`--runtime none`) has none to give: 409.
 */
export async function versionLogs(
  db: Db,
  perms: Permissions,
  runtime: RuntimeDriver | undefined,
  versionId: string,
  request: LogsRequest,
): Promise<AsyncIterable<VersionLogLine>> {
  await versionById(db, perms, 'read', versionId);
  if (!runtime) throw conflict('no_runtime', 'This server runs no agents (--runtime none): their output is wherever they run');
  const filtered = request.task_id !== undefined || request.trace_id !== undefined;
  const lines = runtime.logs(versionId, {
    tail: filtered && request.tail > 0 ? FILTER_SCAN_LINES : request.tail,
    since: request.since ? new Date(request.since) : undefined,
    follow: request.follow,
    signal: request.signal,
  });
  if (!filtered) {
    return (async function* () {
      for await (const line of lines) yield toWire(line);
    })();
  }
  const wanted = (line: VersionLogLine) =>
    (request.task_id === undefined || line.task_id === request.task_id) && (request.trace_id === undefined || line.trace_id === request.trace_id);
  if (request.follow) {
    // Followed: every matching line, stored (of the last FILTER_SCAN_LINES) and new.
    return (async function* () {
      for await (const line of lines) {
        const wire = toWire(line);
        if (wanted(wire)) yield wire;
      }
    })();
  }
  return (async function* () {
    const matching: VersionLogLine[] = [];
    for await (const line of lines) {
      const wire = toWire(line);
      if (wanted(wire)) matching.push(wire);
    }
    yield* request.tail === 0 ? [] : matching.slice(-request.tail);
  })();
}

/** The ids of a structured line: JSON with `task_id` / `trace_id` strings (the ADK's `ctx.log`). */
function turnOf(line: string): { task_id?: string; trace_id?: string } {
  if (line.charCodeAt(0) !== 123 /* { */ || !line.includes('"task_id"')) return {};
  try {
    const parsed = JSON.parse(line) as { task_id?: unknown; trace_id?: unknown };
    return {
      ...(typeof parsed.task_id === 'string' ? { task_id: parsed.task_id } : {}),
      ...(typeof parsed.trace_id === 'string' ? { trace_id: parsed.trace_id } : {}),
    };
  } catch {
    return {};
  }
}

export const toWire = (line: LogLine): VersionLogLine => ({
  version_id: line.versionId,
  replica: line.replica,
  stream: line.stream,
  time: line.time,
  line: line.line,
  ...turnOf(line.line),
});
