import type { Actor } from '../auth/authenticate.js';
import { unrestricted } from '../auth/policy.js';
import { recordRuntimeHappening, type VersionDetails } from '../domain/lifecycle.js';
import { isRefusal, next, type VersionHappening } from '../domain/version-lifecycle.js';
import { markVersionReplicasGone } from '../domain/registration.js';
import { runtimeVersion, versionsThatShouldRun, type RuntimeVersion } from '../domain/runtime.js';
import { DomainError } from '../domain/errors.js';
import type { Store } from '../store/db.js';
import type { LaunchSecrets, RuntimeDriver, RuntimeHappening, VersionSpec } from './driver.js';

/** Where the reconciler gets the secrets of the process contract (delivery's registration domain). */
export interface RuntimeSecretSource {
  signingSecret(versionId: string): Promise<string>;
  registrationToken(versionId: string, options?: { reusable?: boolean }): Promise<string>;
  /** The agent's secrets that apply to the version, in plaintext (README "Secrets"), and their digest. Absent: none. */
  agentSecrets?(versionId: string): Promise<{ env: Record<string, string>; digest: string }>;
  /** Each version's digest of the secrets that apply to it (no plaintext): a change restarts its replicas. */
  agentSecretDigests?(versionIds: readonly string[]): Promise<Map<string, string>>;
}

export interface ReconcilerOptions {
  store: Store;
  driver: RuntimeDriver;
  /** The URL agents call back. */
  baseUrl: string;
  secrets: RuntimeSecretSource;
  /** A replica went away (crashed or stopped): the dispatcher stops sending it work. */
  replicaGone?: (versionId: string, acpUrl: string) => Promise<void>;
  /** How often what runs is compared with what should (default 2 s). */
  intervalMs?: number;
  /** SIGTERM-to-SIGKILL grace for versions that stop (default 10 s). */
  graceMs?: number;
  /** How often a standby tries to take the runtime lease (default 5 s). */
  leaseRetryMs?: number;
  /** Errors of a pass (the database was away, ...): the next pass retries. */
  onError?: (error: unknown) => void;
  /** More work of each pass that must run once across server replicas (rollouts): run under the lease, after the versions. */
  leasedWork?: () => Promise<void>;
}

export interface Reconciler {
  /** Runs one pass now (and waits for it); a no-op without the lease. */
  reconcileNow(): Promise<void>;
  holdsLease(): boolean;
  /** Stops the loop, stops every version this server runs, and releases the lease. */
  close(): Promise<void>;
}

/** The advisory-lock key of the runtime lease ('agentctl runtime' as a number; any fixed value works). */
export const RUNTIME_LEASE_KEY = 0x61677274;

/** The system principal of one org: runtime transitions act for the platform, not a key. */
const systemActor = (orgId: string): Actor => ({ keyId: '', orgId, name: 'agentctl runtime' });

/**
 * The runtime reconciler (README "Local runtime and logs"): one per server, active only while it holds the
 * runtime lease. Level-triggered: every pass starts what should run and stops what should not, so
 * a restart brings everything back. What the driver observes becomes a version transition through
 * the domain, in-process.
 */
