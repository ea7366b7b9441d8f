/**
 * The kubernetes runtime driver: one Deployment, Service and Secret per version (manifests.ts),
 * applied through the API server with @kubernetes/client-node, and the version's pods polled and
 * mapped to RuntimeHappenings (pod-status.ts). The cluster keeps running the pods when the server
 * stops; a server that starts again adopts the versions it finds (running()) so the reconciler can
 * keep or stop them.
 */
import { EventEmitter, on } from 'node:events';
import { Writable } from 'node:stream';
import { setTimeout as sleep } from 'node:timers/promises';
import { ApiException, AppsV1Api, CoreV1Api, KubeConfig, Log, PatchStrategy, setHeaderOptions, type V1Pod, type V1Secret } from '@kubernetes/client-node';
import type {
  FailureDiagnostics,
  LaunchSecrets,
  LogLine,
  LogQuery,
  ReplicaStatus,
  RuntimeDriver,
  RuntimeHappening,
  VersionRuntimeStatus,
  VersionSpec,
} from '../driver.js';
import {
  agentSecretName,
  buildAgentSecret,
  buildDeployment,
  buildSecret,
  buildService,
  CONTAINER_NAME,
  CONTAINER_PORT,
  MANAGED_BY,
  MANAGED_BY_LABEL,
  resourceName,
  selectorString,
  VERSION_LABEL,
  versionSelector,
} from './manifests.js';
import {
  crashLoopDiagnostics,
  findStartFailure,
  imagePullDiagnostics,
  localImageDiagnostics,
  observePods,
  replicaPhase,
  schedulingDiagnostics,
  startTimeoutDiagnostics,
  type PodObservation,
} from './pod-status.js';

export interface KubernetesDriverOptions {
  /** Default: AGENTCTL_K8S_NAMESPACE, else `agentctl`. */
  namespace?: string;
  /** Default: in-cluster service account, KUBECONFIG, or ~/.kube/config (KubeConfig.loadFromDefault). */
  kubeConfig?: KubeConfig;
  /** A version none of whose pods is ready by then fails with start_timeout. Default 5 minutes (image pulls). */
  startTimeoutMs?: number;
  /** How often the pods are listed. Default 2 s. */
  pollIntervalMs?: number;
  /** The pods' terminationGracePeriodSeconds, and stop()'s default grace. Default 30 s. */
  graceMs?: number;
  /**
   * The server's address as pods reach it (AGENTCTL_BASE_URL). Default: AGENTCTL_K8S_BASE_URL, else
   * the base URL the reconciler passes in LaunchSecrets.
   */
  baseUrl?: string;
  /**
   * How often the registration token in a running version's Secret is replaced by a fresh one, so
   * pods that start later (restarts, rescheduling) register with a token that has not expired.
   * Default 30 minutes: half the lifetime of a registration token.
   */
  tokenRefreshMs?: number;
  /** Where API errors of the background poll go (the server's logger); never given secrets. */
  warn?: (message: string) => void;
}

/** The lines of a crashed container's previous run that go into crash_loop diagnostics. */
const CRASH_LOG_LINES = 20;

interface TrackedVersion {
  versionId: string;
  /** False for a version adopted from the cluster that start() has not been called for yet. */
  applied: boolean;
  startedAt: number;
  everReady: boolean;
  failed: boolean;
  /** stop() is under way: nothing is reported meanwhile. A stop that failed leaves the version tracked, in running(), to retry. */
  stopping: boolean;
  /** Pods reported as started. */
  knownPods: Set<string>;
  /** Pods ready at the last poll. */
  readyPods: Set<string>;
  /** Pods that were ever ready: not-ready afterwards is unhealthy, not starting. */
  everReadyPods: Set<string>;
  replicas: ReplicaStatus[];
  /** What start() was given, to put a fresh registration token into the Secret now and then. */
  launch?: { spec: VersionSpec; secrets: LaunchSecrets; tokenIssuedAt: number };
}

/** An API request that failed, told as what the driver was doing and what the API server said. */
export class KubernetesApiError extends Error {
  constructor(
    readonly status: number,
    message: string,
    options?: ErrorOptions,
  ) {
    super(message, options);
    this.name = 'KubernetesApiError';
  }
}

