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
}

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
  const lines = runtime.logs(versionId, {
    tail: request.tail,
    since: request.since ? new Date(request.since) : undefined,
    follow: request.follow,
    signal: request.signal,
  });
  return (async function* () {
    for await (const line of lines) yield toWire(line);
  })();
}

export const toWire = (line: LogLine): VersionLogLine => ({
  version_id: line.versionId,
  replica: line.replica,
  stream: line.stream,
  time: line.time,
  line: line.line,
});