export async function startReconciler(options: ReconcilerOptions): Promise<Reconciler> {
  const { store, driver } = options;
  const intervalMs = options.intervalMs ?? 2_000;
  const graceMs = options.graceMs ?? 10_000;
  const leaseRetryMs = options.leaseRetryMs ?? 5_000;
  const onError = options.onError ?? ((error: unknown) => process.stderr.write(`[agentctl runtime] ${(error as Error).message ?? error}\n`));
  const lease = await openLease(store, () => {
    // The lease's connection broke: another server may take over, so nothing runs here any more.
    for (const versionId of driver.running()) void driver.stop(versionId, { graceMs }).catch(onError);
  });
  let closed = false;
  let pass: Promise<void> | undefined;
  const stopping = new Set<string>();
  /** The secrets digest each running version's replicas were started with; versions being restarted for a change. */
  const launchedDigest = new Map<string, string>();
  const restarting = new Set<string>();
  let happenings: Promise<void> = Promise.resolve();

  driver.onHappening((versionId, happening) => {
    // Captured now: a restart gives the replica a new port.
    const acpUrl = happening.kind === 'crashed' || happening.kind === 'replaced' ? acpUrlOf(versionId, happening.replica) : undefined;
    happenings = happenings.then(() => onHappening(versionId, happening, acpUrl)).catch(onError);
  });

  function acpUrlOf(versionId: string, replica: number): string | undefined {
    const port = driver.status(versionId)?.replicas.find((r) => r.replica === replica)?.port;
    return port ? `http://127.0.0.1:${port}` : undefined;
  }

  /** Hands a happening to the domain unless the lifecycle says it changes nothing, or refuses it. */
  async function transition(version: RuntimeVersion, happening: VersionHappening, details: VersionDetails = {}) {
    const to = next(version.status, happening);
    if (isRefusal(to) || to === version.status) return;
    try {
      await recordRuntimeHappening(store.db, unrestricted(systemActor(version.org_id)), version.id, happening, details);
    } catch (error) {
      // The version moved on meanwhile (a rollback, a retire, a registration): the next pass sees it.
      if (error instanceof DomainError && (error.kind === 'conflict' || error.kind === 'not_found')) return;
      throw error;
    }
  }

  const anyUnhealthy = (versionId: string) => driver.status(versionId)?.replicas.some((r) => r.phase === 'unhealthy') ?? false;
  const readyCount = (versionId: string) => driver.status(versionId)?.replicas.filter((r) => r.phase === 'ready').length ?? 0;

  async function onHappening(versionId: string, happening: RuntimeHappening, acpUrl: string | undefined) {
    if (closed) return;
    if (happening.kind === 'crashed' || happening.kind === 'replaced') {
      if (acpUrl && options.replicaGone) await options.replicaGone(versionId, acpUrl);
      return;
    }
    if (happening.kind === 'stopped') {
      // Its processes are gone: deliveries wait for the next replica instead of backing off on dead addresses.
      await markVersionReplicasGone(store.db, versionId);
      return;
    }
    if (happening.kind === 'started') return;
    const version = await runtimeVersion(store.db, versionId);
    if (!version) return;
    switch (happening.kind) {
      case 'ready':
        // An UNHEALTHY version recovers only once no replica is unhealthy any more.
        if (version.status === 'UNHEALTHY' && anyUnhealthy(versionId)) return;
        await transition(version, 'ready', version.status === 'DEPLOYING' ? { replicas: readyCount(versionId) } : {});
        return;
      case 'recovered':
        if (!anyUnhealthy(versionId)) await transition(version, 'recovered');
        return;
      case 'unhealthy':
        await transition(version, 'unhealthy');
        return;
      case 'failed':
        await transition(version, 'runtime_failed', { failure_reason: happening.reason, failure_diagnostics: happening.diagnostics });
        return;
    }
  }

  function specOf(version: RuntimeVersion): VersionSpec {
    return {
      versionId: version.id,
      branchId: version.branch_id,
      agentId: version.agent_id,
      agentName: version.agent_name,
      imageUrl: version.image_url,
      sourceFilesystemId: version.source_filesystem_id,
      replicas: Math.max(1, version.desired_replicas),
      acpType: version.acp_type === 'sync' ? 'sync' : 'async',
      env: {},
      ...(version.resources ? { resources: version.resources as VersionSpec['resources'] } : {}),
    };
  }

  async function launchSecrets(versionId: string): Promise<LaunchSecrets> {
    const agentSecrets = await options.secrets.agentSecrets?.(versionId);
    return {
      baseUrl: options.baseUrl,
      signingSecret: await options.secrets.signingSecret(versionId),
      registrationToken: (tokenOptions) => options.secrets.registrationToken(versionId, tokenOptions),
      ...(agentSecrets ? { agentEnv: agentSecrets.env, agentSecretsDigest: agentSecrets.digest } : {}),
    };
  }

  /**
   * A version whose secrets changed since its replicas started gets them restarted, one at a time
   * (driver.restart). A version the driver adopted from before this server started (kubernetes) is
   * handed its current secrets once: the driver restarts nothing when they are the ones it runs.
   */
  async function restartChanged(versions: readonly VersionSpec[]) {
    if (!driver.restart || !options.secrets.agentSecretDigests) return;
    const candidates = versions.filter((spec) => !stopping.has(spec.versionId) && !restarting.has(spec.versionId));
    if (candidates.length === 0) return;
    const digests = await options.secrets.agentSecretDigests(candidates.map((spec) => spec.versionId));
    for (const spec of candidates) {
      const current = digests.get(spec.versionId);
      const launched = launchedDigest.get(spec.versionId);
      if (current === undefined || current === launched) continue;
      if (launched === undefined && driver.replicasEndWithServer) {
        // Started by this server before the secrets source knew it (a start still in flight): the next pass decides.
        continue;
      }
      restarting.add(spec.versionId);
      const secrets = await launchSecrets(spec.versionId);
      if (closed) return;
      launchedDigest.set(spec.versionId, secrets.agentSecretsDigest ?? current);
      void driver
        .restart(spec, secrets)
        .catch(onError)
        .finally(() => restarting.delete(spec.versionId));
    }
  }

  async function reconcile() {
    if (closed || !(await lease.hold())) return;
    const shouldRun = (await versionsThatShouldRun(store.db)).map(specOf).filter((spec) => driver.canRun?.(spec) ?? true);
    const wanted = new Set(shouldRun.map((s) => s.versionId));
    const running = new Set(driver.running());
    for (const spec of shouldRun) {
      if (running.has(spec.versionId) || stopping.has(spec.versionId)) continue;
      const secrets = await launchSecrets(spec.versionId);
      if (closed) return;
      // Replicas still recorded live were a previous server's (killed, its agents gone with it):
      // nothing may be sent to their addresses, and what they held leased goes out again.
      if (driver.replicasEndWithServer) await markVersionReplicasGone(store.db, spec.versionId);
      if (secrets.agentSecretsDigest !== undefined) launchedDigest.set(spec.versionId, secrets.agentSecretsDigest);
      // Not awaited: preparing a source can take a while and must not hold up the other versions.
      void driver.start(spec, secrets).catch(onError);
    }
    await restartChanged(shouldRun.filter((spec) => running.has(spec.versionId)));
    for (const versionId of running) {
      if (wanted.has(versionId) || stopping.has(versionId)) continue;
      stopping.add(versionId);
      launchedDigest.delete(versionId);
      void driver
        .stop(versionId, { graceMs })
        .catch(onError)
        .finally(() => stopping.delete(versionId));
    }
    if (options.leasedWork && !closed) await options.leasedWork();
  }

  const reconcileNow = () => {
    // One pass at a time; a call during a pass waits for it and then runs its own.
    const next = (pass ?? Promise.resolve()).then(() => reconcile().catch(onError));
    pass = next;
    return next;
  };

  let timer: NodeJS.Timeout | undefined;
  const tick = () => {
    timer = setTimeout(() => void reconcileNow().finally(() => !closed && tick()), lease.held() ? intervalMs : leaseRetryMs);
  };
  await reconcileNow();
  tick();

  return {
    reconcileNow,
    holdsLease: () => lease.held(),
    async close() {
      closed = true;
      clearTimeout(timer);
      await pass;
      await driver.close().catch(onError);
      await happenings;
      await lease.release();
    },
  };
}