/** The API server's Status message, when the error carries one. */
function statusMessage(error: ApiException<unknown>): string | undefined {
  try {
    const body = typeof error.body === 'string' ? JSON.parse(error.body) : error.body;
    return typeof body?.message === 'string' ? body.message : undefined;
  } catch {
    return undefined;
  }
}

async function request<T>(what: string, send: () => Promise<T>): Promise<T> {
  try {
    return await send();
  } catch (error) {
    if (!(error instanceof ApiException)) throw new KubernetesApiError(0, `kubernetes runtime: ${what} failed: ${(error as Error).message}`, { cause: error });
    const hint = error.code === 401 || error.code === 403 ? ' (the server\'s service account needs the Role in the README, section "Kubernetes runtime")' : '';
    throw new KubernetesApiError(error.code, `kubernetes runtime: ${what} failed: ${error.code} ${statusMessage(error) ?? 'no message'}${hint}`);
  }
}

function withVersion<T extends { metadata?: { resourceVersion?: string } }>(object: T, existing: { metadata?: { resourceVersion?: string } }): T {
  return { ...object, metadata: { ...object.metadata, resourceVersion: existing.metadata?.resourceVersion } };
}

function isStatus(error: unknown, code: number): boolean {
  return error instanceof KubernetesApiError && error.status === code;
}

async function ignoreNotFound(pending: Promise<unknown>): Promise<void> {
  try {
    await pending;
  } catch (error) {
    if (!isStatus(error, 404)) throw error;
  }
}

/** `2026-11-23T01:02:03.123456789Z text` (timestamps=true) -> its sortable nanosecond key and text. */
function parseLogLine(raw: string): { key: string; time: string; line: string } | undefined {
  const match = /^(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d)(?:\.(\d+))?Z ?(.*)$/.exec(raw);
  if (!match) return undefined;
  const [, seconds, fraction = '', line] = match;
  return { key: `${seconds}.${fraction.padEnd(9, '0')}`, time: new Date(`${seconds}.${fraction.slice(0, 3).padEnd(3, '0')}Z`).toISOString(), line };
}

function splitLines(text: string): string[] {
  const lines = text.split('\n');
  if (lines.at(-1) === '') lines.pop();
  return lines;
}

export class KubernetesDriver implements RuntimeDriver {
  readonly name = 'kubernetes' as const;
  readonly namespace: string;
  private readonly kubeConfig: KubeConfig;
  private readonly apps: AppsV1Api;
  private readonly core: CoreV1Api;
  private readonly startTimeoutMs: number;
  private readonly pollIntervalMs: number;
  private readonly graceMs: number;
  private readonly tokenRefreshMs: number;
  private readonly baseUrl: string | undefined;
  private readonly warn: (message: string) => void;
  private readonly versions = new Map<string, TrackedVersion>();
  private readonly starting = new Map<string, Promise<void>>();
  private readonly listeners: Array<(versionId: string, happening: RuntimeHappening) => void> = [];
  private readonly followers = new Set<AbortController>();
  private adopted = false;
  private closed = false;
  private timer: NodeJS.Timeout | undefined;
  private polling: Promise<void> | undefined;

  constructor(options: KubernetesDriverOptions = {}) {
    this.namespace = options.namespace ?? process.env.AGENTCTL_K8S_NAMESPACE ?? 'agentctl';
    this.kubeConfig = options.kubeConfig ?? KubernetesDriver.defaultKubeConfig();
    this.apps = this.kubeConfig.makeApiClient(AppsV1Api);
    this.core = this.kubeConfig.makeApiClient(CoreV1Api);
    this.startTimeoutMs = options.startTimeoutMs ?? 300_000;
    this.pollIntervalMs = options.pollIntervalMs ?? 2_000;
    this.graceMs = options.graceMs ?? 30_000;
    this.tokenRefreshMs = options.tokenRefreshMs ?? 30 * 60_000;
    this.baseUrl = options.baseUrl ?? process.env.AGENTCTL_K8S_BASE_URL;
    this.warn = options.warn ?? (() => {});
    this.schedulePoll(0);
  }

