import { spawn, type ChildProcess } from 'node:child_process';
import { EventEmitter, once } from 'node:events';
import { existsSync, mkdirSync, readFileSync, renameSync, rmSync, symlinkSync, writeFileSync, lstatSync } from 'node:fs';
import { createServer } from 'node:net';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { AGENT_PROJECT_FILE } from '../../../contract/agent-project.js';
import {
  PROCESS_ENV,
  type FailureDiagnostics,
  type LaunchSecrets,
  type LogLine,
  type LogQuery,
  type ReplicaStatus,
  type RuntimeDriver,
  type RuntimeHappening,
  type VersionRuntimeStatus,
  type VersionSpec,
} from '../driver.js';
import { LIFELINE_FD, LIFELINE_SOURCE } from './lifeline.js';
import { ReplicaLog, readVersionLogs, type RotationOptions } from './log-files.js';

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
/** Lines of stderr kept for failure diagnostics. */
const DIAGNOSTIC_LINES = 20;
/** Readiness polling: starts fast (a quick agent is ready within milliseconds), backs off to this. */
const READY_POLL_MAX_MS = 250;
/** A ready replica that stays up this long gets its restart backoff reset. */
const STABLE_AFTER_MS = 60_000;
/** The environment of the server that agents inherit; everything else (keys, DATABASE_URL) stays out. */
const INHERITED_ENV = [
  'PATH',
  'HOME',
  'USER',
  'LANG',
  'LC_ALL',
  'TZ',
  'TMPDIR',
  'HTTPS_PROXY',
  'HTTP_PROXY',
  'NO_PROXY',
  'https_proxy',
  'http_proxy',
  'no_proxy',
  'NODE_EXTRA_CA_CERTS',
];

interface Replica {
  index: number;
  phase: ReplicaStatus['phase'];
  child?: ChildProcess;
  port?: number;
  restarts: number;
  /** Exit times before readiness, for crash-loop detection. */
  earlyExits: number[];
  backoffMs: number;
  healthFailures: number;
  readyAt?: number;
  timers: Set<NodeJS.Timeout>;
  log: ReplicaLog;
  stderrTail: string[];
  exited?: Promise<void>;
}

interface Run {
  spec: VersionSpec;
  secrets: LaunchSecrets;
  dir: string;
  entry: string;
  env: Record<string, string>;
  replicas: Replica[];
  /** Set by stop() and by a failure: nothing restarts any more. */
  ending: boolean;
}

