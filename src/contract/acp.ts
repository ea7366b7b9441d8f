/**
 * The agent protocol (README "Delivery to agents, in short"): JSON-RPC 2.0 over `POST {acp_url}/api`, from the
 * platform's dispatcher to an agent, signed with the version's signing secret. Zod-free on purpose:
 * the ADK's agent server imports this on every request.
 */
import { createHmac, timingSafeEqual } from 'node:crypto';
import type { Content, Event, MessageContent } from './conversation.js';
import type { Task } from './resources.js';
import type { SpanInput } from './traces.js';
import { ACP_METHODS } from './enums.js';

export const ACP_PATH = '/api';

/**
 * The process contract (README "Delivery to agents, in short"): the environment a runtime gives every agent replica.
 * Here, not in the server's runtime module, because the ADK reads it and imports nothing of the server.
 */
export const PROCESS_ENV = {
  baseUrl: 'AGENTCTL_BASE_URL',
  versionId: 'AGENTCTL_VERSION_ID',
  branchId: 'AGENTCTL_BRANCH_ID',
  registrationToken: 'AGENTCTL_REGISTRATION_TOKEN',
  signingSecret: 'AGENTCTL_SIGNING_SECRET',
  port: 'PORT',
  dataRoot: 'AGENTCTL_DATA_ROOT',
  replica: 'AGENTCTL_REPLICA',
} as const;

export const SIGNATURE_HEADER = 'x-agentctl-signature';
/** A signature older (or newer) than this is refused: a replayed request. */
export const SIGNATURE_MAX_AGE_SECONDS = 300;

export { ACP_METHODS };
export type AcpMethod = (typeof ACP_METHODS)[number];

export interface AcpAgentRef {
  id: string;
  /** `namespace/name`. */
  name: string;
}

/**
 * Offered with every delivery but `message/send`: an agent that answers `deferred: true` holds the
 * delivery under this lease (in ms) until it reports completion (`POST /deliveries/{id}/complete`);
 * it renews the lease (`POST /deliveries/{id}/renew`) while its handler runs.
 */
export interface AcpLeaseOffer {
  lease_ms?: number;
  /**
   * The platform takes completions in this delivery's answer (`AcpResult.completed`): deferred
   * deliveries of the same agent whose handlers finished, each as `POST /deliveries/{id}/complete`
   * would report it. Absent from a server that does not; the agent then reports each by request.
   */
  completions_in_answer?: true;
}

/** A deferred delivery's completion carried in the answer to a later one (`AcpResult.completed`). */
export interface AcpCarriedCompletion {
  /** The finished delivery's id. */
  id: string;
  /** Its handler's spans (as `POST /deliveries/{id}/complete`'s `spans`). */
  spans?: SpanInput[];
}

/**
 * The W3C trace context of the delivery (README "Traces"), when the server traces: the agent's handler
 * continues that trace, and sends its spans back with the completion (or in a sync answer).
 */
export interface AcpTraceContext {
  traceparent?: string;
  tracestate?: string;
}

export interface AcpParams {
  'task/create': { agent: AcpAgentRef; task: Task; params: Record<string, unknown> | null } & AcpLeaseOffer & AcpTraceContext;
  /**
   * `event` is the newest event the turn answers; `events`, when the `merge` (or `interrupt`) policy put
   * several events that arrived while the task was busy into one turn, all of them, oldest first.
   */
  'event/send': { agent: AcpAgentRef; task: Task; event: Event; events?: Event[] } & AcpLeaseOffer & AcpTraceContext;
  'task/cancel': { agent: AcpAgentRef; task: Task } & AcpLeaseOffer & AcpTraceContext;
  /** Sync agents only: answered inline. */
  'message/send': { agent: AcpAgentRef; task: Task; content: Content } & AcpTraceContext;
  /**
   * A control delivery (README "Interrupt and double-texting"), sent without waiting for the task's
   * open turn: stop the handlers of the task's deliveries up to `up_to_delivery_id` (their signal
   * fires, their open message streams end INTERRUPTED); one still running after `grace_ms` is cut
   * off, its delivery completed.
   */
  'task/interrupt': { agent: AcpAgentRef; task: Task; up_to_delivery_id: string; grace_ms: number } & AcpTraceContext;
  /** The task moved between versions (a migration, a rollback): runs onMigrate on the version it moved to. */
  'task/migrate': { agent: AcpAgentRef; task: Task; migration: AcpMigration } & AcpLeaseOffer & AcpTraceContext;
}