  private static defaultKubeConfig(): KubeConfig {
    const kubeConfig = new KubeConfig();
    kubeConfig.loadFromDefault();
    return kubeConfig;
  }

  onHappening(listener: (versionId: string, happening: RuntimeHappening) => void): void {
    this.listeners.push(listener);
  }

  private emit(versionId: string, happening: RuntimeHappening): void {
    for (const listener of this.listeners) {
      try {
        listener(versionId, happening);
      } catch (error) {
        this.warn(`kubernetes runtime: a happening listener threw: ${(error as Error).message}`);
      }
    }
  }

  running(): string[] {
    return [...this.versions.keys()];
  }

  status(versionId: string): VersionRuntimeStatus | undefined {
    const version = this.versions.get(versionId);
    return version ? { versionId, replicas: version.replicas.map((replica) => ({ ...replica })) } : undefined;
  }

  async start(spec: VersionSpec, secrets: LaunchSecrets): Promise<void> {
    const known = this.versions.get(spec.versionId);
    if (known?.applied && !known.stopping) return;
    const inFlight = this.starting.get(spec.versionId);
    if (inFlight) return inFlight;
    const applying = this.apply(spec, secrets).finally(() => this.starting.delete(spec.versionId));
    this.starting.set(spec.versionId, applying);
    return applying;
  }

  private async apply(spec: VersionSpec, secrets: LaunchSecrets): Promise<void> {
    if (spec.imageUrl.startsWith('local://')) {
      // Fail fast: no pod could ever run a source snapshot, so nothing is created.
      this.emit(spec.versionId, { kind: 'failed', reason: 'source_unavailable', diagnostics: localImageDiagnostics(spec.imageUrl) });
      return;
    }
    const namespace = this.namespace;
    const name = resourceName(spec.versionId);
    const tokenIssuedAt = Date.now();
    const secret = await this.secretFor(spec, secrets);
    const agentEnv = secrets.agentEnv;
    const deployment = buildDeployment(spec, {
      namespace,
      terminationGracePeriodSeconds: Math.ceil(this.graceMs / 1000),
      ...(agentEnv ? { agentSecrets: { digest: secrets.agentSecretsDigest ?? '' } } : {}),
    });
    const service = buildService(spec, { namespace });

    const where = `in namespace ${namespace}`;
    const core = this.core;
    const apps = this.apps;
    if (agentEnv) await this.applySecret(buildAgentSecret(spec, { namespace, env: agentEnv }));
    await this.applySecret(secret);
    try {
      await request(`creating Deployment ${name} ${where}`, () => apps.createNamespacedDeployment({ namespace, body: deployment }));
    } catch (error) {
      if (!isStatus(error, 409)) throw error;
      const existing = await request(`reading Deployment ${name} ${where}`, () => apps.readNamespacedDeployment({ name, namespace }));
      await request(`replacing Deployment ${name} ${where}`, () =>
        apps.replaceNamespacedDeployment({ name, namespace, body: withVersion(deployment, existing) }),
      );
    }
    try {
      await request(`creating Service ${name} ${where}`, () => core.createNamespacedService({ namespace, body: service }));
    } catch (error) {
      if (!isStatus(error, 409)) throw error;
      const existing = await request(`reading Service ${name} ${where}`, () => core.readNamespacedService({ name, namespace }));
      // The cluster IP is immutable: a replace carries the one the Service was given.
      const clusterIp = existing.spec?.clusterIP ? { clusterIP: existing.spec.clusterIP, clusterIPs: existing.spec.clusterIPs } : {};
      const body = { ...withVersion(service, existing), spec: { ...service.spec, ...clusterIp } };
      await request(`replacing Service ${name} ${where}`, () => core.replaceNamespacedService({ name, namespace, body }));
    }

    // An adopted version keeps what was observed of it; one being stopped starts afresh.
    const adopted = this.versions.get(spec.versionId);
    const tracked = adopted && !adopted.stopping ? adopted : this.track(spec.versionId);
    tracked.applied = true;
    tracked.startedAt = Date.now();
    tracked.launch = { spec, secrets, tokenIssuedAt };
  }

