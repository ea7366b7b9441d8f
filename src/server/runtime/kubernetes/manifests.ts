/**
 * The objects the kubernetes driver applies for one version: a Secret holding the process-contract
 * environment, a Deployment running `replicas` pods of the version's image, and a ClusterIP Service
 * whose DNS name is the version's acp_url. Pure functions of the spec, so tests can compare the exact
 * manifests.
 */
import type { V1Deployment, V1Secret, V1Service } from '@kubernetes/client-node';
import { PROCESS_ENV, type VersionSpec } from '../driver.js';

export const MANAGED_BY_LABEL = 'app.kubernetes.io/managed-by';
export const MANAGED_BY = 'agentctl';
export const AGENT_LABEL = 'agentctl.dev/agent';
export const BRANCH_LABEL = 'agentctl.dev/branch';
export const VERSION_LABEL = 'agentctl.dev/version';
export const AGENT_NAME_ANNOTATION = 'agentctl.dev/agent-name';
/**
 * On the pod template: which revisions of the agent's secrets the pods run with (a digest, never a
 * value). A change rolls the pods, one at a time (the Deployment's strategy).
 */
export const SECRETS_DIGEST_ANNOTATION = 'agentctl.dev/secrets-digest';

/** The one container of every pod; logs and diagnostics read it by name. */
export const CONTAINER_NAME = 'agent';
/** Each pod has its own network namespace, so every agent listens on the same port. */
export const CONTAINER_PORT = 8080;
export const SERVICE_PORT = 80;
/**
 * Where the platform delivers (acp_url): the ADK's AgentServer registers this instead of its loopback
 * address. Not in PROCESS_ENV on main yet (the adk branch moves PROCESS_ENV into the contract); it
 * belongs there once both land.
 */
export const ACP_URL_ENV = 'AGENTCTL_ACP_URL';
/** An emptyDir: the agent's task workspaces live and die with the pod. */
export const DATA_ROOT = '/var/lib/agentctl';

/**
 * The name of every object of a version: a DNS-1035 label (Service names must start with a letter;
 * Deployment and Secret names accept it too), lowercase, at most 63 characters.
 */
export function resourceName(versionId: string): string {
  const slug = versionId
    .toLowerCase()
    .replace(/[^a-z0-9-]+/g, '-')
    .replace(/-+/g, '-')
    .replace(/^-|-$/g, '');
  return `agentctl-${slug}`.slice(0, 63).replace(/-+$/, '');
}

/** The label selector of the pods of a version (also the Service's selector). */
export function versionSelector(versionId: string): Record<string, string> {
  return { [MANAGED_BY_LABEL]: MANAGED_BY, [VERSION_LABEL]: versionId };
}

export function selectorString(labels: Record<string, string>): string {
  return Object.entries(labels)
    .map(([key, value]) => `${key}=${value}`)
    .join(',');
}

function versionLabels(spec: VersionSpec): Record<string, string> {
  return { [MANAGED_BY_LABEL]: MANAGED_BY, [AGENT_LABEL]: spec.agentId, [BRANCH_LABEL]: spec.branchId, [VERSION_LABEL]: spec.versionId };
}

/** `http://<service>.<namespace>.svc`: what agents register as their acp_url. */
export function serviceUrl(versionId: string, namespace: string): string {
  return `http://${resourceName(versionId)}.${namespace}.svc`;
}

export interface SecretInputs {
  namespace: string;
  baseUrl: string;
  registrationToken: string;
  signingSecret: string;
}

