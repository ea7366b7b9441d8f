/**
 * The runtime driver seam: what starts and stops the processes (or pods) of a version. A driver
 * knows nothing of the database; the server's reconciler (runtime/reconciler.ts) decides what should
 * run, hands the driver a VersionSpec and the secrets of the process contract, and turns what the
 * driver reports (RuntimeHappening) into version transitions through the domain.
 *
 * Process contract (README, "Running agents"): every replica gets these environment variables.
 */
export { PROCESS_ENV } from '../../contract/acp.js';
import type { ResourceRequirements } from '../../contract/resources.js';

import type { RuntimeName } from '../../contract/enums.js';
export type { RuntimeName };

export interface FailureDiagnostics {
  title: string;
  /** What happened, with the last lines of the agent's stderr where there are any. */
  description: string;
  /** What the user can do about it. */
  action: string;
}

/** Everything a driver needs to run one version. */
export interface VersionSpec {
  versionId: string;
  branchId: string;
  agentId: string;
  /** `namespace/name`, for labels, log prefixes and diagnostics. */
  agentName: string;
  /** `local://fs_...` (source snapshot in the blob store) or a container image reference. */
  imageUrl: string;
  sourceFilesystemId: string | null;
  replicas: number;
  acpType: 'sync' | 'async';
  /** From agentctl.json: the file to run (`src/index.ts`), and an optional build command. */
  entry?: string;
  build?: string;
  /** Extra environment from agentctl.json `env` (never secrets of the platform). */
  env: Record<string, string>;
  /**
   * CPU and memory per replica, as deployed (`POST /agents/deploy` `resources`). The kubernetes
   * driver sets them on the container; the local driver keeps them in its spec but runs processes
   * without limits.
   */
  resources?: ResourceRequirements;
}

/** Secrets of the process contract; never logged, never in a status or error message. */
export interface LaunchSecrets {
  /** The URL agents call back (the server's own address for the local driver). */
  baseUrl: string;
  signingSecret: string;
  /**
   * A fresh one-time registration token. The local driver asks for one per process start; the
   * kubernetes driver asks once per version with `reusable: true` (pods restart without the driver).
   */
  registrationToken(options?: { reusable?: boolean }): Promise<string>;
  /**
   * The agent's secrets (README "Secrets") as environment variables, in plaintext: the driver puts
   * them in the processes' environment (local) or in a Secret the pods reference (kubernetes), and
   * nowhere else: never a log line, status, diagnostic or label.
   */
  agentEnv?: Record<string, string>;
  /** A digest of which secret revisions `agentEnv` holds (never of values); changes when a secret does. */
  agentSecretsDigest?: string;
}

/** What a driver observed about a version; the reconciler maps each to a lifecycle step. */
export type RuntimeHappening =
  | { kind: 'started'; replica: number; pid?: number }
  | { kind: 'ready'; replica: number }
  | { kind: 'unhealthy'; replica: number; detail: string }
  | { kind: 'recovered'; replica: number }
  | { kind: 'crashed'; replica: number; exitCode: number | null; signal: string | null; willRestart: boolean }
  /** The replica's process was stopped to start a new one (its secrets changed): its address is gone. */
  | { kind: 'replaced'; replica: number }
  | {
      kind: 'failed';
      reason: 'crash_loop' | 'start_timeout' | 'image_pull_failed' | 'scheduling_failed' | 'build_failed' | 'source_unavailable';
      diagnostics: FailureDiagnostics;
    }
  | { kind: 'stopped' };

export interface ReplicaStatus {
  replica: number;
  phase: 'starting' | 'ready' | 'unhealthy' | 'restarting' | 'stopped' | 'failed';
  pid?: number;
  port?: number;
  restarts: number;
}

export interface VersionRuntimeStatus {
  versionId: string;
  replicas: ReplicaStatus[];
}

export interface LogLine {
  versionId: string;
  replica: number;
  stream: 'stdout' | 'stderr';
  /** ISO 8601 UTC, when the line was captured. */
  time: string;
  line: string;
}

export interface LogQuery {
  /** The last N lines (per version, all replicas merged by time); default 100. */
  tail?: number;
  since?: Date;
  /** Keep yielding new lines until `signal` aborts. */
  follow?: boolean;
  signal?: AbortSignal;
}

export interface RuntimeDriver {
  readonly name: RuntimeName;
  /**
   * Replicas end with the server that runs them (local child processes, which a dead server's
   * lifeline takes down): replicas recorded before this driver started a version are gone.
   * Kubernetes pods outlive the server and stay registered. Absent: false.
   */
  readonly replicasEndWithServer?: boolean;
  /**
   * Whether this driver can run the version at all (the local driver runs source snapshots,
   * `local://fs_...`, not container images); versions it cannot run are left to whoever registers
   * them. Absent: every version.
   */
  canRun?(spec: VersionSpec): boolean;
  /** Makes the version run `spec.replicas` replicas; idempotent (a second call for a running version does nothing). */
  start(spec: VersionSpec, secrets: LaunchSecrets): Promise<void>;
  /**
   * Replaces a running version's replicas with ones started with `secrets` (its agent secrets
   * changed), one at a time, each new one ready before the next goes. Absent: secrets reach a
   * version's replicas only when they next start.
   */
  restart?(spec: VersionSpec, secrets: LaunchSecrets): Promise<void>;
  /** SIGTERM (or scale to zero), then SIGKILL (or delete) after `graceMs`; resolves when stopped. */
  stop(versionId: string, options?: { graceMs?: number }): Promise<void>;
  status(versionId: string): VersionRuntimeStatus | undefined;
  /** Version ids this driver is running now. */
  running(): string[];
  logs(versionId: string, query?: LogQuery): AsyncIterable<LogLine>;
  /** Every happening of every version, in the order observed. */
  onHappening(listener: (versionId: string, happening: RuntimeHappening) => void): void;
  /** Stops everything (the server is stopping). */
  close(): Promise<void>;
}
