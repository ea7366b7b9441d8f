// `agentctl dev`'s agent process: started from the work tree the way the local runtime starts a
// replica (src/agent-process: a free loopback PORT, its own process group, the lifeline on fd 3,
// ready when GET /healthz answers), restarted on save, and handed the deliveries the dev stream
// brings, as the dispatcher would POST them. A new process takes over only once it is healthy: one
// that fails to start (a syntax error) leaves the last good one serving. Deliveries that arrive
// while a restart is under way wait for its outcome and go to whichever process serves after it.
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { GO_FD, warmSource } from './warm.js';
import { freePort, pipeLines, signalGroup } from '../../agent-process/child-processes.js';
import { waitUntilReady } from '../../agent-process/health.js';
import { LIFELINE_FD, LIFELINE_SOURCE } from '../../agent-process/lifeline.js';
import { ACP_PATH, SIGNATURE_HEADER } from '../../contract/acp.js';
import type { PulledDelivery } from '../../contract/conversation.js';

/** What the agent answered a delivery: its HTTP status and body, or why it could not be asked. */
export type AgentAnswer = { status_code: number; body: string } | { error: string };

export interface RunnerOptions {
  root: string;
  entry: string;
  /** agentctl.json's `build`, run in `root` before each start. */
  build?: string;
  /** The process environment (the process contract but PORT). */
  env: Record<string, string>;
  /** Where the lifeline and warm-up preloads are written. */
  stateDir: string;
  /** Modules (file URLs) the next process loads ahead of the save that starts it: the ADK, undici. */
  warm?: string[];
  startTimeoutMs?: number;
  /** SIGTERM-to-SIGKILL grace of a replaced process (its running handlers finish meanwhile). */
  stopGraceMs?: number;
  /** A line the agent wrote. */
  output(pid: number, stream: 'stdout' | 'stderr', line: string): void;
  /** What the runner says about itself. */
  note(kind: 'info' | 'ok' | 'error', text: string): void;
  /** What it says under --debug (the spare process is loaded). */
  debug?(text: string): void;
  /** Reports an agent's answer to the server (under the delivery's latest claim). */
  answer(delivery: PulledDelivery, answer: AgentAnswer): Promise<void>;
}

interface Child {
  process: ChildProcess;
  /** Where the go line is written (the port to listen on); closed once written. */
  go: NodeJS.WritableStream | null;
  pid: number;
  port: number;
  exited: Promise<void>;
  gone: boolean;
  /** How it exited (`code 1`, `signal SIGTERM`), once gone. */
  exit: string;
  stderrTail: string[];
}

interface Entry {
  /** The latest copy (a re-claimed delivery comes again with a new claim). */
  delivery: PulledDelivery;
  /** Being sent to a process now. */
  sending: boolean;
}

const TAIL_LINES = 20;
/** Reports of an answer (each with the client's own retries), 2 s apart once backed off: over a minute, a pull claim's length. */
const ANSWER_ATTEMPTS = 20;

/** A server that is away (unreachable, restarting: 5xx) may take the report later; a 4xx will not. */
const retriable = (error: unknown) => {
  const status = (error as { status?: number }).status;
  return typeof status !== 'number' || status >= 500 || status === 429;
};
/** Readiness is polled this often (a loopback GET): a restart in well under a second is the point of dev. */
const READY_POLL_MS = 5;
/**
 * The next spare starts this long after a start, not at once: the new process answers the deliveries
 * queued during the restart meanwhile, without a Node start beside it for the CPU. A developer's next
 * save comes seconds later.
 */
const SPARE_DELAY_MS = 300;

export class AgentRunner {
  private current: Child | undefined;
  private reloading = false;
  private pendingReason: string | undefined;
  private stopped = false;
  private crashRestarts = 0;
  private readonly entries = new Map<string, Entry>();
  private readonly lifeline: string;
  private readonly warmPreload: string;
  /** The next process: started, its modules loaded, waiting for a go to load the entry. */
  private spare: Child | undefined;
  private spareTimer: NodeJS.Timeout | undefined;
  /** Resolves when the process of the moment changes (for the benchmark and tests: `ready()`). */
  private readyWaiters: Array<() => void> = [];

  constructor(private readonly options: RunnerOptions) {
    mkdirSync(options.stateDir, { recursive: true });
    this.lifeline = path.join(options.stateDir, 'lifeline.mjs');
    writeFileSync(this.lifeline, LIFELINE_SOURCE);
    this.warmPreload = path.join(options.stateDir, 'warm.mjs');
    writeFileSync(this.warmPreload, warmSource(options.warm ?? []));
  }

  get pid(): number | undefined {
    return this.current?.pid;
  }