  private async secretFor(spec: VersionSpec, secrets: LaunchSecrets): Promise<V1Secret> {
    // Reusable: pods restart and reschedule without the driver.
    const registrationToken = await secrets.registrationToken({ reusable: true });
    return buildSecret(spec, { namespace: this.namespace, baseUrl: this.baseUrl ?? secrets.baseUrl, registrationToken, signingSecret: secrets.signingSecret });
  }

  private async applySecret(secret: V1Secret): Promise<void> {
    const namespace = this.namespace;
    const name = secret.metadata?.name ?? '';
    const where = `in namespace ${namespace}`;
    try {
      await request(`creating Secret ${name} ${where}`, () => this.core.createNamespacedSecret({ namespace, body: secret }));
    } catch (error) {
      if (!isStatus(error, 409)) throw error;
      const existing = await request(`reading Secret ${name} ${where}`, () => this.core.readNamespacedSecret({ name, namespace }));
      await request(`replacing Secret ${name} ${where}`, () => this.core.replaceNamespacedSecret({ name, namespace, body: withVersion(secret, existing) }));
    }
  }

  /** A fresh registration token into the Secret; the kubelet reads it when it next starts a container. */
  private async refreshToken(version: TrackedVersion): Promise<void> {
    const launch = version.launch;
    if (!launch || Date.now() - launch.tokenIssuedAt < this.tokenRefreshMs) return;
    launch.tokenIssuedAt = Date.now();
    try {
      const secret = await this.secretFor(launch.spec, launch.secrets);
      if (this.reporting(version)) await this.applySecret(secret);
    } catch (error) {
      this.warn((error as Error).message);
    }
  }

  private track(versionId: string): TrackedVersion {
    const version: TrackedVersion = {
      versionId,
      applied: false,
      startedAt: Date.now(),
      everReady: false,
      failed: false,
      stopping: false,
      knownPods: new Set(),
      readyPods: new Set(),
      everReadyPods: new Set(),
      replicas: [],
    };
    this.versions.set(versionId, version);
    return version;
  }

  /**
   * The agent's secrets changed: the agent Secret is replaced and the pod template's digest
   * annotation changes, so the Deployment rolls its pods one at a time (maxUnavailable 0). For
   * secrets the pods already run with, the template is unchanged and nothing rolls.
   */
  async restart(spec: VersionSpec, secrets: LaunchSecrets): Promise<void> {
    await this.starting.get(spec.versionId)?.catch(() => {});
    const applying = this.apply(spec, secrets).finally(() => this.starting.delete(spec.versionId));
    this.starting.set(spec.versionId, applying);
    return applying;
  }

  async stop(versionId: string, options?: { graceMs?: number }): Promise<void> {
    const graceMs = options?.graceMs ?? this.graceMs;
    await this.starting.get(versionId)?.catch(() => {});
    const tracked = this.versions.get(versionId);
    if (tracked) tracked.stopping = true;
    // A version adopted from a previous server may have an agent Secret too.
    const agentSecret = !tracked?.launch || tracked.launch.secrets.agentEnv !== undefined;
    try {
      await this.removeObjects(versionId, graceMs, agentSecret);
    } catch (error) {
      if (tracked) tracked.stopping = false;
      throw error;
    }
    // Unless a start() came in meanwhile and tracks it anew.
    if (this.versions.get(versionId) === tracked) this.versions.delete(versionId);
    this.emit(versionId, { kind: 'stopped' });
  }

