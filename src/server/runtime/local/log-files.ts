import { closeSync, existsSync, mkdirSync, openSync, readdirSync, readFileSync, renameSync, rmSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import type { LogLine } from '../driver.js';

/**
 * Per-replica log files: JSON Lines `{t, s, l}` (time, stream `o`/`e`, text), rotated by size into
 * `replica-N.log.1`, `.2`, ... Writes are synchronous so that a reader in the same thread sees a
 * line exactly once: it reads the files and subscribes to new lines in one synchronous step.
 */
export interface RotationOptions {
  /** Rotate when the current file passes this size (default 10 MiB). */
  maxBytes: number;
  /** Rotated files kept besides the current one (default 2). */
  keep: number;
}

export class ReplicaLog {
  private fd: number | undefined;
  private size = 0;
  private readonly path: string;

  constructor(
    readonly dir: string,
    readonly replica: number,
    private readonly rotation: RotationOptions,
  ) {
    mkdirSync(dir, { recursive: true });
    this.path = join(dir, `replica-${replica}.log`);
  }

  write(stream: 'stdout' | 'stderr', time: string, line: string): void {
    const record = `${JSON.stringify({ t: time, s: stream === 'stdout' ? 'o' : 'e', l: line })}\n`;
    if (this.fd === undefined) this.open();
    if (this.size > 0 && this.size + record.length > this.rotation.maxBytes) this.rotate();
    this.size += writeSync(this.fd!, record);
  }

  close(): void {
    if (this.fd !== undefined) closeSync(this.fd);
    this.fd = undefined;
  }

  private open(): void {
    this.fd = openSync(this.path, 'a');
    try {
      this.size = readFileSync(this.path).length;
    } catch {
      this.size = 0;
    }
  }

  private rotate(): void {
    this.close();
    rmSync(`${this.path}.${this.rotation.keep}`, { force: true });
    for (let n = this.rotation.keep - 1; n >= 1; n--) {
      if (existsSync(`${this.path}.${n}`)) renameSync(`${this.path}.${n}`, `${this.path}.${n + 1}`);
    }
    if (this.rotation.keep > 0) renameSync(this.path, `${this.path}.1`);
    else rmSync(this.path, { force: true });
    this.fd = openSync(this.path, 'a');
    this.size = 0;
  }
}

/** Every line on disk for a version, all replicas, oldest first (merged by time, stable per replica). */
export function readVersionLogs(dir: string, versionId: string): LogLine[] {
  if (!existsSync(dir)) return [];
  const perReplica = new Map<number, string[]>();
  for (const name of readdirSync(dir)) {
    const match = /^replica-(\d+)\.log(?:\.(\d+))?$/.exec(name);
    if (!match) continue;
    const replica = Number(match[1]);
    const files = perReplica.get(replica) ?? [];
    files.push(name);
    perReplica.set(replica, files);
  }
  const lines: LogLine[] = [];
  for (const [replica, files] of perReplica) {
    // Oldest first: the highest rotation number, then down to the current file.
    const rank = (name: string) => Number(/\.log\.(\d+)$/.exec(name)?.[1] ?? 0);
    files.sort((a, b) => rank(b) - rank(a));
    for (const name of files) {
      for (const text of readFileSync(join(dir, name), 'utf8').split('\n')) {
        if (!text) continue;
        try {
          const r = JSON.parse(text) as { t: string; s: 'o' | 'e'; l: string };
          lines.push({ versionId, replica, stream: r.s === 'o' ? 'stdout' : 'stderr', time: r.t, line: r.l });
        } catch {
          // A line cut short by a crash of the server: skipped.
        }
      }
    }
  }
  // Array.prototype.sort is stable, so lines of one replica with equal times keep their order.
  return lines.sort((a, b) => (a.time < b.time ? -1 : a.time > b.time ? 1 : 0));
}