  /** Starts (or restarts) the agent; resolves once the attempt is decided. */
  async reload(reason: string): Promise<void> {
    if (this.stopped) return;
    if (this.reloading) {
      // A save during a start: one more start once this one is decided, with the newest files.
      this.pendingReason = reason;
      return;
    }
    this.reloading = true;
    try {
      const started = Date.now();
      this.options.note('info', `${reason}: starting the agent`);
      const outcome = await this.startChild();
      if (this.stopped) {
        if ('child' in outcome) await this.terminate(outcome.child, 0);
        return;
      }
      if ('child' in outcome) {
        const previous = this.current;
        this.current = outcome.child;
        this.options.note('ok', `agent ready in ${Date.now() - started} ms (pid ${outcome.child.pid}, port ${outcome.child.port})`);
        if (previous) void this.terminate(previous, this.options.stopGraceMs ?? 10_000);
        for (const wake of this.readyWaiters.splice(0)) wake();
      } else {
        const still = this.current ? `still serving the previous process (pid ${this.current.pid})` : 'no process serves until the next save';
        this.options.note('error', `${outcome.error}; ${still}`);
      }
      this.prepareSpare();
    } finally {
      this.reloading = false;
    }
    this.pump();
    if (this.pendingReason !== undefined && !this.stopped) {
      const next = this.pendingReason;
      this.pendingReason = undefined;
      await this.reload(next);
    }
  }

  /** Resolves when a process started after this call is serving. */
  nextReady(): Promise<void> {
    return new Promise((resolve) => this.readyWaiters.push(resolve));
  }

  /** A delivery from the dev stream: sent to the serving process (now, or once one serves). */
  deliver(delivery: PulledDelivery): void {
    const known = this.entries.get(delivery.delivery_id);
    if (known) {
      // Sent again (its claim ran out, or the stream reconnected): the answer goes under the new claim.
      known.delivery = delivery;
      if (!known.sending) this.pump();
      return;
    }
    this.entries.set(delivery.delivery_id, { delivery, sending: false });
    this.pump();
  }

  private pump(): void {
    if (this.reloading || this.stopped) return;
    const child = this.current;
    if (!child || child.gone) return;
    for (const [id, entry] of this.entries) {
      if (entry.sending) continue;
      entry.sending = true;
      void this.send(id, entry, child);
    }
  }