  private async removeObjects(versionId: string, graceMs: number, agentSecret: boolean): Promise<void> {
    const namespace = this.namespace;
    const name = resourceName(versionId);

    // Scale to zero first: the pods get SIGTERM and their grace period before anything is deleted.
    const where = `in namespace ${namespace}`;
    await ignoreNotFound(
      request(`scaling Deployment ${name} ${where} to 0`, () =>
        this.apps.patchNamespacedDeploymentScale(
          { name, namespace, body: { spec: { replicas: 0 } } },
          setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
        ),
      ),
    );
    const deadline = Date.now() + graceMs;
    let pods = await this.versionPods(versionId);
    while (pods.length > 0 && Date.now() < deadline) {
      await sleep(Math.min(this.pollIntervalMs, Math.max(0, deadline - Date.now())));
      pods = await this.versionPods(versionId);
    }
    // Past the grace: the equivalent of SIGKILL.
    for (const pod of pods) {
      const podName = pod.metadata?.name ?? '';
      await ignoreNotFound(
        request(`deleting Pod ${podName} ${where}`, () => this.core.deleteNamespacedPod({ name: podName, namespace, gracePeriodSeconds: 0 })),
      );
    }
    await ignoreNotFound(
      request(`deleting Deployment ${name} ${where}`, () => this.apps.deleteNamespacedDeployment({ name, namespace, propagationPolicy: 'Background' })),
    );
    await ignoreNotFound(request(`deleting Service ${name} ${where}`, () => this.core.deleteNamespacedService({ name, namespace })));
    await ignoreNotFound(request(`deleting Secret ${name} ${where}`, () => this.core.deleteNamespacedSecret({ name, namespace })));
    if (agentSecret) {
      const agentName = agentSecretName(versionId);
      await ignoreNotFound(request(`deleting Secret ${agentName} ${where}`, () => this.core.deleteNamespacedSecret({ name: agentName, namespace })));
    }
  }

  private async versionPods(versionId: string): Promise<V1Pod[]> {
    const list = await request(`listing the pods of ${versionId} in namespace ${this.namespace}`, () =>
      this.core.listNamespacedPod({ namespace: this.namespace, labelSelector: selectorString(versionSelector(versionId)) }),
    );
    return list.items;
  }

  async close(): Promise<void> {
    this.closed = true;
    clearTimeout(this.timer);
    for (const follower of this.followers) follower.abort();
    await this.polling;
    await Promise.allSettled([...this.starting.values()]);
  }

  private schedulePoll(delayMs: number): void {
    if (this.closed) return;
    this.timer = setTimeout(() => {
      this.polling = this.poll()
        .catch((error: unknown) => this.warn((error as Error).message))
        .finally(() => {
          this.polling = undefined;
          this.schedulePoll(this.pollIntervalMs);
        });
    }, delayMs);
    this.timer.unref();
  }

  private async poll(): Promise<void> {
    if (!this.adopted) {
      // A restarted server finds the versions it left running, so the reconciler sees them in running().
      const deployments = await request(`listing Deployments in namespace ${this.namespace}`, () =>
        this.apps.listNamespacedDeployment({ namespace: this.namespace, labelSelector: selectorString({ [MANAGED_BY_LABEL]: MANAGED_BY }) }),
      );
      for (const deployment of deployments.items) {
        const versionId = deployment.metadata?.labels?.[VERSION_LABEL];
        if (versionId && !this.versions.has(versionId)) this.track(versionId);
      }
      this.adopted = true;
    }
    if (this.versions.size === 0) return;
    const list = await request(`listing pods in namespace ${this.namespace}`, () =>
      this.core.listNamespacedPod({ namespace: this.namespace, labelSelector: selectorString({ [MANAGED_BY_LABEL]: MANAGED_BY }) }),
    );
    const podsByVersion = new Map<string, V1Pod[]>();
    for (const pod of list.items) {
      const versionId = pod.metadata?.labels?.[VERSION_LABEL];
      if (versionId) podsByVersion.set(versionId, [...(podsByVersion.get(versionId) ?? []), pod]);
    }
    for (const version of [...this.versions.values()]) {
      if (this.closed) return;
      await this.observe(version, podsByVersion.get(version.versionId) ?? []);
      await this.refreshToken(version);
    }
  }

  /** Whether happenings of this tracked version are still wanted (not failed, not being stopped, not replaced). */
  private reporting(version: TrackedVersion): boolean {
    return !version.failed && !version.stopping && this.versions.get(version.versionId) === version;
  }