export interface Lease {
  /** Takes the lease if it is free; true while this server holds it. */
  hold(): Promise<boolean>;
  held(): boolean;
  release(): Promise<void>;
}

/**
 * The one runtime lease among server replicas: a PostgreSQL session advisory lock on a connection
 * of its own (it lasts as long as that session, so a server that dies releases it). PGlite is one
 * process's database: the lease is always held.
 */
export async function openLease(store: Store, lost: () => void): Promise<Lease> {
  if (store.engine !== 'postgres' || !store.databaseUrl) {
    return { hold: async () => true, held: () => true, release: async () => {} };
  }
  const pg = (await import('pg')).default;
  let client: InstanceType<typeof pg.Client> | undefined;
  let holding = false;
  const drop = () => {
    const wasHolding = holding;
    holding = false;
    const c = client;
    client = undefined;
    void c?.end().catch(() => {});
    if (wasHolding) lost();
  };
  return {
    async hold() {
      if (holding) return true;
      try {
        if (!client) {
          const c = new pg.Client({ connectionString: store.databaseUrl });
          c.on('error', drop);
          client = c;
          await c.connect();
        }
        const result = await client.query<{ locked: boolean }>('SELECT pg_try_advisory_lock($1) AS locked', [RUNTIME_LEASE_KEY]);
        holding = result.rows[0]?.locked === true;
      } catch {
        drop();
      }
      return holding;
    },
    held: () => holding,
    async release() {
      const c = client;
      client = undefined;
      holding = false;
      // Ending the session releases the advisory lock.
      await c?.end().catch(() => {});
    },
  };
}
