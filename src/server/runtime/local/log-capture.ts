import { EventEmitter } from 'node:events';
import { join } from 'node:path';
import type { LogLine, LogQuery } from '../driver.js';
import { DIAGNOSTIC_LINES } from './child-processes.js';
import { ReplicaLog, readVersionLogs, type RotationOptions } from './log-files.js';
import type { Replica } from './replica.js';

/**
 * What agents write, as they write it: each line goes to its replica's file (log-files.ts keeps and
 * rotates them), to the replica's stderr tail for failure diagnostics, and to whoever follows the
 * version's logs.
 */
export class LogCapture {
  private readonly lines = new EventEmitter();
  /** Aborted by close(): followers of logs end with the driver. */
  private readonly closing = new AbortController();

  constructor(
    /** `<dataDir>/runtime/logs`: one directory per version. */
    private readonly logsDir: string,
    private readonly rotation: RotationOptions,
  ) {
    this.lines.setMaxListeners(0);
  }

  openReplicaLog(versionId: string, replica: number): ReplicaLog {
    return new ReplicaLog(this.versionDir(versionId), replica, this.rotation);
  }

  record(versionId: string, replica: Replica, stream: 'stdout' | 'stderr', line: string) {
    const entry: LogLine = { versionId, replica: replica.index, stream, time: new Date().toISOString(), line };
    replica.log.write(stream, entry.time, line);
    if (stream === 'stderr') {
      replica.stderrTail.push(line);
      if (replica.stderrTail.length > DIAGNOSTIC_LINES) replica.stderrTail.shift();
    }
    this.lines.emit(versionId, entry);
  }

  /** The stored lines of a version (`tail`, `since`), then with `follow` every new one until `signal` or close(). */
  async *read(versionId: string, query: LogQuery): AsyncGenerator<LogLine> {
    const queue: LogLine[] = [];
    let wake: (() => void) | undefined;
    const onLine = (line: LogLine) => {
      queue.push(line);
      wake?.();
    };
    // Read and subscribe in one synchronous step: writes are synchronous too, so no line is missed or repeated.
    if (query.follow) this.lines.on(versionId, onLine);
    const onAbort = () => wake?.();
    query.signal?.addEventListener('abort', onAbort);
    this.closing.signal.addEventListener('abort', onAbort);
    try {
      let stored = readVersionLogs(this.versionDir(versionId), versionId);
      if (query.since) {
        const since = query.since.toISOString();
        stored = stored.filter((l) => l.time >= since);
      }
      const tail = Math.max(0, query.tail ?? 100);
      yield* tail === 0 ? [] : stored.slice(-tail);
      if (!query.follow) return;
      while (!query.signal?.aborted && !this.closing.signal.aborted) {
        if (queue.length > 0) {
          yield queue.shift()!;
          continue;
        }
        await new Promise<void>((done) => (wake = done));
        wake = undefined;
      }
    } finally {
      this.lines.off(versionId, onLine);
      query.signal?.removeEventListener('abort', onAbort);
      this.closing.signal.removeEventListener('abort', onAbort);
    }
  }

  /** Ends every follower. */
  close() {
    this.closing.abort();
  }

  private versionDir(versionId: string) {
    return join(this.logsDir, versionId);
  }
}