  private async observe(version: TrackedVersion, pods: V1Pod[]): Promise<void> {
    if (!this.reporting(version)) return;
    const observed = observePods(pods);
    const live = new Set(observed.map((pod) => pod.name));
    for (const set of [version.knownPods, version.readyPods, version.everReadyPods]) {
      for (const name of set) if (!live.has(name)) set.delete(name);
    }
    for (const pod of observed) {
      if (!version.knownPods.has(pod.name)) {
        version.knownPods.add(pod.name);
        this.emit(version.versionId, { kind: 'started', replica: pod.replica });
      }
      if (pod.ready && !version.readyPods.has(pod.name)) {
        version.readyPods.add(pod.name);
        const recovered = version.everReadyPods.has(pod.name);
        version.everReadyPods.add(pod.name);
        version.everReady = true;
        this.emit(version.versionId, recovered ? { kind: 'recovered', replica: pod.replica } : { kind: 'ready', replica: pod.replica });
      } else if (!pod.ready && version.readyPods.has(pod.name)) {
        version.readyPods.delete(pod.name);
        const why = pod.waitingReason ? ` (${pod.waitingReason})` : '';
        this.emit(version.versionId, { kind: 'unhealthy', replica: pod.replica, detail: `pod ${pod.name} fails its readiness check (GET /healthz)${why}` });
      }
    }
    version.replicas = observed.map((pod) => ({
      replica: pod.replica,
      phase: replicaPhase(pod, version.everReadyPods.has(pod.name)),
      port: CONTAINER_PORT,
      restarts: pod.restarts,
    }));

    // Start failures only count before the version was ever ready: afterwards a pod in trouble is an
    // unhealthy replica that Kubernetes keeps restarting, as the local driver does with a crashed ready process.
    if (version.everReady) return;
    const failure = findStartFailure(observed);
    if (failure?.reason === 'image_pull_failed') {
      return this.fail(version, 'image_pull_failed', imagePullDiagnostics(failure.pod.image ?? 'the image', failure.pod, this.namespace));
    }
    if (failure?.reason === 'crash_loop') {
      const logTail = await this.previousLogTail(failure.pod);
      if (!this.reporting(version)) return;
      return this.fail(version, 'crash_loop', crashLoopDiagnostics(failure.pod, logTail));
    }
    if (failure?.reason === 'scheduling_failed') {
      return this.fail(version, 'scheduling_failed', schedulingDiagnostics(failure.pod, this.namespace));
    }
    if (version.applied && Date.now() - version.startedAt >= this.startTimeoutMs) {
      return this.fail(version, 'start_timeout', startTimeoutDiagnostics(version.versionId, this.startTimeoutMs, observed, this.namespace));
    }
  }

  private fail(version: TrackedVersion, reason: Extract<RuntimeHappening, { kind: 'failed' }>['reason'], diagnostics: FailureDiagnostics): void {
    version.failed = true;
    this.emit(version.versionId, { kind: 'failed', reason, diagnostics });
  }

  /** The last lines the crashed container wrote before it exited (its previous run). */
  private async previousLogTail(pod: PodObservation): Promise<string[]> {
    try {
      const text = await request(`reading the log of pod ${pod.name}`, () =>
        this.core.readNamespacedPodLog({ name: pod.name, namespace: this.namespace, container: CONTAINER_NAME, previous: true, tailLines: CRASH_LOG_LINES }),
      );
      return splitLines(text);
    } catch (error) {
      this.warn((error as Error).message);
      return [];
    }
  }

  async *logs(versionId: string, query: LogQuery = {}): AsyncIterable<LogLine> {
    const tail = query.tail ?? 100;
    // Following picks up from here for pods that had no line yet (one-second resolution, as sinceTime has).
    const followFrom = new Date().toISOString().replace(/\.\d{3}Z$/, 'Z');
    const sinceKey = query.since ? query.since.toISOString().replace(/\.(\d{3})Z$/, '.$1000000') : undefined;
    const sinceSeconds = query.since ? Math.max(1, Math.ceil((Date.now() - query.since.getTime()) / 1000)) : undefined;
    const pods = observePods(await this.versionPods(versionId));

    // Each pod's last `tail` lines, merged by time; the last `tail` of those.
    const lastKey = new Map<string, string>();
    const collected: Array<LogLine & { key: string }> = [];
    for (const pod of pods) {
      let text: string;
      try {
        text = await request(`reading the log of pod ${pod.name}`, () =>
          this.core.readNamespacedPodLog({
            name: pod.name,
            namespace: this.namespace,
            container: CONTAINER_NAME,
            timestamps: true,
            tailLines: tail,
            ...(sinceSeconds ? { sinceSeconds } : {}),
          }),
        );
      } catch (error) {
        if (isStatus(error, 404)) continue; // the pod went away since the list
        throw error;
      }
      for (const raw of splitLines(text)) {
        const parsed = parseLogLine(raw);
        if (!parsed || (sinceKey && parsed.key < sinceKey)) continue;
        collected.push({ key: parsed.key, versionId, replica: pod.replica, stream: 'stdout', time: parsed.time, line: parsed.line });
        lastKey.set(pod.name, parsed.key);
      }
    }
    collected.sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
    for (const { key: _key, ...line } of collected.slice(-tail)) yield line;
    if (!query.follow || query.signal?.aborted) return;

    yield* this.follow(versionId, lastKey, followFrom, query.signal);
  }

