// What routes see of the app: the handler registration surface and the service context. Kept apart
// from app.ts so routes depend on this small contract, not on the app that registers them.
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { ServiceMetrics } from './metrics.js';
import type { Tracing } from './tracing/tracing.js';
import type { EndpointName, EndpointOutput, EndpointRequest } from '../contract/endpoints.js';
import type { Actor, Authenticator } from './auth/authenticate.js';
import type { Permissions } from './auth/policy.js';
import type { Readable } from 'node:stream';
import type { Store } from './store/db.js';
import type { StreamHub } from './delivery/stream-hub.js';
import type { BlobStore } from './blobs/index.js';
import type { RuntimeDriver } from './runtime/driver.js';
import type { DeliveryAnswerRequest, PulledDelivery } from '../contract/conversation.js';

/** What the routes use of the dispatcher: a dev version's pull stream, and its answers (delivery/dispatcher.ts). */
export interface PullDelivery {
  /** `end` is called when the server stops delivering (it closes): the route ends the stream. */
  openPull(versionId: string, send: (delivery: PulledDelivery) => boolean, end: () => void): { id: string; close: () => Promise<void> };
  answerPulled(deliveryId: string, answer: DeliveryAnswerRequest): Promise<void>;
}
import type { MasterKey } from './secrets/keyring.js';

/** SSE streams (a task's, a version's logs) send a comment this often so proxies keep a quiet stream open. */
export const STREAM_HEARTBEAT_MS = 15_000;

export interface ServiceConfig {
  /** Image retention for rollbacks, in days (default 30). */
  imageRetentionDays: number;
  /** Per-key requests per second; 0 disables rate limiting. */
  rateLimitPerSecond: number;
  rateLimitBurst: number;
  /** Milliseconds between SSE comment heartbeats on streams (default STREAM_HEARTBEAT_MS). */
  streamHeartbeatMs?: number;
  /** Milliseconds between the stream hub's safety re-reads of watched tasks (default 5 000). */
  streamPollMs?: number;
  /**
   * How far one stream's reader may fall behind (records and their JSON bytes held for it, default
   * 1,000 and 1 MiB) before its stream is ended; it resumes with Last-Event-ID.
   */
  streamMaxBuffered?: { records?: number; bytes?: number };
  /** Failed authentications per second and client address (then 429); 0 disables the limit. */
  authFailuresPerSecond: number;
  authFailureBurst: number;
  /** How long a client may take to send a whole request (headers and body), in ms. */
  requestTimeoutMs: number;
  /** Switches authentication off (benchmark baseline only; never exposed on the CLI). */
  authDisabled?: boolean;
  /** Largest total file content of one archive upload (AGENTCTL_ARCHIVE_MAX_BYTES, default 1 GiB). */
  archiveMaxBytes: number;
  /** Most members of one archive upload (AGENTCTL_ARCHIVE_MAX_FILES, default 100,000). */
  archiveMaxFiles: number;
  /** Spans of requests, deliveries and agents' handlers (AGENTCTL_TRACING, default on; `off` for the benchmark's baseline). */
  tracing?: boolean;
}

export interface ServiceContext {
  store: Store;
  config: ServiceConfig;
  auth: Authenticator;
  streamHub: StreamHub;
  /** Where filesystem archives and manifests are kept. */
  blobs: BlobStore;
  /** The runtime driver of this server (absent with `--runtime none`): the logs endpoint reads it. */
  runtime?: RuntimeDriver;
  /**
   * This server's delivery dispatcher, for the pulled deliveries of dev versions (absent when the app
   * runs without one, as in some tests: the pull endpoints then answer 409 no_runtime).
   */
  delivery?: PullDelivery;
  /** Prometheus metrics: add scrape-time gauges with `metrics.addGauge` (see metrics.ts). */
  metrics: ServiceMetrics;
  /** The master key that seals agent secrets (secrets/keyring.ts). */
  secretsKey: MasterKey;
  /** Traces (README "Traces"); absent with AGENTCTL_TRACING=off. */
  tracing?: Tracing;
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

/** A non-JSON answer (archive bytes, or a 304): its status replaces the endpoint's. */
export class Streamed {
  constructor(
    readonly status: number,
    readonly headers: Record<string, string>,
    readonly body?: Readable | Buffer,
  ) {}
}

export interface RouteHost {
  handle<K extends EndpointName>(name: K, handler: (input: EndpointRequest<K>, call: Call) => Promise<EndpointOutput<K> | RawJson | Streamed>): void;
}
