import type { IncomingHttpHeaders } from 'node:http';

export interface TransportRequest {
  method: string;
  headers: Record<string, string>;
  body?: string;
  signal: AbortSignal;
  /** Called once the whole request has been handed to the network. */
  onSent?: () => void;
}

/** One HTTP exchange: resolves with the whole answer, rejects with a TransportError (or the abort reason). */
export type Transport = (url: string, request: TransportRequest) => Promise<TransportResponse>;

export interface ResponseHeaders {
  get(name: string): string | null;
}

export interface TransportResponse {
  status: number;
  statusText: string;
  headers: ResponseHeaders;
  text: string;
}

/** A failure before any HTTP answer, with the system error code (ECONNREFUSED, ...). */
export class TransportError extends Error {
  constructor(
    readonly code: string,
    message: string,
  ) {
    super(message);
  }
}

const headerReader = (headers: IncomingHttpHeaders): ResponseHeaders => ({
  get(name) {
    const value = headers[name.toLowerCase()];
    return value === undefined ? null : Array.isArray(value) ? value.join(', ') : value;
  },
});

/**
 * One HTTP exchange over node:http(s). Measured: the first call of Node's built-in fetch compiles
 * its bundled undici (~30 ms of a CLI run, most of the start-up budget); node:http costs a few
 * milliseconds.
 */
export async function send(url: string, request: TransportRequest): Promise<TransportResponse> {
  const target = new URL(url);
  // getBuiltinModule, not import(): node:http's ESM facade touches its lazy undici exports, which
  // would load undici after all.
  const http = (target.protocol === 'https:' ? process.getBuiltinModule('node:https') : process.getBuiltinModule('node:http')) as typeof import('node:http');
  return new Promise((resolve, reject) => {
    const headers = { ...request.headers, ...(request.body !== undefined ? { 'content-length': String(Buffer.byteLength(request.body)) } : {}) };
    const req = http.request(target, { method: request.method, headers, signal: request.signal }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (chunk: Buffer) => chunks.push(chunk));
      res.on('error', (error) => reject(toTransportError(error, request.signal)));
      res.on('end', () =>
        resolve({
          status: res.statusCode ?? 0,
          statusText: res.statusMessage ?? '',
          headers: headerReader(res.headers),
          text: Buffer.concat(chunks).toString('utf8'),
        }),
      );
    });
    req.on('error', (error) => reject(toTransportError(error, request.signal)));
    if (request.onSent) req.once('finish', request.onSent);
    req.end(request.body);
  });
}

function toTransportError(error: unknown, signal: AbortSignal): unknown {
  // An abort surfaces as the signal's reason, so callers can tell a timeout from Ctrl-C.
  if (signal.aborted) return signal.reason;
  const e = error as NodeJS.ErrnoException;
  return new TransportError(e.code ?? 'ECONNRESET', e.message);
}