  /**
   * New lines of every pod of the version until `signal` aborts: one follow stream per pod (the Log
   * helper), pods that appear later attached at each poll, a stream the API server closed re-attached
   * from its last line. sinceTime has one-second resolution, so lines at or before a pod's last key are skipped.
   */
  private async *follow(versionId: string, lastKey: Map<string, string>, followFrom: string, signal: AbortSignal | undefined): AsyncIterable<LogLine> {
    const lines = new EventEmitter();
    const stop = new AbortController();
    const onAbort = () => stop.abort();
    signal?.addEventListener('abort', onAbort, { once: true });
    this.followers.add(stop);
    const streams = new Map<string, symbol>();

    const attach = async (pod: PodObservation) => {
      const seen = lastKey.get(pod.name);
      // This attachment's entry: a stream that ended frees it, unless a newer attachment took its place.
      const handle = Symbol(pod.name);
      streams.set(pod.name, handle);
      const release = () => {
        if (streams.get(pod.name) === handle) streams.delete(pod.name);
      };
      let pending = '';
      const sink = new Writable({
        write: (chunk: Buffer, _encoding, done) => {
          const text = pending + chunk.toString('utf8');
          const parts = text.split('\n');
          pending = parts.pop() ?? '';
          for (const raw of parts) {
            const parsed = parseLogLine(raw);
            const last = lastKey.get(pod.name);
            if (!parsed || (last !== undefined && parsed.key <= last)) continue;
            lastKey.set(pod.name, parsed.key);
            lines.emit('line', { versionId, replica: pod.replica, stream: 'stdout', time: parsed.time, line: parsed.line } satisfies LogLine);
          }
          done();
        },
      });
      // The Log helper pipes the response into the sink; an aborted follow errors that source, which must not go unhandled.
      sink.on('pipe', (source) => source.on('error', release));
      sink.on('finish', release);
      sink.on('error', release);
      const sinceTime = seen ? `${seen.slice(0, 19)}Z` : followFrom;
      try {
        const controller = await request(`following the log of pod ${pod.name}`, () =>
          new Log(this.kubeConfig).log(this.namespace, pod.name, CONTAINER_NAME, sink, { follow: true, timestamps: true, sinceTime }),
        );
        if (stop.signal.aborted) controller.abort();
        else stop.signal.addEventListener('abort', () => controller.abort(), { once: true });
      } catch (error) {
        release();
        this.warn((error as Error).message);
      }
    };

    const watchPods = async () => {
      while (!stop.signal.aborted) {
        try {
          for (const pod of observePods(await this.versionPods(versionId))) {
            if (!streams.has(pod.name) && !stop.signal.aborted) await attach(pod);
          }
        } catch (error) {
          this.warn((error as Error).message);
        }
        await sleep(this.pollIntervalMs, undefined, { signal: stop.signal }).catch(() => {});
      }
    };
    const watching = watchPods();

    try {
      for await (const [line] of on(lines, 'line', { signal: stop.signal }) as AsyncIterable<[LogLine]>) yield line;
    } catch (error) {
      if (!stop.signal.aborted) throw error;
    } finally {
      stop.abort();
      signal?.removeEventListener('abort', onAbort);
      this.followers.delete(stop);
      await watching;
    }
  }
}
