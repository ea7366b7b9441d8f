import { type ChildProcess, spawn } from 'node:child_process';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { type FailureDiagnostics, type LaunchSecrets, PROCESS_ENV, type RuntimeHappening, type VersionSpec } from '../driver.js';
import { DIAGNOSTIC_LINES, freePort, inheritedEnv, pipeLines, signalGroup } from './child-processes.js';
import { waitUntilReady, watchHealth } from './health.js';
import { LIFELINE_FD } from './lifeline.js';
import type { LogCapture } from './log-capture.js';
import { clearTimers, later, wakeReadyWaiters, type Replica, type Run } from './replica.js';

/** A ready replica that stays up this long gets its restart backoff reset. */
const STABLE_AFTER_MS = 60_000;

export interface SupervisorSettings {
  /** `<dataDir>/runtime/data`: each replica's DATA_ROOT is `<versionId>/<replica>` below it. */
  dataDir: string;
  /** The lifeline preload (lifeline.ts) every agent process starts with. */
  lifelinePath: string;
  healthIntervalMs: number;
  healthFailures: number;
  startTimeoutMs: number;
  crashLoopExits: number;
  crashLoopWindowMs: number;
  restartBackoffMs: number;
  restartBackoffMaxMs: number;
}

type FailureReason = Extract<RuntimeHappening, { kind: 'failed' }>['reason'];

/**
 * The processes of the versions the local driver runs: spawns each replica in its own process group
 * with the lifeline on fd 3, waits for its readiness, restarts it when it exits (quick retries before
 * readiness, a doubling backoff after), fails the version on a crash loop or a start timeout, and
 * stops it by signalling its group.
 */
export class Supervisor {
  /** The versions being run, by version id; an entry goes once its processes are gone. */
  readonly runs = new Map<string, Run>();

  constructor(
    private readonly settings: SupervisorSettings,
    private readonly logs: LogCapture,
    private readonly emit: (versionId: string, happening: RuntimeHappening) => void,
  ) {}

  /** A new run of `spec` with its replicas (not started yet: the source comes first). */
  open(spec: VersionSpec, secrets: LaunchSecrets): Run {
    const run: Run = { spec, secrets, dir: '', entry: '', env: {}, replicas: [], ending: false };
    this.runs.set(spec.versionId, run);
    for (let index = 0; index < spec.replicas; index++) {
      run.replicas.push({
        index,
        phase: 'starting',
        restarts: 0,
        earlyExits: [],
        backoffMs: this.settings.restartBackoffMs,
        healthFailures: 0,
        timers: new Set(),
        log: this.logs.openReplicaLog(spec.versionId, index),
        stderrTail: [],
      });
    }
    return run;
  }

  async launch(run: Run, replica: Replica): Promise<void> {
    if (run.ending) return;
    replica.phase = 'starting';
    replica.healthFailures = 0;
    replica.readyAt = undefined;
    let token: string;
    try {
      replica.port = await freePort();
      token = await run.secrets.registrationToken();
    } catch (error) {
      // The database or the port allocator failed: try again like after a crash.
      this.record(run, replica, 'stderr', `[agentctl] could not start replica ${replica.index}: ${(error as Error).message}`);
      return this.scheduleRestart(run, replica, false);
    }
    if (run.ending) return;
    const env = this.processEnv(run, replica, token);
    mkdirSync(env[PROCESS_ENV.dataRoot]!, { recursive: true });
    const child = spawn(process.execPath, ['--import', pathToFileURL(this.settings.lifelinePath).href, run.entry], {
      cwd: run.dir,
      env,
      // Its own process group: stop() signals the agent and everything it started.
      detached: true,
      stdio: ['ignore', 'pipe', 'pipe', 'pipe'],
    });
    replica.child = child;
    const started = Date.now();
    // fd 3: the lifeline. Never written; its closing is the message.
    (child.stdio[LIFELINE_FD] as NodeJS.WritableStream | null)?.on('error', () => {});
    pipeLines(child.stdout!, (line) => this.record(run, replica, 'stdout', line));
    pipeLines(child.stderr!, (line) => this.record(run, replica, 'stderr', line));
    replica.exited = new Promise<void>((done) => child.once('close', () => done()));
    child.once('error', (error) => this.record(run, replica, 'stderr', `[agentctl] could not start the agent: ${error.message}`));
    child.once('close', (code, signal) => this.onExit(run, replica, child, code, signal));
    if (child.pid !== undefined) this.emit(run.spec.versionId, { kind: 'started', replica: replica.index, pid: child.pid });
    void this.waitReady(run, replica, child, started);
  }