  private async send(id: string, entry: Entry, child: Child): Promise<void> {
    const { delivery } = entry;
    let answer: AgentAnswer;
    try {
      const response = await fetch(`http://127.0.0.1:${child.port}${ACP_PATH}`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', [SIGNATURE_HEADER]: delivery.signature },
        body: delivery.body,
        signal: AbortSignal.timeout(30_000),
      });
      answer = { status_code: response.status, body: await response.text() };
    } catch (error) {
      entry.sending = false;
      // The process went away under it (a restart, a crash): the next one that serves gets it.
      if (child.gone || child !== this.current) {
        this.pump();
        return;
      }
      answer = { error: (error as { cause?: { code?: string } }).cause?.code ?? (error as Error).message };
    }
    // A 503 from a process told to stop (SIGTERM: it takes no new work) is a restart too.
    if ('status_code' in answer && answer.status_code === 503 && (child.gone || child !== this.current)) {
      entry.sending = false;
      this.pump();
      return;
    }
    this.entries.delete(id);
    // Reported until the server takes it: one stopped and started again mid-report still holds the
    // delivery under this claim (nothing released it), and would otherwise wait for the claim to run
    // out (a minute) before sending it again, the task's next deliveries behind it.
    for (let attempt = 1; ; attempt++) {
      try {
        await this.options.answer(entry.delivery, answer);
        return;
      } catch (error) {
        if (this.stopped || !retriable(error) || attempt >= ANSWER_ATTEMPTS) {
          // The server sends it again once the claim runs out; the agent answers a repeat without running it again.
          this.options.note('error', `could not report delivery ${id} answered: ${(error as Error).message}`);
          return;
        }
        await new Promise((resolve) => setTimeout(resolve, Math.min(250 * 2 ** (attempt - 1), 2_000)));
      }
    }
  }

  private async startChild(): Promise<{ child: Child } | { error: string }> {
    const { options } = this;
    if (options.build) {
      const built = await runBuild(options.build, options.root, options.env);
      if (built) return { error: `the build command failed (${built})` };
    }
    // The spare started after the last start has Node and the ADK loaded already: it only loads the
    // entry (read now, so the newest files). Without one (the first start, a spare that died), a new process.
    clearTimeout(this.spareTimer);
    this.spareTimer = undefined;
    const spare = this.spare && !this.spare.gone ? this.spare : undefined;
    this.spare = undefined;
    const child = spare ?? this.spawnChild();
    const port = await freePort();
    child.port = port;
    child.go?.end(`${JSON.stringify({ port })}\n`);
    child.go = null;
    const timeoutMs = options.startTimeoutMs ?? 30_000;
    // Polled often: a restart in well under a second is the point of `agentctl dev`.
    const outcome = await waitUntilReady(port, Date.now(), timeoutMs, () => !child.gone && !this.stopped, READY_POLL_MS);
    if (outcome === 'ready') return { child };
    if (outcome === 'timed_out') {
      await this.terminate(child, 0);
      return { error: `the new process (pid ${child.pid}) did not answer GET /healthz on its PORT within ${Math.round(timeoutMs / 1000)} s` };
    }
    await child.exited;
    return { error: `the new process (pid ${child.pid}) exited (${child.exit}) before it was ready` };
  }

  /** Starts the process of the next save soon (SPARE_DELAY_MS), which waits (loaded, not listening) for its go. */
  private prepareSpare(): void {
    clearTimeout(this.spareTimer);
    this.spareTimer = setTimeout(() => {
      this.spareTimer = undefined;
      if (this.stopped || this.reloading || (this.spare && !this.spare.gone)) return;
      this.spare = this.spawnChild();
    }, SPARE_DELAY_MS);
  }

  private spawnChild(): Child {
    const { options } = this;
    const proc = spawn(process.execPath, ['--import', pathToFileURL(this.lifeline).href, '--import', pathToFileURL(this.warmPreload).href, options.entry], {
      cwd: options.root,
      env: options.env,
      // Its own process group: stopping it stops whatever it started.
      detached: true,
      stdio: ['ignore', 'pipe', 'pipe', 'pipe', 'pipe'],
    });
    (proc.stdio[LIFELINE_FD] as NodeJS.WritableStream | null)?.on('error', () => {});
    const go = proc.stdio[GO_FD] as NodeJS.ReadWriteStream | null;
    go?.on('error', () => {});
    const child: Child = { process: proc, go, pid: proc.pid ?? 0, port: 0, gone: false, exit: '', stderrTail: [], exited: Promise.resolve() };
    // `warm`: it loaded what every start loads.
    go?.once('data', () => {
      if (child === this.spare) options.debug?.(`spare process pid ${child.pid} loaded: the next save starts it`);
    });
    child.exited = new Promise<void>((done) =>
      proc.once('close', (code, signal) => {
        child.gone = true;
        child.exit = signal ? `signal ${signal}` : `code ${code}`;
        done();
        this.onExit(child, child.exit);
      }),
    );
    proc.once('error', (error) => options.note('error', `could not start node: ${error.message}`));
    pipeLines(proc.stdout!, (line) => options.output(child.pid, 'stdout', line));
    pipeLines(proc.stderr!, (line) => {
      child.stderrTail = [...child.stderrTail, line].slice(-TAIL_LINES);
      options.output(child.pid, 'stderr', line);
    });
    return child;
  }

  private onExit(child: Child, how: string): void {
    if (child !== this.current || this.stopped) return;
    this.current = undefined;
    if (this.crashRestarts >= 1) {
      this.options.note('error', `the agent (pid ${child.pid}) exited (${how}); it starts again on the next save`);
      return;
    }
    this.crashRestarts += 1;
    this.options.note('error', `the agent (pid ${child.pid}) exited (${how}); starting it again`);
    void this.reload('restart after exit').then(() => {
      if (this.current) this.crashRestarts = 0;
    });
  }

  /** SIGTERM to the process group (SIGKILL at once with no grace, or after it); resolves once it closed. */
  private async terminate(child: Child, graceMs: number): Promise<void> {
    if (child.gone) return;
    signalGroup(child.pid, graceMs > 0 ? 'SIGTERM' : 'SIGKILL');
    const timer = graceMs > 0 ? setTimeout(() => signalGroup(child.pid, 'SIGKILL'), graceMs) : undefined;
    await child.exited;
    if (timer) clearTimeout(timer);
  }

  /** Stops the agent (its handlers get `graceMs` to finish); deliveries not answered are left to the server. */
  async stop(graceMs = 5_000): Promise<void> {
    this.stopped = true;
    clearTimeout(this.spareTimer);
    const child = this.current;
    const spare = this.spare;
    this.current = undefined;
    this.spare = undefined;
    await Promise.all([child ? this.terminate(child, graceMs) : undefined, spare ? this.terminate(spare, 0) : undefined]);
  }
}

/** Runs agentctl.json's build command; resolves with why it failed, or undefined. */
function runBuild(command: string, cwd: string, env: Record<string, string>): Promise<string | undefined> {
  return new Promise((resolve) => {
    const proc = spawn(command, { cwd, env, shell: true, stdio: ['ignore', 'inherit', 'inherit'] });
    proc.once('error', (error) => resolve(error.message));
    proc.once('close', (code, signal) => resolve(code === 0 ? undefined : signal ? `signal ${signal}` : `exit code ${code}`));
  });
}
