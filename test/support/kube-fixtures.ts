/**
 * Pods as the Kubernetes API returns them (shapes recorded from `kubectl get pod -o json` on a
 * v1.31 cluster, trimmed to the fields a client sees on every pod), one per condition the
 * kubernetes driver maps to the lifecycle.
 */
const NAMESPACE = 'agentctl';

function labels(versionId: string) {
  return {
    'app.kubernetes.io/managed-by': 'agentctl',
    'agentctl.dev/agent': 'agt_01JDK8S0000000000000000001',
    'agentctl.dev/branch': 'br_01JDK8S0000000000000000001',
    'agentctl.dev/version': versionId,
    'pod-template-hash': '7d4b9c6f5d',
  };
}

function basePod(name: string, versionId: string, image: string) {
  return {
    metadata: {
      name,
      generateName: name.replace(/[^-]+$/, ''),
      namespace: NAMESPACE,
      uid: `uid-${name}`,
      resourceVersion: '48213',
      creationTimestamp: '2026-11-23T01:00:00Z',
      labels: labels(versionId),
      ownerReferences: [
        { apiVersion: 'apps/v1', kind: 'ReplicaSet', name: name.replace(/-[^-]+$/, ''), uid: 'uid-rs', controller: true, blockOwnerDeletion: true },
      ],
    },
    spec: {
      containers: [{ name: 'agent', image, ports: [{ name: 'http', containerPort: 8080, protocol: 'TCP' }] }],
      restartPolicy: 'Always',
      terminationGracePeriodSeconds: 30,
      nodeName: 'node-a',
    },
  };
}

function conditions(ready: boolean, scheduled = true) {
  const at = '2026-11-23T01:00:05Z';
  return [
    { type: 'PodReadyToStartContainers', status: scheduled ? 'True' : 'False', lastProbeTime: null, lastTransitionTime: at },
    { type: 'Initialized', status: 'True', lastProbeTime: null, lastTransitionTime: at },
    ready
      ? { type: 'Ready', status: 'True', lastProbeTime: null, lastTransitionTime: at }
      : {
          type: 'Ready',
          status: 'False',
          lastProbeTime: null,
          lastTransitionTime: at,
          reason: 'ContainersNotReady',
          message: 'containers with unready status: [agent]',
        },
    ready
      ? { type: 'ContainersReady', status: 'True', lastProbeTime: null, lastTransitionTime: at }
      : {
          type: 'ContainersReady',
          status: 'False',
          lastProbeTime: null,
          lastTransitionTime: at,
          reason: 'ContainersNotReady',
          message: 'containers with unready status: [agent]',
        },
    { type: 'PodScheduled', status: 'True', lastProbeTime: null, lastTransitionTime: at },
  ];
}

export const IMAGE = 'registry.example.com/bots/echo:1.4.2';

/** Created, its container still being created (image pulling). */
export function pendingPod(name: string, versionId: string) {
  return {
    ...basePod(name, versionId, IMAGE),
    status: {
      phase: 'Pending',
      conditions: conditions(false),
      hostIP: '10.0.0.11',
      startTime: '2026-11-23T01:00:01Z',
      containerStatuses: [
        {
          name: 'agent',
          state: { waiting: { reason: 'ContainerCreating' } },
          lastState: {},
          ready: false,
          restartCount: 0,
          image: IMAGE,
          imageID: '',
          started: false,
        },
      ],
    },
  };
}

/** Running and passing its readiness probe. */
export function readyPod(name: string, versionId: string, restartCount = 0) {
  return {
    ...basePod(name, versionId, IMAGE),
    status: {
      phase: 'Running',
      conditions: conditions(true),
      hostIP: '10.0.0.11',
      podIP: '10.244.1.17',
      startTime: '2026-11-23T01:00:01Z',
      containerStatuses: [
        {
          name: 'agent',
          state: { running: { startedAt: '2026-11-23T01:00:03Z' } },
          lastState: {},
          ready: true,
          restartCount,
          image: IMAGE,
          imageID: `${IMAGE}@sha256:4f1c`,
          containerID: 'containerd://a1',
          started: true,
        },
      ],
    },
  };
}

