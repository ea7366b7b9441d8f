/**
 * The kubernetes runtime driver against a Kubernetes API at the HTTP boundary (test/support/kube-api.ts):
 * the exact objects it applies, the happenings it reports for each pod condition, stop's order, and logs.
 * No database: the driver knows none, so these run the same on both engines.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import type { LaunchSecrets, LogLine, RuntimeDriver, RuntimeHappening, VersionSpec } from '../../src/server/runtime/driver.js';
import { createKubernetesDriver } from '../../src/server/runtime/kubernetes/index.js';
import { resourceName } from '../../src/server/runtime/kubernetes/manifests.js';
import { FakeKubeApi } from '../support/kube-api.js';
import {
  crashLoopPod,
  errImagePullPod,
  IMAGE,
  imagePullBackOffPod,
  MISSING_IMAGE,
  notReadyPod,
  pendingPod,
  readyPod,
  terminatingPod,
  unschedulablePod,
} from '../support/kube-fixtures.js';

const VERSION = 'ver_01JDK8S0000000000000000001';
const NAME = 'agentctl-ver-01jdk8s0000000000000000001';
const LABELS = {
  'app.kubernetes.io/managed-by': 'agentctl',
  'agentctl.dev/agent': 'agt_01JDK8S0000000000000000001',
  'agentctl.dev/branch': 'br_01JDK8S0000000000000000001',
  'agentctl.dev/version': VERSION,
};
const SELECTOR = { 'app.kubernetes.io/managed-by': 'agentctl', 'agentctl.dev/version': VERSION };

const spec: VersionSpec = {
  versionId: VERSION,
  branchId: 'br_01JDK8S0000000000000000001',
  agentId: 'agt_01JDK8S0000000000000000001',
  agentName: 'default/echo',
  imageUrl: IMAGE,
  sourceFilesystemId: null,
  replicas: 2,
  acpType: 'async',
  env: { GREETING: 'hello', PORT: '3000' },
  resources: { requests: { cpu: '100m', memory: '128Mi' }, limits: { memory: '256Mi' } },
};

const EXPECTED_SECRET = {
  apiVersion: 'v1',
  kind: 'Secret',
  metadata: { name: NAME, namespace: 'agentctl', labels: LABELS },
  type: 'Opaque',
  stringData: {
    GREETING: 'hello',
    AGENTCTL_BASE_URL: 'http://agentctl.agentctl.svc:7420',
    AGENTCTL_VERSION_ID: VERSION,
    AGENTCTL_BRANCH_ID: 'br_01JDK8S0000000000000000001',
    AGENTCTL_REGISTRATION_TOKEN: 'rt_reusable_test_token',
    AGENTCTL_SIGNING_SECRET: 'sig_test_secret',
    PORT: '8080',
    AGENTCTL_DATA_ROOT: '/var/lib/agentctl',
    AGENTCTL_ACP_URL: `http://${NAME}.agentctl.svc`,
  },
};

const EXPECTED_DEPLOYMENT = {
  apiVersion: 'apps/v1',
  kind: 'Deployment',
  metadata: { name: NAME, namespace: 'agentctl', labels: LABELS, annotations: { 'agentctl.dev/agent-name': 'default/echo' } },
  spec: {
    replicas: 2,
    selector: { matchLabels: SELECTOR },
    template: {
      metadata: { labels: LABELS, annotations: { 'agentctl.dev/agent-name': 'default/echo' } },
      spec: {
        terminationGracePeriodSeconds: 2,
        containers: [
          {
            name: 'agent',
            image: IMAGE,
            ports: [{ name: 'http', containerPort: 8080, protocol: 'TCP' }],
            envFrom: [{ secretRef: { name: NAME } }],
            readinessProbe: { httpGet: { path: '/healthz', port: 'http' }, periodSeconds: 5, timeoutSeconds: 2, failureThreshold: 3 },
            livenessProbe: { httpGet: { path: '/healthz', port: 'http' }, initialDelaySeconds: 10, periodSeconds: 10, timeoutSeconds: 2, failureThreshold: 3 },
            resources: { requests: { cpu: '100m', memory: '128Mi' }, limits: { memory: '256Mi' } },
            volumeMounts: [{ name: 'data', mountPath: '/var/lib/agentctl' }],
          },
        ],
        volumes: [{ name: 'data', emptyDir: {} }],
      },
    },
  },
};

const EXPECTED_SERVICE = {
  apiVersion: 'v1',
  kind: 'Service',
  metadata: { name: NAME, namespace: 'agentctl', labels: LABELS },
  spec: { type: 'ClusterIP', selector: SELECTOR, ports: [{ name: 'http', port: 80, targetPort: 'http', protocol: 'TCP' }] },
};

let api: FakeKubeApi;
let driver: RuntimeDriver;
let happenings: Array<[string, RuntimeHappening]>;
let tokenRequests: Array<{ reusable?: boolean } | undefined>;
const drivers: RuntimeDriver[] = [];

const secrets: LaunchSecrets = {
  baseUrl: 'http://agentctl.agentctl.svc:7420',
  signingSecret: 'sig_test_secret',
  async registrationToken(options) {
    tokenRequests.push(options);
    return tokenRequests.length === 1 ? 'rt_reusable_test_token' : `rt_reusable_test_token_${tokenRequests.length}`;
  },
};

let warnings: string[];

function openDriver(options: { startTimeoutMs?: number; graceMs?: number; tokenRefreshMs?: number } = {}): RuntimeDriver {
  const opened = createKubernetesDriver({
    kubeConfig: api.kubeConfig(),
    namespace: 'agentctl',
    pollIntervalMs: 20,
    startTimeoutMs: 60_000,
    graceMs: 2_000,
    warn: (message) => warnings.push(message),
    ...options,
  });
  opened.onHappening((versionId, happening) => happenings.push([versionId, happening]));
  drivers.push(opened);
  return opened;
}

async function happened(predicate: (happening: RuntimeHappening) => boolean): Promise<RuntimeHappening> {
  return vi.waitFor(
    () => {
      const found = happenings.find(([versionId, happening]) => versionId === VERSION && predicate(happening));
      if (!found) throw new Error(`not yet; so far: ${JSON.stringify(happenings)}`);
      return found[1];
    },
    { timeout: 5_000, interval: 10 },
  );
}

function kinds(): string[] {
  return happenings.filter(([versionId]) => versionId === VERSION).map(([, happening]) => happening.kind);
}

beforeEach(async () => {
  api = await new FakeKubeApi().start();
  happenings = [];
  tokenRequests = [];
  warnings = [];
  driver = openDriver();
});

afterEach(async () => {
  for (const opened of drivers.splice(0)) await opened.close();
  await api.close();
});

describe('names', () => {
  it('derives a DNS-1035 label of at most 63 characters from any version id', () => {
    expect(resourceName(VERSION)).toBe(NAME);
    expect(resourceName('ver_01JDK8S0000000000000000001_WITH..ODD__CHARS_AND_A_VERY_LONG_TAIL_THAT_GOES_ON')).toBe(
      'agentctl-ver-01jdk8s0000000000000000001-with-odd-chars-and-a-ve',
    );
    expect(resourceName('ver_01JDK8S0000000000000000001_WITH..ODD__CHARS_AND_A_VERY_LONG_TAIL_THAT_GOES_ON')).toMatch(/^[a-z]([-a-z0-9]{0,61}[a-z0-9])?$/);
    // A cut that ends on a dash drops it: a label ends with a letter or digit.
    expect(resourceName(`ver_${'x'.repeat(49)}_yyyy`)).toBe(`agentctl-ver-${'x'.repeat(49)}`);
  });
});

describe('start', () => {
  it('creates the Secret, the Deployment and the Service of the version, in that order, exactly as written here', async () => {
    await driver.start(spec, secrets);

    expect(api.writes()).toEqual([
      { method: 'POST', path: '/api/v1/namespaces/agentctl/secrets', query: {}, contentType: 'application/json', body: EXPECTED_SECRET },
      { method: 'POST', path: '/apis/apps/v1/namespaces/agentctl/deployments', query: {}, contentType: 'application/json', body: EXPECTED_DEPLOYMENT },
      { method: 'POST', path: '/api/v1/namespaces/agentctl/services', query: {}, contentType: 'application/json', body: EXPECTED_SERVICE },
    ]);
    expect(tokenRequests).toEqual([{ reusable: true }]);
    expect(driver.running()).toEqual([VERSION]);
  });

  it('finds the cluster through KUBECONFIG and the namespace in AGENTCTL_K8S_NAMESPACE when given neither', async () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'agentctl-kubeconfig-'));
    const saved = { KUBECONFIG: process.env.KUBECONFIG, AGENTCTL_K8S_NAMESPACE: process.env.AGENTCTL_K8S_NAMESPACE };
    try {
      writeFileSync(
        path.join(dir, 'config'),
        [
          'apiVersion: v1',
          'kind: Config',
          'clusters:',
          // The client speaks plain HTTP only with TLS verification off: the recorded API is http://127.0.0.1.
          `- name: recorded\n  cluster:\n    server: ${api.url}\n    insecure-skip-tls-verify: true`,
          'users:',
          '- name: agentctl\n  user:\n    token: from-kubeconfig',
          'contexts:',
          '- name: recorded\n  context:\n    cluster: recorded\n    user: agentctl',
          'current-context: recorded',
          '',
        ].join('\n'),
      );
      process.env.KUBECONFIG = path.join(dir, 'config');
      process.env.AGENTCTL_K8S_NAMESPACE = 'agents-prod';
      const fromEnvironment = createKubernetesDriver({ pollIntervalMs: 20 });
      drivers.push(fromEnvironment);

      await fromEnvironment.start(spec, secrets);

      expect(api.writes().map((request) => `${request.method} ${request.path}`)).toEqual([
        'POST /api/v1/namespaces/agents-prod/secrets',
        'POST /apis/apps/v1/namespaces/agents-prod/deployments',
        'POST /api/v1/namespaces/agents-prod/services',
      ]);
      expect(api.writes()[0].body.stringData.AGENTCTL_ACP_URL).toBe(`http://${NAME}.agents-prod.svc`);
    } finally {
      for (const [name, value] of Object.entries(saved)) {
        if (value === undefined) delete process.env[name];
        else process.env[name] = value;
      }
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('does nothing for a version it already runs', async () => {
    await driver.start(spec, secrets);
    const writes = api.writes().length;

    await driver.start(spec, secrets);

    expect(api.writes()).toHaveLength(writes);
    expect(tokenRequests).toHaveLength(1);
  });

  it('replaces objects that already exist (a restarted server), keeping the Service its cluster IP', async () => {
    await driver.start(spec, secrets);
    const secretVersion = api.objects.secrets.get(NAME).metadata.resourceVersion;
    const deploymentVersion = api.objects.deployments.get(NAME).metadata.resourceVersion;
    const serviceVersion = api.objects.services.get(NAME).metadata.resourceVersion;
    api.requests.length = 0;

    const restarted = openDriver();
    await restarted.start(spec, secrets);

    const polls = (request: { method: string; path: string }) =>
      request.method === 'GET' && (request.path.endsWith('/pods') || request.path.endsWith('/deployments'));
    expect(api.requests.filter((request) => !polls(request)).map((request) => `${request.method} ${request.path}`)).toEqual([
      'POST /api/v1/namespaces/agentctl/secrets',
      `GET /api/v1/namespaces/agentctl/secrets/${NAME}`,
      `PUT /api/v1/namespaces/agentctl/secrets/${NAME}`,
      'POST /apis/apps/v1/namespaces/agentctl/deployments',
      `GET /apis/apps/v1/namespaces/agentctl/deployments/${NAME}`,
      `PUT /apis/apps/v1/namespaces/agentctl/deployments/${NAME}`,
      'POST /api/v1/namespaces/agentctl/services',
      `GET /api/v1/namespaces/agentctl/services/${NAME}`,
      `PUT /api/v1/namespaces/agentctl/services/${NAME}`,
    ]);
    const puts = api.requests.filter((request) => request.method === 'PUT').map((request) => request.body);
    expect(puts).toEqual([
      {
        ...EXPECTED_SECRET,
        metadata: { ...EXPECTED_SECRET.metadata, resourceVersion: secretVersion },
        stringData: { ...EXPECTED_SECRET.stringData, AGENTCTL_REGISTRATION_TOKEN: 'rt_reusable_test_token_2' },
      },
      { ...EXPECTED_DEPLOYMENT, metadata: { ...EXPECTED_DEPLOYMENT.metadata, resourceVersion: deploymentVersion } },
      {
        ...EXPECTED_SERVICE,
        metadata: { ...EXPECTED_SERVICE.metadata, resourceVersion: serviceVersion },
        spec: { ...EXPECTED_SERVICE.spec, clusterIP: '10.96.0.42', clusterIPs: ['10.96.0.42'] },
      },
    ]);
  });

  it('adopts the versions a previous server left running, so they show in running()', async () => {
    await driver.start(spec, secrets);
    api.pods = [readyPod(`${NAME}-7d4b9c6f5d-abcde`, VERSION)];

    const restarted = openDriver();

    await vi.waitFor(() => expect(restarted.running()).toEqual([VERSION]), { timeout: 5_000, interval: 10 });
    await vi.waitFor(
      () => expect(restarted.status(VERSION)).toEqual({ versionId: VERSION, replicas: [{ replica: 0, phase: 'ready', port: 8080, restarts: 0 }] }),
      { timeout: 5_000, interval: 10 },
    );
  });

  it('fails a source snapshot at once, creating nothing, and says to deploy an image', async () => {
    await driver.start({ ...spec, imageUrl: 'local://fs_01JDK8S0000000000000000001', sourceFilesystemId: 'fs_01JDK8S0000000000000000001' }, secrets);

    expect(happenings).toEqual([
      [
        VERSION,
        {
          kind: 'failed',
          reason: 'source_unavailable',
          diagnostics: {
            title: 'A source snapshot cannot run on Kubernetes',
            description:
              "The version's image is local://fs_01JDK8S0000000000000000001, a source snapshot that only the local runtime can run: the kubernetes runtime runs container images.",
            action:
              'Build and push a container image of the agent (it serves GET /healthz and POST /api on $PORT), then deploy it with `agentctl deploy --image <registry>/<image>:<tag>`.',
          },
        },
      ],
    ]);
    expect(api.writes()).toEqual([]);
    expect(tokenRequests).toEqual([]);
    expect(driver.running()).toEqual([]);
  });

  it('omits resources from the container when the version names none', async () => {
    const { resources: _resources, ...withoutResources } = spec;
    await driver.start(withoutResources, secrets);

    const { resources: _expected, ...container } = EXPECTED_DEPLOYMENT.spec.template.spec.containers[0];
    expect(api.writes()[1].body.spec.template.spec.containers).toEqual([container]);
  });
});

describe('agent secrets', () => {
  const AGENT_ENV_NAME = `${NAME}-agent-env`;
  const withSecrets = (env: Record<string, string>, digest: string): LaunchSecrets => ({ ...secrets, agentEnv: env, agentSecretsDigest: digest });
  const EXPECTED_AGENT_SECRET = {
    apiVersion: 'v1',
    kind: 'Secret',
    metadata: { name: AGENT_ENV_NAME, namespace: 'agentctl', labels: LABELS },
    type: 'Opaque',
    stringData: { OPENAI_API_KEY: 'sk-first-value' },
  };
  const deploymentWith = (digest: string) => ({
    ...EXPECTED_DEPLOYMENT,
    spec: {
      ...EXPECTED_DEPLOYMENT.spec,
      strategy: { type: 'RollingUpdate', rollingUpdate: { maxSurge: 1, maxUnavailable: 0 } },
      template: {
        ...EXPECTED_DEPLOYMENT.spec.template,
        metadata: { labels: LABELS, annotations: { 'agentctl.dev/agent-name': 'default/echo', 'agentctl.dev/secrets-digest': digest } },
        spec: {
          ...EXPECTED_DEPLOYMENT.spec.template.spec,
          containers: [
            { ...EXPECTED_DEPLOYMENT.spec.template.spec.containers[0], envFrom: [{ secretRef: { name: AGENT_ENV_NAME } }, { secretRef: { name: NAME } }] },
          ],
        },
      },
    },
  });

  it('writes them into a Secret of their own that the pods take before the platform Secret, and rolls one pod at a time', async () => {
    await driver.start(spec, withSecrets({ OPENAI_API_KEY: 'sk-first-value' }, 'digest-1'));

    expect(api.writes()).toEqual([
      { method: 'POST', path: '/api/v1/namespaces/agentctl/secrets', query: {}, contentType: 'application/json', body: EXPECTED_AGENT_SECRET },
      { method: 'POST', path: '/api/v1/namespaces/agentctl/secrets', query: {}, contentType: 'application/json', body: EXPECTED_SECRET },
      { method: 'POST', path: '/apis/apps/v1/namespaces/agentctl/deployments', query: {}, contentType: 'application/json', body: deploymentWith('digest-1') },
      { method: 'POST', path: '/api/v1/namespaces/agentctl/services', query: {}, contentType: 'application/json', body: EXPECTED_SERVICE },
    ]);
  });

  it('on a change, replaces the agent Secret and the pod template digest, so the Deployment rolls its pods', async () => {
    await driver.start(spec, withSecrets({ OPENAI_API_KEY: 'sk-first-value' }, 'digest-1'));
    api.requests.length = 0;

    await driver.restart!(spec, withSecrets({ OPENAI_API_KEY: 'sk-second-value' }, 'digest-2'));

    const puts = api.writes().filter((request) => request.method === 'PUT');
    expect(puts.map((request) => request.path)).toEqual([
      `/api/v1/namespaces/agentctl/secrets/${AGENT_ENV_NAME}`,
      `/api/v1/namespaces/agentctl/secrets/${NAME}`,
      `/apis/apps/v1/namespaces/agentctl/deployments/${NAME}`,
      `/api/v1/namespaces/agentctl/services/${NAME}`,
    ]);
    expect(api.objects.secrets.get(AGENT_ENV_NAME).stringData).toEqual({ OPENAI_API_KEY: 'sk-second-value' });
    expect(api.objects.deployments.get(NAME).spec.template.metadata.annotations['agentctl.dev/secrets-digest']).toBe('digest-2');
    expect(api.objects.deployments.get(NAME).spec.strategy).toEqual({ type: 'RollingUpdate', rollingUpdate: { maxSurge: 1, maxUnavailable: 0 } });
    expect(driver.running()).toEqual([VERSION]);
  });

  it('deletes the agent Secret with the version, and never puts a value in a happening or a warning', async () => {
    await driver.start(spec, withSecrets({ OPENAI_API_KEY: 'sk-first-value' }, 'digest-1'));
    api.pods = [readyPod(`${NAME}-7d4b9c6f5d-aaaaa`, VERSION)];
    await happened((happening) => happening.kind === 'ready');

    await driver.stop(VERSION);

    expect(api.writes().at(-1)).toEqual({
      method: 'DELETE',
      path: `/api/v1/namespaces/agentctl/secrets/${AGENT_ENV_NAME}`,
      query: {},
      contentType: 'application/json',
      body: undefined,
    });
    expect([...api.objects.secrets.keys()]).toEqual([]);
    expect(JSON.stringify([happenings, warnings])).not.toContain('sk-first-value');
  });
});

describe('registration token', () => {
  it('puts a fresh reusable token into the Secret of a running version now and then, for pods that start later', async () => {
    const refreshing = openDriver({ tokenRefreshMs: 100 });
    await refreshing.start(spec, secrets);

    await vi.waitFor(() => expect(api.objects.secrets.get(NAME).stringData.AGENTCTL_REGISTRATION_TOKEN).toBe('rt_reusable_test_token_2'), {
      timeout: 5_000,
      interval: 10,
    });
    expect(tokenRequests.slice(0, 2)).toEqual([{ reusable: true }, { reusable: true }]);
    expect(
      api
        .writes()
        .slice(0, 4)
        .map((request) => `${request.method} ${request.path}`),
    ).toEqual([
      'POST /api/v1/namespaces/agentctl/secrets',
      'POST /apis/apps/v1/namespaces/agentctl/deployments',
      'POST /api/v1/namespaces/agentctl/services',
      'POST /api/v1/namespaces/agentctl/secrets',
    ]);
    const replaced = api.requests.find((request) => request.method === 'PUT')!;
    expect(replaced.body).toEqual({
      ...EXPECTED_SECRET,
      metadata: { ...EXPECTED_SECRET.metadata, resourceVersion: expect.any(String) },
      stringData: { ...EXPECTED_SECRET.stringData, AGENTCTL_REGISTRATION_TOKEN: 'rt_reusable_test_token_2' },
    });
  });

  it('leaves the Secret alone until the refresh interval has passed', async () => {
    await driver.start(spec, secrets);
    await vi.waitFor(() => expect(api.requests.filter((request) => request.path.endsWith('/pods')).length).toBeGreaterThan(3), {
      timeout: 5_000,
      interval: 10,
    });

    expect(tokenRequests).toHaveLength(1);
    expect(api.requests.filter((request) => request.method === 'PUT')).toEqual([]);
  });
});

describe('API errors', () => {
  it('rejects start with what it was doing and what the API server said, naming the Role when access is refused', async () => {
    const refusal =
      'secrets is forbidden: User "system:serviceaccount:agentctl:agentctl" cannot create resource "secrets" in API group "" in the namespace "agentctl"';
    api.refusals.push({ method: 'POST', pathEnd: '/secrets', code: 403, reason: 'Forbidden', message: refusal, times: 1 });

    await expect(driver.start(spec, secrets)).rejects.toThrow(
      `kubernetes runtime: creating Secret ${NAME} in namespace agentctl failed: 403 ${refusal} (the server's service account needs the Role in the README, section "Kubernetes runtime")`,
    );
    expect(driver.running()).toEqual([]);
    expect(api.writes().map((request) => `${request.method} ${request.path}`)).toEqual(['POST /api/v1/namespaces/agentctl/secrets']);
  });

  it('reports a failed poll through warn and keeps polling', async () => {
    await driver.start(spec, secrets);
    api.refusals.push({ method: 'GET', pathEnd: '/pods', code: 500, reason: 'InternalError', message: 'etcdserver: request timed out', times: 2 });
    api.pods = [readyPod(`${NAME}-7d4b9c6f5d-aaaaa`, VERSION)];

    await happened((happening) => happening.kind === 'ready');
    expect(warnings).toEqual([
      'kubernetes runtime: listing pods in namespace agentctl failed: 500 etcdserver: request timed out',
      'kubernetes runtime: listing pods in namespace agentctl failed: 500 etcdserver: request timed out',
    ]);
  });

  it('stops polling when closed', async () => {
    await driver.start(spec, secrets);
    await vi.waitFor(() => expect(api.requests.filter((request) => request.path.endsWith('/pods')).length).toBeGreaterThan(1), {
      timeout: 5_000,
      interval: 10,
    });

    await driver.close();
    const seen = api.requests.length;
    await new Promise((resolve) => setTimeout(resolve, 100));

    expect(api.requests.length).toBe(seen);
  });
});

describe('pod conditions', () => {
  it('reports each pod started, then ready, as a replica by name order', async () => {
    await driver.start(spec, secrets);
    api.pods = [pendingPod(`${NAME}-7d4b9c6f5d-bbbbb`, VERSION), pendingPod(`${NAME}-7d4b9c6f5d-aaaaa`, VERSION)];
    await happened((happening) => happening.kind === 'started' && happening.replica === 1);
    expect(driver.status(VERSION)).toEqual({
      versionId: VERSION,
      replicas: [
        { replica: 0, phase: 'starting', port: 8080, restarts: 0 },
        { replica: 1, phase: 'starting', port: 8080, restarts: 0 },
      ],
    });

    api.pods = [readyPod(`${NAME}-7d4b9c6f5d-bbbbb`, VERSION), readyPod(`${NAME}-7d4b9c6f5d-aaaaa`, VERSION)];
    await happened((happening) => happening.kind === 'ready' && happening.replica === 1);

    expect(happenings.filter(([versionId]) => versionId === VERSION).map(([, happening]) => happening)).toEqual([
      { kind: 'started', replica: 0 },
      { kind: 'started', replica: 1 },
      { kind: 'ready', replica: 0 },
      { kind: 'ready', replica: 1 },
    ]);
    expect(driver.status(VERSION)?.replicas.map((replica) => replica.phase)).toEqual(['ready', 'ready']);
  });

  it('reports a ready pod that fails its readiness check as unhealthy, and recovered when it passes again', async () => {
    await driver.start(spec, secrets);
    api.pods = [readyPod(`${NAME}-7d4b9c6f5d-aaaaa`, VERSION)];
    await happened((happening) => happening.kind === 'ready');

    api.pods = [notReadyPod(`${NAME}-7d4b9c6f5d-aaaaa`, VERSION)];
    const unhealthy = await happened((happening) => happening.kind === 'unhealthy');
    expect(unhealthy).toEqual({ kind: 'unhealthy', replica: 0, detail: `pod ${NAME}-7d4b9c6f5d-aaaaa fails its readiness check (GET /healthz)` });
    expect(driver.status(VERSION)?.replicas).toEqual([{ replica: 0, phase: 'unhealthy', port: 8080, restarts: 0 }]);

    api.pods = [readyPod(`${NAME}-7d4b9c6f5d-aaaaa`, VERSION)];
    await happened((happening) => happening.kind === 'recovered');
    expect(kinds()).toEqual(['started', 'ready', 'unhealthy', 'recovered']);
  });

  it('fails with image_pull_failed on ImagePullBackOff, naming the image and what to do', async () => {
    await driver.start({ ...spec, imageUrl: MISSING_IMAGE }, secrets);
    api.pods = [imagePullBackOffPod(`${NAME}-7d4b9c6f5d-aaaaa`, VERSION)];

    expect(await happened((happening) => happening.kind === 'failed')).toEqual({
      kind: 'failed',
      reason: 'image_pull_failed',
      diagnostics: {
        title: `The cluster cannot pull the image ${MISSING_IMAGE}`,
        description: `Pod ${NAME}-7d4b9c6f5d-aaaaa: ImagePullBackOff: Back-off pulling image "${MISSING_IMAGE}"`,
        action: `Check that ${MISSING_IMAGE} exists and that the cluster may pull it (a private registry needs an imagePullSecret on the default service account of namespace agentctl), then deploy again with \`agentctl deploy --image <image>\`.`,
      },
    });
  });

  it('fails with image_pull_failed on ErrImagePull, with the registry error', async () => {
    await driver.start({ ...spec, imageUrl: MISSING_IMAGE }, secrets);
    api.pods = [errImagePullPod(`${NAME}-7d4b9c6f5d-aaaaa`, VERSION)];

    const failed = await happened((happening) => happening.kind === 'failed');
    expect(failed).toMatchObject({ kind: 'failed', reason: 'image_pull_failed' });
    expect(failed.kind === 'failed' && failed.diagnostics.description).toBe(
      `Pod ${NAME}-7d4b9c6f5d-aaaaa: ErrImagePull: rpc error: code = NotFound desc = failed to pull and unpack image "${MISSING_IMAGE}": failed to resolve reference "${MISSING_IMAGE}": ${MISSING_IMAGE}: not found`,
    );
  });

  it('fails with crash_loop on CrashLoopBackOff, with the exit code, termination message and last log lines of the crashed run', async () => {
    await driver.start(spec, secrets);
    const pod = `${NAME}-7d4b9c6f5d-aaaaa`;
    api.previousLogs.set(
      pod,
      `${Array.from({ length: 25 }, (_, i) => `2026-11-23T01:01:10.${String(i).padStart(3, '0')}Z line ${i + 1}\n`).join('')}2026-11-23T01:01:11Z Error: AGENTCTL_SIGNING_SECRET is not set\n`,
    );
    api.pods = [crashLoopPod(pod, VERSION)];

    expect(await happened((happening) => happening.kind === 'failed')).toEqual({
      kind: 'failed',
      reason: 'crash_loop',
      diagnostics: {
        title: 'The agent exits at start (crash loop)',
        description: [
          `Container "agent" of pod ${pod} exited with code 1 (Error); restarted 4 times.`,
          'Termination message: Error: AGENTCTL_SIGNING_SECRET is not set',
          'Last log lines:',
          ...Array.from({ length: 19 }, (_, i) => `line ${i + 7}`),
          'Error: AGENTCTL_SIGNING_SECRET is not set',
        ].join('\n'),
        action: 'Fix the error shown above (run the image locally with PORT=8080 and the AGENTCTL_* variables to reproduce it), then deploy a new version.',
      },
    });
    expect(api.requests.filter((request) => request.path.endsWith('/log'))).toEqual([
      {
        method: 'GET',
        path: `/api/v1/namespaces/agentctl/pods/${pod}/log`,
        query: { container: 'agent', previous: 'true', tailLines: '20' },
        contentType: undefined,
        body: undefined,
      },
    ]);
    expect(driver.status(VERSION)?.replicas).toEqual([{ replica: 0, phase: 'restarting', port: 8080, restarts: 4 }]);
  });

  it('fails with scheduling_failed when the scheduler cannot place a pod, with its message', async () => {
    await driver.start(spec, secrets);
    api.pods = [unschedulablePod(`${NAME}-7d4b9c6f5d-aaaaa`, VERSION)];

    expect(await happened((happening) => happening.kind === 'failed')).toEqual({
      kind: 'failed',
      reason: 'scheduling_failed',
      diagnostics: {
        title: 'No node can run the agent',
        description: `Pod ${NAME}-7d4b9c6f5d-aaaaa is unschedulable: 0/3 nodes are available: 3 Insufficient memory. preemption: 0/3 nodes are available: 3 No preemption victims found for incoming pod.`,
        action: `Lower the version's resource requests or add capacity to the cluster (kubectl -n agentctl describe pod ${NAME}-7d4b9c6f5d-aaaaa shows what is missing), then deploy again.`,
      },
    });
  });

  it('fails with start_timeout when no pod becomes ready in time', async () => {
    const impatient = openDriver({ startTimeoutMs: 200 });
    api.pods = [notReadyPod(`${NAME}-7d4b9c6f5d-aaaaa`, VERSION)];
    await impatient.start(spec, secrets);

    expect(await happened((happening) => happening.kind === 'failed')).toEqual({
      kind: 'failed',
      reason: 'start_timeout',
      diagnostics: {
        title: 'The agent did not become ready in time',
        description: `No pod of the version passed its readiness check (GET /healthz) within 0.2 s.\n${NAME}-7d4b9c6f5d-aaaaa: Running, not ready`,
        action: `Check that the image serves GET /healthz on $PORT (8080) and starts in time; \`kubectl -n agentctl describe deployment ${NAME}\` and \`agentctl logs ${VERSION}\` show why.`,
      },
    });
  });

  it('reports a crash loop after the version was ready as an unhealthy replica, not a failed version', async () => {
    await driver.start(spec, secrets);
    api.pods = [readyPod(`${NAME}-7d4b9c6f5d-aaaaa`, VERSION)];
    await happened((happening) => happening.kind === 'ready');

    api.pods = [crashLoopPod(`${NAME}-7d4b9c6f5d-aaaaa`, VERSION)];
    await happened((happening) => happening.kind === 'unhealthy');
    await new Promise((resolve) => setTimeout(resolve, 100));

    expect(kinds()).toEqual(['started', 'ready', 'unhealthy']);
    expect(driver.status(VERSION)?.replicas).toEqual([{ replica: 0, phase: 'restarting', port: 8080, restarts: 4 }]);
  });
});

describe('stop', () => {
  it('scales to zero, waits for the pods to go, then deletes the Deployment, the Service and the Secret', async () => {
    await driver.start(spec, secrets);
    api.pods = [readyPod(`${NAME}-7d4b9c6f5d-aaaaa`, VERSION)];
    await happened((happening) => happening.kind === 'ready');
    api.requests.length = 0;

    await driver.stop(VERSION);

    expect(api.writes()).toEqual([
      {
        method: 'PATCH',
        path: `/apis/apps/v1/namespaces/agentctl/deployments/${NAME}/scale`,
        query: {},
        contentType: 'application/merge-patch+json',
        body: { spec: { replicas: 0 } },
      },
      {
        method: 'DELETE',
        path: `/apis/apps/v1/namespaces/agentctl/deployments/${NAME}`,
        query: { propagationPolicy: 'Background' },
        contentType: 'application/json',
        body: undefined,
      },
      { method: 'DELETE', path: `/api/v1/namespaces/agentctl/services/${NAME}`, query: {}, contentType: 'application/json', body: undefined },
      { method: 'DELETE', path: `/api/v1/namespaces/agentctl/secrets/${NAME}`, query: {}, contentType: 'application/json', body: undefined },
    ]);
    expect(happenings.at(-1)).toEqual([VERSION, { kind: 'stopped' }]);
    expect(driver.running()).toEqual([]);
    expect(driver.status(VERSION)).toBeUndefined();
    expect([...api.objects.deployments.keys(), ...api.objects.services.keys(), ...api.objects.secrets.keys()]).toEqual([]);
  });

  it('deletes pods still terminating after the grace period before deleting the Deployment', async () => {
    await driver.start(spec, secrets);
    api.podsIgnoreScaleDown = true;
    api.pods = [terminatingPod(`${NAME}-7d4b9c6f5d-aaaaa`, VERSION)];
    api.requests.length = 0;

    await driver.stop(VERSION, { graceMs: 100 });

    expect(api.writes().map((request) => `${request.method} ${request.path}?${new URLSearchParams(request.query)}`)).toEqual([
      `PATCH /apis/apps/v1/namespaces/agentctl/deployments/${NAME}/scale?`,
      `DELETE /api/v1/namespaces/agentctl/pods/${NAME}-7d4b9c6f5d-aaaaa?gracePeriodSeconds=0`,
      `DELETE /apis/apps/v1/namespaces/agentctl/deployments/${NAME}?propagationPolicy=Background`,
      `DELETE /api/v1/namespaces/agentctl/services/${NAME}?`,
      `DELETE /api/v1/namespaces/agentctl/secrets/${NAME}?`,
    ]);
    expect(api.pods).toEqual([]);
  });

  it('keeps a version it could not stop in running(), so the stop can be retried', async () => {
    await driver.start(spec, secrets);
    api.refusals.push({ method: 'PATCH', pathEnd: '/scale', code: 403, reason: 'Forbidden', message: 'deployments.apps "x" is forbidden', times: 1 });

    await expect(driver.stop(VERSION)).rejects.toThrow(`kubernetes runtime: scaling Deployment ${NAME} in namespace agentctl to 0 failed: 403`);
    expect(driver.running()).toEqual([VERSION]);
    expect(kinds()).not.toContain('stopped');

    await driver.stop(VERSION);
    expect(driver.running()).toEqual([]);
    expect(kinds().at(-1)).toBe('stopped');
  });

  it('applies a version started again after its stop afresh', async () => {
    await driver.start(spec, secrets);
    await driver.stop(VERSION);
    api.requests.length = 0;

    await driver.start(spec, secrets);

    expect(api.writes().map((request) => `${request.method} ${request.path}`)).toEqual([
      'POST /api/v1/namespaces/agentctl/secrets',
      'POST /apis/apps/v1/namespaces/agentctl/deployments',
      'POST /api/v1/namespaces/agentctl/services',
    ]);
    expect(driver.running()).toEqual([VERSION]);
    api.pods = [readyPod(`${NAME}-7d4b9c6f5d-ccccc`, VERSION)];
    await happened((happening) => happening.kind === 'ready');
  });

  it('stops a version whose objects are already gone without an error', async () => {
    await driver.stop(VERSION, { graceMs: 100 });

    // Deployment, Service, Secret, and the agent Secret a version it knows nothing of may have.
    expect(api.writes().map((request) => request.method)).toEqual(['PATCH', 'DELETE', 'DELETE', 'DELETE', 'DELETE']);
    expect(happenings).toEqual([[VERSION, { kind: 'stopped' }]]);
  });
});

describe('logs', () => {
  const first = `${NAME}-7d4b9c6f5d-aaaaa`;
  const second = `${NAME}-7d4b9c6f5d-bbbbb`;

  beforeEach(() => {
    api.pods = [readyPod(second, VERSION), readyPod(first, VERSION)];
    api.logs.set(
      first,
      '2026-11-23T01:00:01.100000000Z listening on 8080\n2026-11-23T01:00:03.5Z handled evt_1\n2026-11-23T01:00:05.000000001Z handled evt_3\n',
    );
    api.logs.set(second, '2026-11-23T01:00:02.25Z listening on 8080\n2026-11-23T01:00:04Z handled evt_2\n');
  });

  async function collect(iterable: AsyncIterable<LogLine>): Promise<LogLine[]> {
    const lines: LogLine[] = [];
    for await (const line of iterable) lines.push(line);
    return lines;
  }

  it('merges the last lines of every pod by time, each with its replica', async () => {
    expect(await collect(driver.logs(VERSION, { tail: 4 }))).toEqual([
      { versionId: VERSION, replica: 1, stream: 'stdout', time: '2026-11-23T01:00:02.250Z', line: 'listening on 8080' },
      { versionId: VERSION, replica: 0, stream: 'stdout', time: '2026-11-23T01:00:03.500Z', line: 'handled evt_1' },
      { versionId: VERSION, replica: 1, stream: 'stdout', time: '2026-11-23T01:00:04.000Z', line: 'handled evt_2' },
      { versionId: VERSION, replica: 0, stream: 'stdout', time: '2026-11-23T01:00:05.000Z', line: 'handled evt_3' },
    ]);
    expect(api.requests.filter((request) => request.path.endsWith('/log')).map((request) => request.query)).toEqual([
      { container: 'agent', tailLines: '4', timestamps: 'true' },
      { container: 'agent', tailLines: '4', timestamps: 'true' },
    ]);
  });

  it('keeps only lines since the given time', async () => {
    const lines = await collect(driver.logs(VERSION, { since: new Date('2026-11-23T01:00:03.500Z') }));

    expect(lines.map((line) => line.line)).toEqual(['handled evt_1', 'handled evt_2', 'handled evt_3']);
  });

  it('follows new lines of every pod until the signal aborts, re-attaching a stream the API server closed', async () => {
    const abort = new AbortController();
    const seen: LogLine[] = [];
    const following = (async () => {
      for await (const line of driver.logs(VERSION, { tail: 1, follow: true, signal: abort.signal })) seen.push(line);
    })();
    await vi.waitFor(() => expect([api.followerCount(first), api.followerCount(second)]).toEqual([1, 1]), { timeout: 5_000, interval: 10 });

    api.appendLog(second, '2026-11-23T01:00:06Z handled evt_4\n');
    await vi.waitFor(() => expect(seen.map((line) => line.line)).toEqual(['handled evt_3', 'handled evt_4']), { timeout: 5_000, interval: 10 });

    // The API server ends the stream (a container restart): the driver follows again from its last line, without repeating it.
    api.endFollowers(first);
    await vi.waitFor(() => expect(api.followerCount(first)).toBe(1), { timeout: 5_000, interval: 10 });
    api.appendLog(first, '2026-11-23T01:00:07Z handled evt_5\n');
    await vi.waitFor(() => expect(seen.map((line) => line.line)).toEqual(['handled evt_3', 'handled evt_4', 'handled evt_5']), {
      timeout: 5_000,
      interval: 10,
    });

    abort.abort();
    await following;
    expect(seen.map((line) => [line.replica, line.time])).toEqual([
      [0, '2026-11-23T01:00:05.000Z'],
      [1, '2026-11-23T01:00:06.000Z'],
      [0, '2026-11-23T01:00:07.000Z'],
    ]);
    await vi.waitFor(() => expect([api.followerCount(first), api.followerCount(second)]).toEqual([0, 0]), { timeout: 5_000, interval: 10 });
    const follows = api.requests.filter((request) => request.query.follow === 'true');
    expect(follows.map((request) => [request.path.split('/')[6], request.query.sinceTime])).toEqual([
      [first, '2026-11-23T01:00:05Z'],
      [second, '2026-11-23T01:00:04Z'],
      [first, '2026-11-23T01:00:05Z'],
    ]);
  });

  it('follows a pod that starts while following, numbered by its place among the pods then', async () => {
    api.pods = [readyPod(second, VERSION)];
    const abort = new AbortController();
    const seen: LogLine[] = [];
    const following = (async () => {
      for await (const line of driver.logs(VERSION, { tail: 1, follow: true, signal: abort.signal })) seen.push(line);
    })();
    await vi.waitFor(() => expect(api.followerCount(second)).toBe(1), { timeout: 5_000, interval: 10 });

    api.pods = [readyPod(second, VERSION), readyPod(first, VERSION)];
    api.logs.set(first, '');
    await vi.waitFor(() => expect(api.followerCount(first)).toBe(1), { timeout: 5_000, interval: 10 });
    api.appendLog(first, '2099-01-01T00:00:00Z listening on 8080\n');
    await vi.waitFor(() => expect(seen).toHaveLength(2), { timeout: 5_000, interval: 10 });

    abort.abort();
    await following;
    // `second` was replica 0 while alone; `first` sorts before it, so it is replica 0 when it comes.
    expect(seen.map((line) => [line.replica, line.line])).toEqual([
      [0, 'handled evt_2'],
      [0, 'listening on 8080'],
    ]);
  });
});
