import { mkdirSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import type { LogLine, LogQuery, RuntimeDriver, RuntimeHappening, VersionRuntimeStatus, VersionSpec } from '../driver.js';
import { LIFELINE_SOURCE } from './lifeline.js';
import { LogCapture } from './log-capture.js';
import type { RotationOptions } from './log-files.js';
import { asPrepareFailure, findPackageRoot, prepareVersionSource, type SourceOptions } from './source.js';
import { Supervisor } from './supervisor.js';

// The driver composes its parts (source.ts, supervisor.ts, health.ts, lifeline.ts, log-capture.ts):
// README "Where things go", "How the local runtime runs an agent".

export interface LocalDriverOptions {
  /** Sources, logs and agents' data live under `<dataDir>/runtime`. */
  dataDir: string;
  /** Fills `dir` (which exists and is empty) with the version's source tree. */
  prepareSource(spec: VersionSpec, dir: string): Promise<void>;
  /** Health checks of ready replicas (default 5 s). */
  healthIntervalMs?: number;
  /** Failed checks in a row that make a replica unhealthy (default 3). */
  healthFailures?: number;
  /** A replica not ready this long after its start fails the version (default 60 s). */
  startTimeoutMs?: number;
  /** Exits before readiness within `crashLoopWindowMs` that make a crash loop (default 5 in 60 s). */
  crashLoopExits?: number;
  crashLoopWindowMs?: number;
  /** Restart backoff of a crashed ready replica: doubles from `restartBackoffMs` up to `restartBackoffMaxMs`. */
  restartBackoffMs?: number;
  restartBackoffMaxMs?: number;
  /** SIGTERM-to-SIGKILL grace of `stop()` without its own (default 10 s). */
  stopGraceMs?: number;
  /** Time allowed for `npm install` and the build command (default 5 min). */
  buildTimeoutMs?: number;
  rotation?: Partial<RotationOptions>;
  /** The agentctl package that `node_modules/agentctl` links to (default: the running one). */
  agentctlRoot?: string;
}

/** The image URL of a source snapshot: `local://<filesystem id>`; the only kind this driver runs. */
export const LOCAL_SOURCE_PREFIX = 'local://';

/** The `local` runtime: every replica a Node child process on a loopback port (README "Local runtime and logs"). */
export function createLocalDriver(options: LocalDriverOptions): RuntimeDriver {
  const root = join(resolve(options.dataDir), 'runtime');
  const stopGraceMs = options.stopGraceMs ?? 10_000;
  const source: SourceOptions = {
    versionsDir: join(root, 'versions'),
    prepareSource: options.prepareSource,
    buildTimeoutMs: options.buildTimeoutMs ?? 300_000,
    agentctlRoot: options.agentctlRoot ?? findPackageRoot(),
  };

  mkdirSync(root, { recursive: true });
  const lifelinePath = join(root, 'lifeline.mjs');
  writeFileSync(lifelinePath, LIFELINE_SOURCE);

  const listeners: Array<(versionId: string, happening: RuntimeHappening) => void> = [];
  const emit = (versionId: string, happening: RuntimeHappening) => {
    for (const listener of listeners) {
      try {
        listener(versionId, happening);
      } catch {
        // A listener's failure is its own business.
      }
    }
  };

  const logs = new LogCapture(join(root, 'logs'), { maxBytes: 10 * 1024 * 1024, keep: 2, ...options.rotation });
  const supervisor = new Supervisor(
    {
      dataDir: join(root, 'data'),
      lifelinePath,
      healthIntervalMs: options.healthIntervalMs ?? 5_000,
      healthFailures: options.healthFailures ?? 3,
      startTimeoutMs: options.startTimeoutMs ?? 60_000,
      crashLoopExits: options.crashLoopExits ?? 5,
      crashLoopWindowMs: options.crashLoopWindowMs ?? 60_000,
      restartBackoffMs: options.restartBackoffMs ?? 1_000,
      restartBackoffMaxMs: options.restartBackoffMaxMs ?? 30_000,
    },
    logs,
    emit,
  );
  const { runs } = supervisor;

  const driver: RuntimeDriver = {
    name: 'local',
    replicasEndWithServer: true,

    canRun: (spec) => spec.imageUrl.startsWith(LOCAL_SOURCE_PREFIX),

    async start(spec, secrets) {
      if (runs.has(spec.versionId)) return;
      const run = supervisor.open(spec, secrets);
      try {
        Object.assign(run, await prepareVersionSource(spec, source));
      } catch (error) {
        const failure = asPrepareFailure(error);
        for (const line of failure.diagnostics.description.split('\n')) supervisor.record(run, run.replicas[0]!, 'stderr', line);
        supervisor.fail(run, failure.reason, failure.diagnostics);
        return;
      }
      if (run.ending) return;
      await Promise.all(run.replicas.map((replica) => supervisor.launch(run, replica)));
    },

    async restart(spec, secrets) {
      const run = runs.get(spec.versionId);
      if (!run) return driver.start(spec, secrets);
      await supervisor.restart(run, secrets, stopGraceMs);
    },

    async stop(versionId, stopOptions = {}) {
      const run = runs.get(versionId);
      if (!run) return;
      await supervisor.stop(run, stopOptions.graceMs ?? stopGraceMs);
    },

    status(versionId): VersionRuntimeStatus | undefined {
      const run = runs.get(versionId);
      if (!run) return undefined;
      return {
        versionId,
        replicas: run.replicas.map((r) => ({ replica: r.index, phase: r.phase, pid: r.child?.pid, port: r.port, restarts: r.restarts })),
      };
    },

    running() {
      return [...runs.keys()];
    },

    logs(versionId, query: LogQuery = {}): AsyncIterable<LogLine> {
      return logs.read(versionId, query);
    },

    onHappening(listener) {
      listeners.push(listener);
    },

    async close() {
      logs.close();
      await Promise.all([...runs.keys()].map((id) => driver.stop(id, { graceMs: Math.min(stopGraceMs, 5_000) })));
    },
  };
  return driver;
}