  /**
   * The agent's secrets changed: each replica's process is replaced, one at a time, by one started
   * with `secrets`; the next goes once the new one is ready. A replica between processes (starting
   * after a crash, backing off) takes the new secrets at its next launch.
   */
  async restart(run: Run, secrets: LaunchSecrets, graceMs: number): Promise<void> {
    run.secrets = secrets;
    for (const replica of run.replicas) {
      if (run.ending) return;
      const child = replica.child;
      if (!child) continue;
      const exited = replica.exited;
      // Detached from the replica first: its exit is a replacement, not a crash to restart after.
      replica.child = undefined;
      clearTimers(replica);
      replica.phase = 'restarting';
      this.record(run, replica, 'stderr', `[agentctl] replica ${replica.index} restarts: the agent's secrets changed`);
      await terminateProcess(child, exited, graceMs);
      // Still the old port: the reconciler stops deliveries to its address.
      this.emit(run.spec.versionId, { kind: 'replaced', replica: replica.index });
      if (run.ending) return;
      const ready = new Promise<void>((resolve) => (replica.readyWaiters ??= []).push(resolve));
      await this.launch(run, replica);
      await ready;
    }
  }

  /** The process contract (README "Running agents"): the server's chosen environment, agentctl.json's, the agent's secrets, then the platform's. */
  private processEnv(run: Run, replica: Replica, registrationToken: string): Record<string, string> {
    return {
      ...inheritedEnv(),
      ...run.env,
      ...run.secrets.agentEnv,
      [PROCESS_ENV.baseUrl]: run.secrets.baseUrl,
      [PROCESS_ENV.versionId]: run.spec.versionId,
      [PROCESS_ENV.branchId]: run.spec.branchId,
      [PROCESS_ENV.registrationToken]: registrationToken,
      [PROCESS_ENV.signingSecret]: run.secrets.signingSecret,
      [PROCESS_ENV.port]: String(replica.port),
      [PROCESS_ENV.dataRoot]: join(this.settings.dataDir, run.spec.versionId, String(replica.index)),
      [PROCESS_ENV.replica]: String(replica.index),
    };
  }

  private async waitReady(run: Run, replica: Replica, child: ChildProcess, started: number) {
    const { startTimeoutMs } = this.settings;
    const current = () => !run.ending && replica.child === child;
    const outcome = await waitUntilReady(replica.port!, started, startTimeoutMs, () => current() && child.exitCode === null && child.signalCode === null);
    if (outcome === 'timed_out') {
      return this.fail(run, 'start_timeout', {
        title: 'The agent did not become ready',
        description: `Replica ${replica.index} of ${run.spec.agentName} did not answer GET /healthz on its PORT within ${Math.round(startTimeoutMs / 1000)} s. ${this.lastLines(run)}`,
        action: `Make the agent listen on the port in the PORT environment variable and answer GET /healthz with 200; see \`agentctl logs ${run.spec.versionId}\`.`,
      });
    }
    if (outcome === 'gone' || !current()) return;
    replica.phase = 'ready';
    replica.readyAt = Date.now();
    replica.earlyExits = [];
    this.emit(run.spec.versionId, { kind: 'ready', replica: replica.index });
    wakeReadyWaiters(replica);
    later(replica, STABLE_AFTER_MS, () => (replica.backoffMs = this.settings.restartBackoffMs));
    watchHealth(replica, {
      intervalMs: this.settings.healthIntervalMs,
      failuresAllowed: this.settings.healthFailures,
      current,
      report: (happening) => this.emit(run.spec.versionId, happening),
    });
  }