/** Running, but its readiness probe fails (GET /healthz answers 503). */
export function notReadyPod(name: string, versionId: string) {
  return {
    ...basePod(name, versionId, IMAGE),
    status: {
      phase: 'Running',
      conditions: conditions(false),
      hostIP: '10.0.0.11',
      podIP: '10.244.1.17',
      startTime: '2026-11-23T01:00:01Z',
      containerStatuses: [
        {
          name: 'agent',
          state: { running: { startedAt: '2026-11-23T01:00:03Z' } },
          lastState: {},
          ready: false,
          restartCount: 0,
          image: IMAGE,
          imageID: `${IMAGE}@sha256:4f1c`,
          containerID: 'containerd://a1',
          started: true,
        },
      ],
    },
  };
}

export const MISSING_IMAGE = 'registry.example.com/bots/echo:does-not-exist';

export function imagePullBackOffPod(name: string, versionId: string) {
  return {
    ...basePod(name, versionId, MISSING_IMAGE),
    status: {
      phase: 'Pending',
      conditions: conditions(false),
      hostIP: '10.0.0.11',
      podIP: '10.244.1.18',
      startTime: '2026-11-23T01:00:01Z',
      containerStatuses: [
        {
          name: 'agent',
          state: { waiting: { reason: 'ImagePullBackOff', message: `Back-off pulling image "${MISSING_IMAGE}"` } },
          lastState: {},
          ready: false,
          restartCount: 0,
          image: MISSING_IMAGE,
          imageID: '',
          started: false,
        },
      ],
    },
  };
}

export function errImagePullPod(name: string, versionId: string) {
  const pod = imagePullBackOffPod(name, versionId);
  pod.status.containerStatuses[0].state = {
    waiting: {
      reason: 'ErrImagePull',
      message: `rpc error: code = NotFound desc = failed to pull and unpack image "${MISSING_IMAGE}": failed to resolve reference "${MISSING_IMAGE}": ${MISSING_IMAGE}: not found`,
    },
  };
  return pod;
}

/** The container exited with code 1 four times; the kubelet backs off restarting it. */
export function crashLoopPod(name: string, versionId: string) {
  return {
    ...basePod(name, versionId, IMAGE),
    status: {
      phase: 'Running',
      conditions: conditions(false),
      hostIP: '10.0.0.11',
      podIP: '10.244.1.19',
      startTime: '2026-11-23T01:00:01Z',
      containerStatuses: [
        {
          name: 'agent',
          state: { waiting: { reason: 'CrashLoopBackOff', message: `back-off 40s restarting failed container=agent pod=${name}_${NAMESPACE}(uid-${name})` } },
          lastState: {
            terminated: {
              exitCode: 1,
              reason: 'Error',
              message: 'Error: AGENTCTL_SIGNING_SECRET is not set\n',
              startedAt: '2026-11-23T01:01:10Z',
              finishedAt: '2026-11-23T01:01:11Z',
              containerID: 'containerd://c4',
            },
          },
          ready: false,
          restartCount: 4,
          image: IMAGE,
          imageID: `${IMAGE}@sha256:4f1c`,
          containerID: 'containerd://c4',
          started: false,
        },
      ],
    },
  };
}

/** No node has the memory the pod requests. */
export function unschedulablePod(name: string, versionId: string) {
  const pod = basePod(name, versionId, IMAGE);
  const { nodeName: _nodeName, ...spec } = pod.spec;
  return {
    ...pod,
    spec,
    status: {
      phase: 'Pending',
      conditions: [
        {
          type: 'PodScheduled',
          status: 'False',
          lastProbeTime: null,
          lastTransitionTime: '2026-11-23T01:00:01Z',
          reason: 'Unschedulable',
          message: '0/3 nodes are available: 3 Insufficient memory. preemption: 0/3 nodes are available: 3 No preemption victims found for incoming pod.',
        },
      ],
      qosClass: 'Burstable',
    },
  };
}

/** A pod being deleted (scale down): it still lists until its containers stop. */
export function terminatingPod(name: string, versionId: string) {
  const pod = readyPod(name, versionId);
  return { ...pod, metadata: { ...pod.metadata, deletionTimestamp: '2026-11-23T01:05:00Z', deletionGracePeriodSeconds: 30 } };
}