/** The `local` runtime: every replica a Node child process on a loopback port (README "Local runtime and logs"). */
export function createLocalDriver(options: LocalDriverOptions): RuntimeDriver {
  const root = join(resolve(options.dataDir), 'runtime');
  const healthIntervalMs = options.healthIntervalMs ?? 5_000;
  const healthFailures = options.healthFailures ?? 3;
  const startTimeoutMs = options.startTimeoutMs ?? 60_000;
  const crashLoopExits = options.crashLoopExits ?? 5;
  const crashLoopWindowMs = options.crashLoopWindowMs ?? 60_000;
  const restartBackoffMs = options.restartBackoffMs ?? 1_000;
  const restartBackoffMaxMs = options.restartBackoffMaxMs ?? 30_000;
  const stopGraceMs = options.stopGraceMs ?? 10_000;
  const buildTimeoutMs = options.buildTimeoutMs ?? 300_000;
  const rotation: RotationOptions = { maxBytes: 10 * 1024 * 1024, keep: 2, ...options.rotation };
  const agentctlRoot = options.agentctlRoot ?? findPackageRoot();

  mkdirSync(root, { recursive: true });
  const lifelinePath = join(root, 'lifeline.mjs');
  writeFileSync(lifelinePath, LIFELINE_SOURCE);

  const runs = new Map<string, Run>();
  const lines = new EventEmitter();
  lines.setMaxListeners(0);
  /** Aborted by close(): followers of logs end with the driver. */
  const closing = new AbortController();
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
  const logDir = (versionId: string) => join(root, 'logs', versionId);

  function record(run: Run, replica: Replica, stream: 'stdout' | 'stderr', line: string) {
    const entry: LogLine = { versionId: run.spec.versionId, replica: replica.index, stream, time: new Date().toISOString(), line };
    replica.log.write(stream, entry.time, line);
    if (stream === 'stderr') {
      replica.stderrTail.push(line);
      if (replica.stderrTail.length > DIAGNOSTIC_LINES) replica.stderrTail.shift();
    }
    lines.emit(run.spec.versionId, entry);
  }

  function later(replica: Replica, ms: number, fn: () => void) {
    const timer = setTimeout(() => {
      replica.timers.delete(timer);
      fn();
    }, ms);
    replica.timers.add(timer);
  }

  function clearTimers(replica: Replica) {
    for (const timer of replica.timers) clearTimeout(timer);
    replica.timers.clear();
  }

  function fail(run: Run, reason: Extract<RuntimeHappening, { kind: 'failed' }>['reason'], diagnostics: FailureDiagnostics) {
    if (run.ending) return;
    run.ending = true;
    for (const replica of run.replicas) {
      clearTimers(replica);
      replica.phase = 'failed';
    }
    // The entry goes away once its processes are gone, so a later start() tries afresh.
    void Promise.all(run.replicas.map((r) => terminate(r, 0))).then(() => {
      for (const r of run.replicas) r.log.close();
      if (runs.get(run.spec.versionId) === run) runs.delete(run.spec.versionId);
    });
    emit(run.spec.versionId, { kind: 'failed', reason, diagnostics });
  }

  function lastLines(run: Run): string {
    const tail = run.replicas.flatMap((r) => r.stderrTail).slice(-DIAGNOSTIC_LINES);
    return tail.length > 0 ? `Last lines of stderr:\n${tail.join('\n')}` : 'The agent wrote nothing to stderr.';
  }

  async function launch(run: Run, replica: Replica): Promise<void> {
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
      record(run, replica, 'stderr', `[agentctl] could not start replica ${replica.index}: ${(error as Error).message}`);
      return scheduleRestart(run, replica, false);
    }
    if (run.ending) return;
    const env: Record<string, string> = {
      ...inheritedEnv(),
      ...run.env,
      [PROCESS_ENV.baseUrl]: run.secrets.baseUrl,
      [PROCESS_ENV.versionId]: run.spec.versionId,
      [PROCESS_ENV.branchId]: run.spec.branchId,
      [PROCESS_ENV.registrationToken]: token,
      [PROCESS_ENV.signingSecret]: run.secrets.signingSecret,
      [PROCESS_ENV.port]: String(replica.port),
      [PROCESS_ENV.dataRoot]: join(root, 'data', run.spec.versionId, String(replica.index)),
      [PROCESS_ENV.replica]: String(replica.index),
    };
    mkdirSync(env[PROCESS_ENV.dataRoot]!, { recursive: true });
    const child = spawn(process.execPath, ['--import', pathToFileURL(lifelinePath).href, run.entry], {
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
    pipeLines(child.stdout!, (line) => record(run, replica, 'stdout', line));
    pipeLines(child.stderr!, (line) => record(run, replica, 'stderr', line));
    replica.exited = new Promise<void>((done) => child.once('close', () => done()));
    child.once('error', (error) => record(run, replica, 'stderr', `[agentctl] could not start the agent: ${error.message}`));
    child.once('close', (code, signal) => onExit(run, replica, child, code, signal));
    if (child.pid !== undefined) emit(run.spec.versionId, { kind: 'started', replica: replica.index, pid: child.pid });
    void waitReady(run, replica, child, started);
  }

  async function waitReady(run: Run, replica: Replica, child: ChildProcess, started: number) {
    let delay = 5;
    while (!run.ending && replica.child === child && child.exitCode === null && child.signalCode === null) {
      if (Date.now() - started > startTimeoutMs) {
        return fail(run, 'start_timeout', {
          title: 'The agent did not become ready',
          description: `Replica ${replica.index} of ${run.spec.agentName} did not answer GET /healthz on its PORT within ${Math.round(startTimeoutMs / 1000)} s. ${lastLines(run)}`,
          action: `Make the agent listen on the port in the PORT environment variable and answer GET /healthz with 200; see \`agentctl logs ${run.spec.versionId}\`.`,
        });
      }
      if (await healthy(replica.port!, Math.min(2_000, startTimeoutMs))) {
        if (run.ending || replica.child !== child) return;
        replica.phase = 'ready';
        replica.readyAt = Date.now();
        replica.earlyExits = [];
        emit(run.spec.versionId, { kind: 'ready', replica: replica.index });
        later(replica, STABLE_AFTER_MS, () => (replica.backoffMs = restartBackoffMs));
        scheduleHealthCheck(run, replica, child);
        return;
      }
      await sleep(delay);
      delay = Math.min(delay * 2, READY_POLL_MAX_MS);
    }
  }

  function scheduleHealthCheck(run: Run, replica: Replica, child: ChildProcess) {
    later(replica, healthIntervalMs, async () => {
      if (run.ending || replica.child !== child) return;
      const ok = await healthy(replica.port!, Math.min(2_000, healthIntervalMs));
      if (run.ending || replica.child !== child) return;
      if (ok) {
        replica.healthFailures = 0;
        if (replica.phase === 'unhealthy') {
          replica.phase = 'ready';
          emit(run.spec.versionId, { kind: 'recovered', replica: replica.index });
        }
      } else if (++replica.healthFailures >= healthFailures && replica.phase === 'ready') {
        replica.phase = 'unhealthy';
        emit(run.spec.versionId, { kind: 'unhealthy', replica: replica.index, detail: `GET /healthz failed ${replica.healthFailures} times in a row` });
      }
      scheduleHealthCheck(run, replica, child);
    });
  }

  function onExit(run: Run, replica: Replica, child: ChildProcess, code: number | null, signal: NodeJS.Signals | null) {
    if (replica.child !== child) return;
    replica.child = undefined;
    clearTimers(replica);
    if (run.ending) {
      replica.phase = replica.phase === 'failed' ? 'failed' : 'stopped';
      return;
    }
    const wasReady = replica.readyAt !== undefined;
    if (!wasReady) {
      const now = Date.now();
      replica.earlyExits = [...replica.earlyExits.filter((t) => now - t < crashLoopWindowMs), now];
    }
    const crashLoop = !wasReady && replica.earlyExits.length >= crashLoopExits;
    emit(run.spec.versionId, { kind: 'crashed', replica: replica.index, exitCode: code, signal, willRestart: !crashLoop });
    if (crashLoop) {
      return fail(run, 'crash_loop', {
        title: 'The agent keeps exiting at start',
        description: `Replica ${replica.index} of ${run.spec.agentName} exited ${replica.earlyExits.length} times within ${Math.round(crashLoopWindowMs / 1000)} s before it became ready (last exit: ${signal ? `signal ${signal}` : `code ${code}`}). ${lastLines(run)}`,
        action: `Fix the error above (run the entry locally with \`node ${run.entry}\`), commit and deploy again; \`agentctl logs ${run.spec.versionId}\` shows everything it wrote.`,
      });
    }
    record(run, replica, 'stderr', `[agentctl] replica ${replica.index} exited (${signal ? `signal ${signal}` : `code ${code}`}); restarting`);
    scheduleRestart(run, replica, !wasReady);
  }

  /** Before readiness, quick retries (a crash loop must show within its window); after, the doubling backoff. */
  function scheduleRestart(run: Run, replica: Replica, early: boolean) {
    if (run.ending) return;
    replica.phase = 'restarting';
    replica.restarts += 1;
    let wait: number;
    if (early && replica.earlyExits.length > 0) {
      wait = Math.min(100 * 2 ** (replica.earlyExits.length - 1), 2_000);
    } else {
      wait = replica.backoffMs;
      replica.backoffMs = Math.min(replica.backoffMs * 2, restartBackoffMaxMs);
    }
    later(replica, wait, () => void launch(run, replica));
  }

  async function terminate(replica: Replica, graceMs: number): Promise<void> {
    const child = replica.child;
    if (!child || child.pid === undefined || child.exitCode !== null || child.signalCode !== null) return;
    signalGroup(child.pid, graceMs > 0 ? 'SIGTERM' : 'SIGKILL');
    if (graceMs > 0) {
      const timer = setTimeout(() => signalGroup(child.pid!, 'SIGKILL'), graceMs);
      await replica.exited;
      clearTimeout(timer);
    } else {
      await replica.exited;
    }
  }

  async function prepare(spec: VersionSpec): Promise<{ dir: string; entry: string; env: Record<string, string> }> {
    const versionDir = join(root, 'versions', spec.versionId);
    const dir = join(versionDir, 'source');
    // Prepared once per version (a server restart reuses it): into a staging directory, renamed when complete.
    if (!existsSync(join(versionDir, '.prepared'))) {
      rmSync(versionDir, { recursive: true, force: true });
      const staging = join(root, 'versions', `.${spec.versionId}.${process.pid}.${Date.now()}`);
      mkdirSync(staging, { recursive: true });
      try {
        try {
          await options.prepareSource(spec, staging);
        } catch (error) {
          throw new PrepareFailure('source_unavailable', {
            title: 'The source of the version could not be prepared',
            description: `${spec.imageUrl}: ${(error as Error).message}`,
            action: 'Deploy again from the agent’s repository (`agentctl deploy`).',
          });
        }
        await installDependencies(staging, spec);
        const build = spec.build ?? readProjectFile(staging).build;
        if (build) await runBuild(staging, build, spec);
        mkdirSync(versionDir, { recursive: true });
        renameSync(staging, dir);
        writeFileSync(join(versionDir, '.prepared'), new Date().toISOString());
      } finally {
        rmSync(staging, { recursive: true, force: true });
      }
    }
    const project = readProjectFile(dir);
    const entry = spec.entry ?? project.entry ?? 'src/index.ts';
    if (!existsSync(join(dir, entry))) {
      throw new PrepareFailure('source_unavailable', {
        title: 'The entry file is missing',
        description: `${entry} is not in the source of version ${spec.versionId}.`,
        action: `Set "entry" in ${AGENT_PROJECT_FILE} to the file Node should run, commit and deploy again.`,
      });
    }
    return { dir, entry, env: { ...project.env, ...spec.env } };
  }

  async function installDependencies(dir: string, spec: VersionSpec) {
    const manifestPath = join(dir, 'package.json');
    let manifest: Record<string, unknown> | undefined;
    if (existsSync(manifestPath)) {
      try {
        manifest = JSON.parse(readFileSync(manifestPath, 'utf8')) as Record<string, unknown>;
      } catch (error) {
        throw new PrepareFailure('build_failed', {
          title: 'package.json is not valid JSON',
          description: (error as Error).message,
          action: 'Fix package.json, commit and deploy again.',
        });
      }
    }
    const dependencies = { ...(manifest?.dependencies as Record<string, string> | undefined) };
    delete dependencies.agentctl;
    if (manifest && Object.keys(dependencies).length > 0) {
      // agentctl itself is never installed (it is the running package, linked below): npm sees a
      // manifest without it, and the real one is put back afterwards.
      const original = readFileSync(manifestPath);
      writeFileSync(manifestPath, JSON.stringify({ ...manifest, dependencies, devDependencies: {} }));
      try {
        await runCommand('npm', ['install', '--omit=dev', '--no-audit', '--no-fund', '--prefer-offline', '--no-package-lock'], dir, spec, 'npm install');
      } finally {
        writeFileSync(manifestPath, original);
      }
    }
    const link = join(dir, 'node_modules', 'agentctl');
    mkdirSync(dirname(link), { recursive: true });
    if (!isLink(link)) {
      rmSync(link, { recursive: true, force: true });
      symlinkSync(agentctlRoot, link, 'dir');
    }
  }

  async function runBuild(dir: string, build: string, spec: VersionSpec) {
    await runCommand('sh', ['-c', build], dir, spec, `the build command (${build})`);
  }

  async function runCommand(command: string, args: string[], dir: string, spec: VersionSpec, what: string) {
    const output: string[] = [];
    const child = spawn(command, args, { cwd: dir, env: { ...inheritedEnv(), ...spec.env }, detached: true, stdio: ['ignore', 'pipe', 'pipe'] });
    pipeLines(child.stdout!, (line) => output.push(line));
    pipeLines(child.stderr!, (line) => output.push(line));
    const timer = setTimeout(() => child.pid && signalGroup(child.pid, 'SIGKILL'), buildTimeoutMs);
    const [code] = (await once(child, 'close').catch(() => [null])) as [number | null];
    clearTimeout(timer);
    if (code !== 0) {
      throw new PrepareFailure('build_failed', {
        title: `${what} failed`,
        description: `${what} exited with ${code === null ? 'a signal or a timeout' : `code ${code}`}. Last lines:\n${output.slice(-DIAGNOSTIC_LINES).join('\n')}`,
        action: `Run ${what} in the agent’s repository, fix what fails, commit and deploy again.`,
      });
    }
  }

  const driver: RuntimeDriver = {
    name: 'local',
    replicasEndWithServer: true,

    canRun: (spec) => spec.imageUrl.startsWith(LOCAL_SOURCE_PREFIX),

    async start(spec, secrets) {
      if (runs.has(spec.versionId)) return;
      const run: Run = { spec, secrets, dir: '', entry: '', env: {}, replicas: [], ending: false };
      runs.set(spec.versionId, run);
      for (let index = 0; index < spec.replicas; index++) {
        run.replicas.push({
          index,
          phase: 'starting',
          restarts: 0,
          earlyExits: [],
          backoffMs: restartBackoffMs,
          healthFailures: 0,
          timers: new Set(),
          log: new ReplicaLog(logDir(spec.versionId), index, rotation),
          stderrTail: [],
        });
      }
      try {
        const prepared = await prepare(spec);
        Object.assign(run, prepared);
      } catch (error) {
        const failure =
          error instanceof PrepareFailure
            ? error
            : new PrepareFailure('source_unavailable', {
                title: 'The version could not be prepared',
                description: (error as Error).message,
                action: 'Deploy again; if it persists, check the server’s data directory.',
              });
        for (const line of failure.diagnostics.description.split('\n')) record(run, run.replicas[0]!, 'stderr', line);
        fail(run, failure.reason, failure.diagnostics);
        return;
      }
      if (run.ending) return;
      await Promise.all(run.replicas.map((replica) => launch(run, replica)));
    },

    async stop(versionId, stopOptions = {}) {
      const run = runs.get(versionId);
      if (!run) return;
      run.ending = true;
      for (const replica of run.replicas) clearTimers(replica);
      await Promise.all(run.replicas.map((replica) => terminate(replica, stopOptions.graceMs ?? stopGraceMs)));
      for (const replica of run.replicas) {
        replica.phase = 'stopped';
        replica.log.close();
      }
      if (runs.get(versionId) === run) runs.delete(versionId);
      emit(versionId, { kind: 'stopped' });
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
      return followLogs(versionId, query);
    },

    onHappening(listener) {
      listeners.push(listener);
    },

    async close() {
      closing.abort();
      await Promise.all([...runs.keys()].map((id) => driver.stop(id, { graceMs: Math.min(stopGraceMs, 5_000) })));
    },
  };

  async function* followLogs(versionId: string, query: LogQuery): AsyncGenerator<LogLine> {
    const queue: LogLine[] = [];
    let wake: (() => void) | undefined;
    const onLine = (line: LogLine) => {
      queue.push(line);
      wake?.();
    };
    // Read and subscribe in one synchronous step: writes are synchronous too, so no line is missed or repeated.
    if (query.follow) lines.on(versionId, onLine);
    const onAbort = () => wake?.();
    query.signal?.addEventListener('abort', onAbort);
    closing.signal.addEventListener('abort', onAbort);
    try {
      let stored = readVersionLogs(logDir(versionId), versionId);
      if (query.since) {
        const since = query.since.toISOString();
        stored = stored.filter((l) => l.time >= since);
      }
      const tail = Math.max(0, query.tail ?? 100);
      yield* tail === 0 ? [] : stored.slice(-tail);
      if (!query.follow) return;
      while (!query.signal?.aborted && !closing.signal.aborted) {
        if (queue.length > 0) {
          yield queue.shift()!;
          continue;
        }
        await new Promise<void>((done) => (wake = done));
        wake = undefined;
      }
    } finally {
      lines.off(versionId, onLine);
      query.signal?.removeEventListener('abort', onAbort);
      closing.signal.removeEventListener('abort', onAbort);
    }
  }

  return driver;
}

class PrepareFailure extends Error {
  constructor(
    readonly reason: Extract<RuntimeHappening, { kind: 'failed' }>['reason'],
    readonly diagnostics: FailureDiagnostics,
  ) {
    super(diagnostics.title);
  }
}

function readProjectFile(dir: string): { entry?: string; build?: string; env: Record<string, string> } {
  const path = join(dir, AGENT_PROJECT_FILE);
  if (!existsSync(path)) return { env: {} };
  try {
    const raw = JSON.parse(readFileSync(path, 'utf8')) as { entry?: unknown; build?: unknown; env?: unknown };
    const env: Record<string, string> = {};
    if (raw.env && typeof raw.env === 'object') {
      for (const [name, value] of Object.entries(raw.env)) if (typeof value === 'string') env[name] = value;
    }
    return {
      entry: typeof raw.entry === 'string' && raw.entry ? raw.entry : undefined,
      build: typeof raw.build === 'string' && raw.build ? raw.build : undefined,
      env,
    };
  } catch (error) {
    throw new PrepareFailure('build_failed', {
      title: `${AGENT_PROJECT_FILE} is not valid JSON`,
      description: (error as Error).message,
      action: `Fix ${AGENT_PROJECT_FILE}, commit and deploy again.`,
    });
  }
}

function inheritedEnv(): Record<string, string> {
  const env: Record<string, string> = {};
  for (const name of INHERITED_ENV) if (process.env[name] !== undefined) env[name] = process.env[name]!;
  return env;
}

function isLink(path: string): boolean {
  try {
    return lstatSync(path).isSymbolicLink();
  } catch {
    return false;
  }
}

function signalGroup(pid: number, signal: NodeJS.Signals) {
  try {
    process.kill(-pid, signal);
  } catch {
    try {
      process.kill(pid, signal);
    } catch {
      // Already gone.
    }
  }
}

function pipeLines(stream: NodeJS.ReadableStream, onLine: (line: string) => void) {
  let partial = '';
  stream.setEncoding('utf8');
  stream.on('data', (chunk: string) => {
    const parts = (partial + chunk).split('\n');
    partial = parts.pop()!;
    for (const part of parts) onLine(part.replace(/\r$/, ''));
  });
  stream.on('end', () => {
    if (partial) onLine(partial);
    partial = '';
  });
  stream.on('error', () => {});
}

async function healthy(port: number, timeoutMs: number): Promise<boolean> {
  try {
    const response = await fetch(`http://127.0.0.1:${port}/healthz`, { signal: AbortSignal.timeout(timeoutMs) });
    await response.body?.cancel();
    return response.ok;
  } catch {
    return false;
  }
}

function freePort(): Promise<number> {
  return new Promise((done, reject) => {
    const server = createServer();
    server.unref();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const port = (server.address() as { port: number }).port;
      server.close(() => done(port));
    });
  });
}

const sleep = (ms: number) => new Promise((done) => setTimeout(done, ms));

/** The directory of the running agentctl package: the nearest package.json named agentctl above this file. */
function findPackageRoot(): string {
  let dir = dirname(fileURLToPath(import.meta.url));
  for (;;) {
    const manifest = join(dir, 'package.json');
    if (existsSync(manifest)) {
      try {
        if ((JSON.parse(readFileSync(manifest, 'utf8')) as { name?: string }).name === 'agentctl') return dir;
      } catch {
        // keep looking
      }
    }
    const parent = dirname(dir);
    if (parent === dir) throw new Error('The agentctl package root was not found above the running code');
    dir = parent;
  }
}