export function buildSecret(spec: VersionSpec, inputs: SecretInputs): V1Secret {
  return {
    apiVersion: 'v1',
    kind: 'Secret',
    metadata: { name: resourceName(spec.versionId), namespace: inputs.namespace, labels: versionLabels(spec) },
    type: 'Opaque',
    // The platform's variables come last: agentctl.json `env` cannot override them.
    stringData: {
      ...spec.env,
      [PROCESS_ENV.baseUrl]: inputs.baseUrl,
      [PROCESS_ENV.versionId]: spec.versionId,
      [PROCESS_ENV.branchId]: spec.branchId,
      [PROCESS_ENV.registrationToken]: inputs.registrationToken,
      [PROCESS_ENV.signingSecret]: inputs.signingSecret,
      [PROCESS_ENV.port]: String(CONTAINER_PORT),
      [PROCESS_ENV.dataRoot]: DATA_ROOT,
      [ACP_URL_ENV]: serviceUrl(spec.versionId, inputs.namespace),
    },
  };
}

/** The Secret holding the agent's own secrets (README "Secrets"), beside the version's platform Secret. */
export const agentSecretName = (versionId: string) => `${resourceName(versionId)}-agent-env`;

export function buildAgentSecret(spec: VersionSpec, options: { namespace: string; env: Record<string, string> }): V1Secret {
  return {
    apiVersion: 'v1',
    kind: 'Secret',
    metadata: { name: agentSecretName(spec.versionId), namespace: options.namespace, labels: versionLabels(spec) },
    type: 'Opaque',
    stringData: { ...options.env },
  };
}

export function buildDeployment(
  spec: VersionSpec,
  options: {
    namespace: string;
    terminationGracePeriodSeconds: number;
    /** The version's agent secrets (their digest): the pods also take the agent Secret, and roll one at a time when it changes. */
    agentSecrets?: { digest: string };
  },
): V1Deployment {
  const name = resourceName(spec.versionId);
  const labels = versionLabels(spec);
  const annotations = { [AGENT_NAME_ANNOTATION]: spec.agentName };
  const secrets = options.agentSecrets;
  // The platform's Secret last: for a name in both, the later envFrom entry wins.
  const envFrom = secrets ? [{ secretRef: { name: agentSecretName(spec.versionId) } }, { secretRef: { name } }] : [{ secretRef: { name } }];
  const healthz = { httpGet: { path: '/healthz', port: 'http' } };
  return {
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: { name, namespace: options.namespace, labels, annotations },
    spec: {
      replicas: spec.replicas,
      selector: { matchLabels: versionSelector(spec.versionId) },
      ...(secrets ? { strategy: { type: 'RollingUpdate', rollingUpdate: { maxSurge: 1, maxUnavailable: 0 } } } : {}),
      template: {
        metadata: { labels, annotations: secrets ? { ...annotations, [SECRETS_DIGEST_ANNOTATION]: secrets.digest } : annotations },
        spec: {
          terminationGracePeriodSeconds: options.terminationGracePeriodSeconds,
          containers: [
            {
              name: CONTAINER_NAME,
              image: spec.imageUrl,
              ports: [{ name: 'http', containerPort: CONTAINER_PORT, protocol: 'TCP' }],
              envFrom,
              readinessProbe: { ...healthz, periodSeconds: 5, timeoutSeconds: 2, failureThreshold: 3 },
              livenessProbe: { ...healthz, initialDelaySeconds: 10, periodSeconds: 10, timeoutSeconds: 2, failureThreshold: 3 },
              ...(spec.resources ? { resources: spec.resources } : {}),
              volumeMounts: [{ name: 'data', mountPath: DATA_ROOT }],
            },
          ],
          volumes: [{ name: 'data', emptyDir: {} }],
        },
      },
    },
  };
}

export function buildService(spec: VersionSpec, options: { namespace: string }): V1Service {
  return {
    apiVersion: 'v1',
    kind: 'Service',
    metadata: { name: resourceName(spec.versionId), namespace: options.namespace, labels: versionLabels(spec) },
    spec: {
      type: 'ClusterIP',
      selector: versionSelector(spec.versionId),
      ports: [{ name: 'http', port: SERVICE_PORT, targetPort: 'http', protocol: 'TCP' }],
    },
  };
}
