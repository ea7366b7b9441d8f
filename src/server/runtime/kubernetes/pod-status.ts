/**
 * What the pods of a version say, reduced to what the lifecycle needs: which replicas are ready, and
 * whether the version cannot start (image pull, crash loop, scheduling), with diagnostics a user can
 * act on. Pure functions of the pod objects the API returned.
 */
import type { V1Pod } from '@kubernetes/client-node';
import type { FailureDiagnostics, ReplicaStatus } from '../driver.js';
import { CONTAINER_NAME, resourceName } from './manifests.js';

export interface PodObservation {
  name: string;
  /** The agent container's image, as the pod spec names it. */
  image?: string;
  /** The pod's ordinal among the version's live pods, by name. */
  replica: number;
  ready: boolean;
  restarts: number;
  /** The pod phase (Pending, Running, ...). */
  phase: string;
  waitingReason?: string;
  waitingMessage?: string;
  lastTermination?: { exitCode: number; reason?: string; message?: string };
  /** The scheduler's message when the pod cannot be placed (PodScheduled False, reason Unschedulable). */
  unschedulable?: string;
}

/** The live (not terminating) pods, ordered by name; the position is the replica index. */
export function observePods(pods: V1Pod[]): PodObservation[] {
  return pods
    .filter((pod) => !pod.metadata?.deletionTimestamp)
    .sort((a, b) => (a.metadata?.name ?? '').localeCompare(b.metadata?.name ?? ''))
    .map((pod, replica) => {
      const conditions = pod.status?.conditions ?? [];
      const container = pod.status?.containerStatuses?.find((status) => status.name === CONTAINER_NAME);
      const waiting = container?.state?.waiting;
      const terminated = container?.lastState?.terminated;
      const image = pod.spec?.containers.find((spec) => spec.name === CONTAINER_NAME)?.image;
      const scheduled = conditions.find((condition) => condition.type === 'PodScheduled');
      return {
        name: pod.metadata?.name ?? '',
        ...(image ? { image } : {}),
        replica,
        ready: conditions.some((condition) => condition.type === 'Ready' && condition.status === 'True'),
        restarts: container?.restartCount ?? 0,
        phase: pod.status?.phase ?? 'Unknown',
        ...(waiting?.reason ? { waitingReason: waiting.reason } : {}),
        ...(waiting?.message ? { waitingMessage: waiting.message } : {}),
        ...(terminated
          ? {
              lastTermination: {
                exitCode: terminated.exitCode,
                ...(terminated.reason ? { reason: terminated.reason } : {}),
                ...(terminated.message ? { message: terminated.message } : {}),
              },
            }
          : {}),
        ...(scheduled?.status === 'False' && scheduled.reason === 'Unschedulable' ? { unschedulable: scheduled.message ?? 'no node can run the pod' } : {}),
      };
    });
}

const IMAGE_PULL_REASONS = new Set(['ImagePullBackOff', 'ErrImagePull', 'InvalidImageName']);

export type StartFailure =
  | { reason: 'image_pull_failed'; pod: PodObservation }
  | { reason: 'crash_loop'; pod: PodObservation }
  | { reason: 'scheduling_failed'; pod: PodObservation };

/** The first pod (by name) showing a condition the version cannot recover from on its own. */
export function findStartFailure(pods: PodObservation[]): StartFailure | undefined {
  for (const pod of pods) {
    if (pod.waitingReason && IMAGE_PULL_REASONS.has(pod.waitingReason)) return { reason: 'image_pull_failed', pod };
    if (pod.waitingReason === 'CrashLoopBackOff') return { reason: 'crash_loop', pod };
    if (pod.unschedulable !== undefined) return { reason: 'scheduling_failed', pod };
  }
  return undefined;
}

export function replicaPhase(pod: PodObservation, wasReady: boolean): ReplicaStatus['phase'] {
  if (pod.ready) return 'ready';
  if (pod.waitingReason === 'CrashLoopBackOff') return 'restarting';
  if (pod.phase === 'Failed') return 'failed';
  if (pod.phase === 'Succeeded') return 'stopped';
  return wasReady ? 'unhealthy' : 'starting';
}

export function localImageDiagnostics(imageUrl: string): FailureDiagnostics {
  return {
    title: 'A source snapshot cannot run on Kubernetes',
    description: `The version's image is ${imageUrl}, a source snapshot that only the local runtime can run: the kubernetes runtime runs container images.`,
    action:
      'Build and push a container image of the agent (it serves GET /healthz and POST /api on $PORT), then deploy it with `agentctl deploy --image <registry>/<image>:<tag>`.',
  };
}

export function imagePullDiagnostics(image: string, pod: PodObservation, namespace: string): FailureDiagnostics {
  return {
    title: `The cluster cannot pull the image ${image}`,
    description: `Pod ${pod.name}: ${pod.waitingReason}${pod.waitingMessage ? `: ${pod.waitingMessage}` : ''}`,
    action: `Check that ${image} exists and that the cluster may pull it (a private registry needs an imagePullSecret on the default service account of namespace ${namespace}), then deploy again with \`agentctl deploy --image <image>\`.`,
  };
}

export function crashLoopDiagnostics(pod: PodObservation, logTail: string[]): FailureDiagnostics {
  const last = pod.lastTermination;
  const exit = last ? `exited with code ${last.exitCode}${last.reason ? ` (${last.reason})` : ''}` : 'keeps exiting';
  const lines = [`Container "${CONTAINER_NAME}" of pod ${pod.name} ${exit}; restarted ${pod.restarts} times.`];
  if (last?.message) lines.push(`Termination message: ${last.message.trim()}`);
  if (logTail.length > 0) lines.push('Last log lines:', ...logTail);
  return {
    title: 'The agent exits at start (crash loop)',
    description: lines.join('\n'),
    action: 'Fix the error shown above (run the image locally with PORT=8080 and the AGENTCTL_* variables to reproduce it), then deploy a new version.',
  };
}

export function schedulingDiagnostics(pod: PodObservation, namespace: string): FailureDiagnostics {
  return {
    title: 'No node can run the agent',
    description: `Pod ${pod.name} is unschedulable: ${pod.unschedulable}`,
    action: `Lower the version's resource requests or add capacity to the cluster (kubectl -n ${namespace} describe pod ${pod.name} shows what is missing), then deploy again.`,
  };
}

export function startTimeoutDiagnostics(versionId: string, timeoutMs: number, pods: PodObservation[], namespace: string): FailureDiagnostics {
  const states = pods.map((pod) => `${pod.name}: ${pod.phase}${pod.waitingReason ? ` (${pod.waitingReason})` : ''}, not ready`);
  return {
    title: 'The agent did not become ready in time',
    description: [
      `No pod of the version passed its readiness check (GET /healthz) within ${timeoutMs / 1000} s.`,
      ...(states.length > 0 ? states : ['No pod was created.']),
    ].join('\n'),
    action: `Check that the image serves GET /healthz on $PORT (8080) and starts in time; \`kubectl -n ${namespace} describe deployment ${resourceName(versionId)}\` and \`agentctl logs ${versionId}\` show why.`,
  };
}