  private onExit(run: Run, replica: Replica, child: ChildProcess, code: number | null, signal: NodeJS.Signals | null) {
    if (replica.child !== child) return;
    replica.child = undefined;
    clearTimers(replica);
    if (run.ending) {
      replica.phase = replica.phase === 'failed' ? 'failed' : 'stopped';
      return;
    }
    const { crashLoopExits, crashLoopWindowMs } = this.settings;
    const wasReady = replica.readyAt !== undefined;
    if (!wasReady) {
      const now = Date.now();
      replica.earlyExits = [...replica.earlyExits.filter((t) => now - t < crashLoopWindowMs), now];
    }
    const crashLoop = !wasReady && replica.earlyExits.length >= crashLoopExits;
    this.emit(run.spec.versionId, { kind: 'crashed', replica: replica.index, exitCode: code, signal, willRestart: !crashLoop });
    if (crashLoop) {
      return this.fail(run, 'crash_loop', {
        title: 'The agent keeps exiting at start',
        description: `Replica ${replica.index} of ${run.spec.agentName} exited ${replica.earlyExits.length} times within ${Math.round(crashLoopWindowMs / 1000)} s before it became ready (last exit: ${signal ? `signal ${signal}` : `code ${code}`}). ${this.lastLines(run)}`,
        action: `Fix the error above (run the entry locally with \`node ${run.entry}\`), commit and deploy again; \`agentctl logs ${run.spec.versionId}\` shows everything it wrote.`,
      });
    }
    this.record(run, replica, 'stderr', `[agentctl] replica ${replica.index} exited (${signal ? `signal ${signal}` : `code ${code}`}); restarting`);
    this.scheduleRestart(run, replica, !wasReady);
  }

  /** Before readiness, quick retries (a crash loop must show within its window); after, the doubling backoff. */
  private scheduleRestart(run: Run, replica: Replica, early: boolean) {
    if (run.ending) return;
    replica.phase = 'restarting';
    replica.restarts += 1;
    let wait: number;
    if (early && replica.earlyExits.length > 0) {
      wait = Math.min(100 * 2 ** (replica.earlyExits.length - 1), 2_000);
    } else {
      wait = replica.backoffMs;
      replica.backoffMs = Math.min(replica.backoffMs * 2, this.settings.restartBackoffMaxMs);
    }
    later(replica, wait, () => void this.launch(run, replica));
  }

  /** Ends the run for good and reports `failed`; its processes are killed and the entry goes once they are gone. */
  fail(run: Run, reason: FailureReason, diagnostics: FailureDiagnostics) {
    if (run.ending) return;
    run.ending = true;
    for (const replica of run.replicas) {
      clearTimers(replica);
      replica.phase = 'failed';
      wakeReadyWaiters(replica);
    }
    // The entry goes away once its processes are gone, so a later start() tries afresh.
    void Promise.all(run.replicas.map((r) => terminate(r, 0))).then(() => {
      for (const r of run.replicas) r.log.close();
      if (this.runs.get(run.spec.versionId) === run) this.runs.delete(run.spec.versionId);
    });
    this.emit(run.spec.versionId, { kind: 'failed', reason, diagnostics });
  }

  /** SIGTERM to every replica's process group, SIGKILL after `graceMs`; reports `stopped` once all are gone. */
  async stop(run: Run, graceMs: number) {
    const versionId = run.spec.versionId;
    run.ending = true;
    for (const replica of run.replicas) {
      clearTimers(replica);
      wakeReadyWaiters(replica);
    }
    await Promise.all(run.replicas.map((replica) => terminate(replica, graceMs)));
    for (const replica of run.replicas) {
      replica.phase = 'stopped';
      replica.log.close();
    }
    if (this.runs.get(versionId) === run) this.runs.delete(versionId);
    this.emit(versionId, { kind: 'stopped' });
  }

  record(run: Run, replica: Replica, stream: 'stdout' | 'stderr', line: string) {
    this.logs.record(run.spec.versionId, replica, stream, line);
  }

  private lastLines(run: Run): string {
    const tail = run.replicas.flatMap((r) => r.stderrTail).slice(-DIAGNOSTIC_LINES);
    return tail.length > 0 ? `Last lines of stderr:\n${tail.join('\n')}` : 'The agent wrote nothing to stderr.';
  }
}

/** Signals the replica's process group (SIGKILL at once with no grace) and resolves when its process has closed. */
async function terminate(replica: Replica, graceMs: number): Promise<void> {
  if (replica.child) await terminateProcess(replica.child, replica.exited, graceMs);
}

async function terminateProcess(child: ChildProcess, exited: Promise<void> | undefined, graceMs: number): Promise<void> {
  if (child.pid === undefined || child.exitCode !== null || child.signalCode !== null) return;
  signalGroup(child.pid, graceMs > 0 ? 'SIGTERM' : 'SIGKILL');
  if (graceMs > 0) {
    const timer = setTimeout(() => signalGroup(child.pid!, 'SIGKILL'), graceMs);
    await exited;
    clearTimeout(timer);
  } else {
    await exited;
  }
}
