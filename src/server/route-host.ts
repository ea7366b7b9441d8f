// What routes see of the app: the handler registration surface and the service context. Kept apart
// from app.ts so routes depend on this small contract, not on the app that registers them.
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { ServiceMetrics } from './metrics.js';
import type { EndpointName, EndpointOutput, EndpointRequest } from '../contract/endpoints.js';
import type { Actor, Authenticator } from './auth/authenticate.js';
import type { Permissions } from './auth/policy.js';
import type { Store } from './store/db.js';

export interface ServiceConfig {
  /** Image retention for rollbacks, in days (default 30). */
  imageRetentionDays: number;
  /** Per-key requests per second; 0 disables rate limiting. */
  rateLimitPerSecond: number;
  rateLimitBurst: number;
  /** Switches authentication off (benchmark baseline only; never exposed on the CLI). */
  authDisabled?: boolean;
}

export interface ServiceContext {
  store: Store;
  config: ServiceConfig;
  auth: Authenticator;
  /** Prometheus metrics: add scrape-time gauges with `metrics.addGauge` (see metrics.ts). */
  metrics: ServiceMetrics;
}

/** Everything a handler gets besides its validated input. */
export interface Call {
  actor: Actor;
  /** The caller's permissions, loaded on first use. */
  access: () => Promise<Permissions>;
  service: ServiceContext;
  request: FastifyRequest;
  reply: FastifyReply;
}

/** A response body already serialized (by the database, for bulk results): sent as it is. */
export class RawJson {
  constructor(readonly text: string) {}
}

export interface RouteHost {
  handle<K extends EndpointName>(name: K, handler: (input: EndpointRequest<K>, call: Call) => Promise<EndpointOutput<K> | RawJson>): void;
}
