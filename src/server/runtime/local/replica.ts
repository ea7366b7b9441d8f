import type { ChildProcess } from 'node:child_process';
import type { LaunchSecrets, ReplicaStatus, VersionSpec } from '../driver.js';
import type { ReplicaLog } from './log-files.js';

/** One replica of a running version: its process of the moment and what outlives its restarts. */
export interface Replica {
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
  /** Called once the replica is next ready, or its run ends (restart() waits on it). */
  readyWaiters?: Array<() => void>;
}

/** A version the driver runs: its prepared source and its replicas. */
export interface Run {
  spec: VersionSpec;
  secrets: LaunchSecrets;
  dir: string;
  entry: string;
  env: Record<string, string>;
  replicas: Replica[];
  /** Set by stop() and by a failure: nothing restarts any more. */
  ending: boolean;
}

/** Runs `fn` after `ms` unless clearTimers() comes first (a stop, a failure, the process's exit). */
export function later(replica: Replica, ms: number, fn: () => void) {
  const timer = setTimeout(() => {
    replica.timers.delete(timer);
    fn();
  }, ms);
  replica.timers.add(timer);
}

export function clearTimers(replica: Replica) {
  for (const timer of replica.timers) clearTimeout(timer);
  replica.timers.clear();
}

/** Resolves whoever waits for the replica to be ready (it is, or it never will be). */
export function wakeReadyWaiters(replica: Replica) {
  const waiters = replica.readyWaiters ?? [];
  replica.readyWaiters = [];
  for (const wake of waiters) wake();
}
