/**
 * W3C Trace Context (https://www.w3.org/TR/trace-context/): the `traceparent` and `tracestate`
 * headers, made and read without an OpenTelemetry SDK (the CLI sets them at no start-up cost; the
 * JSON-RPC delivery and the delivery row carry the same text). No zod here: the CLI loads it.
 */

export const TRACEPARENT_HEADER = 'traceparent';
export const TRACESTATE_HEADER = 'tracestate';
/** Our member of `tracestate`: the CLI's command and when its request started (`agentctl=tasks-send@<unix ms>`). */
export const TRACESTATE_KEY = 'agentctl';

export interface TraceParent {
  traceId: string;
  spanId: string;
  sampled: boolean;
}

const TRACEPARENT = /^00-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})$/;

/** A `traceparent` value, or undefined when it is not one (all-zero ids are invalid). */
export function parseTraceparent(value: string | undefined | null): TraceParent | undefined {
  const match = value ? TRACEPARENT.exec(value.trim()) : null;
  if (!match || /^0+$/.test(match[1]!) || /^0+$/.test(match[2]!)) return undefined;
  return { traceId: match[1]!, spanId: match[2]!, sampled: (Number.parseInt(match[3]!, 16) & 1) === 1 };
}

export function formatTraceparent(parent: TraceParent): string {
  return `00-${parent.traceId}-${parent.spanId}-${parent.sampled ? '01' : '00'}`;
}

/** Random ids from the platform's crypto (Web Crypto, no module to load). */
export function randomHex(bytes: number): string {
  const buffer = new Uint8Array(bytes);
  globalThis.crypto.getRandomValues(buffer);
  let text = '';
  for (const byte of buffer) text += byte.toString(16).padStart(2, '0');
  return text;
}

export const newTraceId = () => randomHex(16);
export const newSpanId = () => randomHex(8);

/** The CLI's member of `tracestate`: its command and when its request started. */
export interface ClientTraceState {
  command: string;
  startedAtMs: number;
}

export function formatClientTraceState(state: ClientTraceState): string {
  const command = state.command.replace(/[^a-z0-9_-]+/gi, '-').slice(0, 200) || 'agentctl';
  return `${TRACESTATE_KEY}=${command}@${Math.floor(state.startedAtMs)}`;
}

export function parseClientTraceState(value: string | undefined | null): ClientTraceState | undefined {
  if (!value) return undefined;
  for (const member of value.split(',')) {
    const [key, text] = member.trim().split('=', 2);
    if (key !== TRACESTATE_KEY || !text) continue;
    const match = /^([a-z0-9_-]+)@(\d{10,16})$/i.exec(text);
    if (match) return { command: match[1]!, startedAtMs: Number(match[2]) };
  }
  return undefined;
}

/** Attribute names of the GenAI semantic conventions that the platform sums per task. */
export const GEN_AI_INPUT_TOKENS = 'gen_ai.usage.input_tokens';
export const GEN_AI_OUTPUT_TOKENS = 'gen_ai.usage.output_tokens';
