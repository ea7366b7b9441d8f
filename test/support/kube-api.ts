/**
 * A Kubernetes API server at the HTTP boundary, for driver tests: a real HTTP server (port 0) that
 * keeps Deployments, Services and Secrets as the API server does (create -> 201 or 409 AlreadyExists,
 * read/replace/delete -> 404 when missing, resourceVersion on every write), serves the pods and pod
 * logs a test puts in it (recorded shapes, see kube-fixtures.ts), and records every request.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { KubeConfig } from '@kubernetes/client-node';

export interface RecordedRequest {
  method: string;
  path: string;
  query: Record<string, string>;
  contentType: string | undefined;
  body: any;
}

type Kind = 'deployments' | 'services' | 'secrets';

const ROUTES: Array<{ pattern: RegExp; kind: Kind | 'pods' | 'log' | 'scale' }> = [
  { pattern: /^\/apis\/apps\/v1\/namespaces\/([^/]+)\/deployments\/([^/]+)\/scale$/, kind: 'scale' },
  { pattern: /^\/apis\/apps\/v1\/namespaces\/([^/]+)\/deployments(?:\/([^/]+))?$/, kind: 'deployments' },
  { pattern: /^\/api\/v1\/namespaces\/([^/]+)\/services(?:\/([^/]+))?$/, kind: 'services' },
  { pattern: /^\/api\/v1\/namespaces\/([^/]+)\/secrets(?:\/([^/]+))?$/, kind: 'secrets' },
  { pattern: /^\/api\/v1\/namespaces\/([^/]+)\/pods\/([^/]+)\/log$/, kind: 'log' },
  { pattern: /^\/api\/v1\/namespaces\/([^/]+)\/pods(?:\/([^/]+))?$/, kind: 'pods' },
];

function matchesSelector(labels: Record<string, string> | undefined, selector: string | undefined): boolean {
  if (!selector) return true;
  return selector.split(',').every((term) => {
    const [key, value] = term.split('=');
    return labels?.[key] === value;
  });
}

function status(code: number, reason: string, message: string) {
  return { kind: 'Status', apiVersion: 'v1', metadata: {}, status: 'Failure', message, reason, code };
}

export class FakeKubeApi {
  readonly requests: RecordedRequest[] = [];
  readonly objects: Record<Kind, Map<string, any>> = { deployments: new Map(), services: new Map(), secrets: new Map() };
  /** The pods the API lists; tests replace them to move the cluster along. */
  pods: any[] = [];
  /** Pod name -> its log text (lines `<RFC3339Nano> text\n`), and its previous container's log. */
  readonly logs = new Map<string, string>();
  readonly previousLogs = new Map<string, string>();
  /** Requests to refuse: the next `times` requests of `method` whose path ends with `pathEnd` get a Status with `code`. */
  readonly refusals: Array<{ method: string; pathEnd: string; code: number; reason: string; message: string; times: number }> = [];
  /** Scaling a Deployment to zero removes its pods at once unless this is set (pods that outlive the grace). */
  podsIgnoreScaleDown = false;
  private readonly followers = new Map<string, http.ServerResponse[]>();
  private resourceVersion = 100;
  private server!: http.Server;
  url = '';

  async start(): Promise<this> {
    this.server = http.createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (chunk: Buffer) => chunks.push(chunk));
      req.on('end', () => this.handle(req, res, Buffer.concat(chunks).toString('utf8')));
    });
    await new Promise<void>((resolve) => this.server.listen(0, '127.0.0.1', resolve));
    this.url = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
    return this;
  }

  kubeConfig(): KubeConfig {
    const kubeConfig = new KubeConfig();
    kubeConfig.loadFromOptions({
      clusters: [{ name: 'recorded', server: this.url, skipTLSVerify: true }],
      users: [{ name: 'agentctl', token: 'test-token' }],
      contexts: [{ name: 'recorded', cluster: 'recorded', user: 'agentctl', namespace: 'agentctl' }],
      currentContext: 'recorded',
    });
    return kubeConfig;
  }

  /** Requests other than the background poll's reads (lists of pods and deployments). */
  writes(): RecordedRequest[] {
    return this.requests.filter((request) => request.method !== 'GET');
  }

  /** Appends lines to a pod's log, and to every open follow stream of it. */
  appendLog(pod: string, text: string): void {
    this.logs.set(pod, (this.logs.get(pod) ?? '') + text);
    for (const res of this.followers.get(pod) ?? []) res.write(text);
  }

  /** Ends the open follow streams of a pod (as the API server does when a container restarts). */
  endFollowers(pod: string): void {
    for (const res of this.followers.get(pod) ?? []) res.end();
    this.followers.delete(pod);
  }

  followerCount(pod: string): number {
    return this.followers.get(pod)?.length ?? 0;
  }

  async close(): Promise<void> {
    for (const list of this.followers.values()) for (const res of list) res.end();
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  private handle(req: http.IncomingMessage, res: http.ServerResponse, raw: string): void {
    const url = new URL(req.url ?? '/', this.url);
    const query = Object.fromEntries(url.searchParams);
    const body = raw ? JSON.parse(raw) : undefined;
    this.requests.push({ method: req.method ?? 'GET', path: url.pathname, query, contentType: req.headers['content-type'], body });
    const send = (code: number, value: unknown) => {
      res.writeHead(code, { 'content-type': 'application/json' });
      res.end(JSON.stringify(value));
    };
    const refusal = this.refusals.find((candidate) => candidate.times > 0 && candidate.method === req.method && url.pathname.endsWith(candidate.pathEnd));
    if (refusal) {
      refusal.times -= 1;
      return send(refusal.code, status(refusal.code, refusal.reason, refusal.message));
    }
    const route = ROUTES.map((candidate) => ({ ...candidate, match: candidate.pattern.exec(url.pathname) })).find((candidate) => candidate.match);
    if (!route?.match) return send(404, status(404, 'NotFound', `the server could not find the requested resource`));
    const [, , name] = route.match;

    if (route.kind === 'log') {
      const pod = this.pods.find((candidate) => candidate.metadata.name === name);
      if (!pod) return send(404, status(404, 'NotFound', `pods "${name}" not found`));
      const source = query.previous === 'true' ? this.previousLogs : this.logs;
      let lines = (source.get(name) ?? '').split('\n').filter(Boolean);
      if (query.tailLines) lines = lines.slice(-Number(query.tailLines));
      if (query.timestamps !== 'true') lines = lines.map((line) => line.replace(/^\S+ /, ''));
      res.writeHead(200, { 'content-type': 'text/plain' });
      if (query.follow === 'true') {
        // Everything from sinceTime (one-second resolution) on, then whatever is appended.
        const since = query.sinceTime ? Date.parse(query.sinceTime) : 0;
        res.write(
          lines
            .filter((line) => Date.parse(line.split(' ')[0]) >= since)
            .map((line) => `${line}\n`)
            .join(''),
        );
        this.followers.set(name, [...(this.followers.get(name) ?? []), res]);
        res.on('close', () =>
          this.followers.set(
            name,
            (this.followers.get(name) ?? []).filter((other) => other !== res),
          ),
        );
        return;
      }
      res.end(lines.map((line) => `${line}\n`).join(''));
      return;
    }

    if (route.kind === 'pods') {
      if (req.method === 'GET' && !name)
        return send(200, {
          kind: 'PodList',
          apiVersion: 'v1',
          metadata: { resourceVersion: String(this.resourceVersion) },
          items: this.pods.filter((pod) => matchesSelector(pod.metadata.labels, query.labelSelector)),
        });
      if (req.method === 'DELETE') {
        const pod = this.pods.find((candidate) => candidate.metadata.name === name);
        if (!pod) return send(404, status(404, 'NotFound', `pods "${name}" not found`));
        this.pods = this.pods.filter((candidate) => candidate !== pod);
        return send(200, pod);
      }
      return send(405, status(405, 'MethodNotAllowed', 'not served'));
    }

    if (route.kind === 'scale') {
      const deployment = this.objects.deployments.get(name);
      if (!deployment) return send(404, status(404, 'NotFound', `deployments.apps "${name}" not found`));
      deployment.spec.replicas = body.spec.replicas;
      deployment.metadata.resourceVersion = String(++this.resourceVersion);
      if (body.spec.replicas === 0 && !this.podsIgnoreScaleDown) {
        this.pods = this.pods.filter(
          (pod) =>
            !matchesSelector(
              pod.metadata.labels,
              Object.entries(deployment.spec.selector.matchLabels)
                .map(([k, v]) => `${k}=${v}`)
                .join(','),
            ),
        );
      }
      return send(200, {
        kind: 'Scale',
        apiVersion: 'autoscaling/v1',
        metadata: { name, namespace: deployment.metadata.namespace },
        spec: { replicas: body.spec.replicas },
        status: { replicas: body.spec.replicas },
      });
    }

    const kind = route.kind;
    const store = this.objects[kind];
    const singular = kind === 'deployments' ? 'deployments.apps' : kind;
    if (req.method === 'GET' && !name) {
      return send(200, {
        kind: 'List',
        apiVersion: 'v1',
        metadata: {},
        items: [...store.values()].filter((object) => matchesSelector(object.metadata.labels, query.labelSelector)),
      });
    }
    if (req.method === 'POST') {
      if (store.has(body.metadata.name)) return send(409, status(409, 'AlreadyExists', `${singular} "${body.metadata.name}" already exists`));
      const created = {
        ...body,
        metadata: {
          ...body.metadata,
          uid: `uid-${body.metadata.name}`,
          resourceVersion: String(++this.resourceVersion),
          creationTimestamp: '2026-11-23T00:00:00Z',
        },
      };
      if (kind === 'services') created.spec = { ...created.spec, clusterIP: '10.96.0.42', clusterIPs: ['10.96.0.42'] };
      store.set(body.metadata.name, created);
      return send(201, created);
    }
    const existing = store.get(name);
    if (!existing) return send(404, status(404, 'NotFound', `${singular} "${name}" not found`));
    if (req.method === 'GET') return send(200, existing);
    if (req.method === 'PUT') {
      if (body.metadata.resourceVersion !== existing.metadata.resourceVersion)
        return send(409, status(409, 'Conflict', `Operation cannot be fulfilled on ${singular} "${name}": the object has been modified`));
      const replaced = { ...body, metadata: { ...body.metadata, uid: existing.metadata.uid, resourceVersion: String(++this.resourceVersion) } };
      store.set(name, replaced);
      return send(200, replaced);
    }
    if (req.method === 'DELETE') {
      store.delete(name);
      return send(200, { kind: 'Status', apiVersion: 'v1', metadata: {}, status: 'Success', details: { name, kind } });
    }
    return send(405, status(405, 'MethodNotAllowed', 'not served'));
  }
}