/** What a `task/migrate` delivery says: the versions the task moved from and to (a rollback: `from` is the newer). */
export interface AcpMigration {
  from_version_id: string;
  from_version_number: number;
  to_version_id: string;
  to_version_number: number;
}

export interface AcpRequest<M extends AcpMethod = AcpMethod> {
  jsonrpc: '2.0';
  /** The delivery id: the agent deduplicates by it (deliveries are at least once). */
  id: string;
  method: M;
  params: AcpParams[M] & AcpRehearsalFlag;
}

/** Set on every delivery to a shadow task (a rehearsal, README "Versions and migration"): the agent should skip external side effects. */
export interface AcpRehearsalFlag {
  rehearsal?: true;
}

export interface AcpResult {
  /** Async agents: acknowledged, the handler runs after the answer. */
  accepted: true;
  /**
   * The agent took the offered lease: the delivery stays leased to it until it reports completion
   * (the platform redelivers it when the replica goes or the lease runs out). Without it, the
   * acknowledgement completes the delivery (an agent that does not report completion).
   */
  deferred?: true;
  /** Sync agents (`message/send`): the reply, already recorded as agent messages. */
  messages?: MessageContent[];
  /** Sync agents: the spans of the handler that answered (the shape of `POST /deliveries/{id}/complete`'s `spans`). */
  spans?: SpanInput[];
  /**
   * Async agents, answering a delivery that offered `completions_in_answer`: deferred deliveries of
   * this agent whose handlers finished meanwhile (at most MAX_COMPLETIONS_PER_REQUEST). The platform
   * completes them as it settles this answer; one it cannot (not this agent's, not open) is dropped,
   * and waits out its lease as a lost report does.
   */
  completed?: AcpCarriedCompletion[];
}

export interface AcpResponse {
  jsonrpc: '2.0';
  id: string;
  result?: AcpResult;
  error?: { code: number; message: string };
}

/** JSON-RPC error codes the agent answers with. */
export const ACP_ERRORS = {
  parseError: -32700,
  invalidRequest: -32600,
  methodNotFound: -32601,
  invalidParams: -32602,
  internal: -32603,
  unauthorized: -32001,
} as const;

/** `t=<unix seconds>,v1=<hex HMAC-SHA256(secret, t + "." + body)>`. */
export function signBody(secret: string, body: string, nowSeconds = Math.floor(Date.now() / 1000)): string {
  const mac = createHmac('sha256', secret).update(`${nowSeconds}.${body}`).digest('hex');
  return `t=${nowSeconds},v1=${mac}`;
}

export type SignatureCheck = { ok: true } | { ok: false; reason: 'missing' | 'malformed' | 'expired' | 'mismatch' };

export function verifySignature(secret: string, body: string, header: string | undefined | null, nowSeconds = Math.floor(Date.now() / 1000)): SignatureCheck {
  if (!header) return { ok: false, reason: 'missing' };
  const parts = Object.fromEntries(header.split(',').map((p) => p.trim().split('=', 2) as [string, string]));
  const t = Number(parts.t);
  if (!Number.isInteger(t) || !parts.v1 || !/^[0-9a-f]{64}$/.test(parts.v1)) return { ok: false, reason: 'malformed' };
  if (Math.abs(nowSeconds - t) > SIGNATURE_MAX_AGE_SECONDS) return { ok: false, reason: 'expired' };
  const expected = createHmac('sha256', secret).update(`${t}.${body}`).digest();
  const given = Buffer.from(parts.v1, 'hex');
  return given.length === expected.length && timingSafeEqual(given, expected) ? { ok: true } : { ok: false, reason: 'mismatch' };
}
