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
 * One HTTP exchange. Measured: the first call of Node's built-in fetch compiles its bundled undici
 * (~30 ms of a CLI run, most of the start-up budget); node:http costs a few milliseconds, and a plain
 * `http:` exchange written straight on a node:net socket (exchange below) half of that again.
 * HTTPS, and a process told to use a proxy (NODE_USE_ENV_PROXY), go through node:http(s).
 */
export async function send(url: string, request: TransportRequest): Promise<TransportResponse> {
  const target = new URL(url);
  if (target.protocol === 'http:' && !process.env.NODE_USE_ENV_PROXY) return exchange(target, request);
  // getBuiltinModule, not import(): node:http's ESM facade touches its lazy undici exports, which
  // would load undici after all.
  const http = (target.protocol === 'https:' ? process.getBuiltinModule('node:https') : process.getBuiltinModule('node:http')) as typeof import('node:http');
  return new Promise((resolve, reject) => {
    const headers = { ...request.headers, ...(request.body !== undefined ? { 'content-length': String(Buffer.byteLength(request.body)) } : {}) };
    const req = http.request(target, { method: request.method, headers, signal: request.signal }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (chunk: Buffer) => chunks.push(chunk));
      res.on('error', (error) => reject(toTransportError(error, request.signal)));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, statusText: res.statusMessage ?? '', headers: headerReader(res.headers), text: Buffer.concat(chunks).toString('utf8') }));
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

/**
 * One HTTP/1.1 request on a new connection (`connection: close`), and its response: the status line,
 * headers and a body framed by content-length, chunked transfer coding or the end of the connection.
 * 1xx interim responses are skipped.
 */
function exchange(target: URL, request: TransportRequest): Promise<TransportResponse> {
  const net = process.getBuiltinModule('node:net') as typeof import('node:net');
  const headers: Record<string, string> = { host: target.host, ...request.headers, connection: 'close' };
  if (request.body !== undefined) headers['content-length'] = String(Buffer.byteLength(request.body));
  let head = `${request.method} ${target.pathname}${target.search} HTTP/1.1\r\n`;
  for (const [name, value] of Object.entries(headers)) {
    // As node:http refuses them: a CR or LF in a value (an API key pasted with its newline) would end the header.
    if (/[\r\n\0]/.test(name + value)) throw new TypeError(`Invalid character in header content ["${name}"]`);
    head += `${name}: ${value}\r\n`;
  }
  const signal = request.signal;
  if (signal.aborted) return Promise.reject(signal.reason);
  return new Promise((resolve, reject) => {
    const socket = net.connect({ host: target.hostname.replace(/^\[(.*)\]$/, '$1'), port: Number(target.port || 80) });
    const reader = new ResponseReader();
    let settled = false;
    const finish = (error: unknown, response?: TransportResponse) => {
      if (settled) return;
      settled = true;
      signal.removeEventListener('abort', onAbort);
      socket.destroy();
      if (response) resolve(response);
      else reject(signal.aborted ? signal.reason : error);
    };
    const onAbort = () => finish(signal.reason);
    signal.addEventListener('abort', onAbort, { once: true });
    const read = (chunk: Buffer | undefined) => {
      try {
        const response = reader.push(chunk);
        if (response) finish(undefined, response);
        else if (!chunk) finish(new TransportError('ECONNRESET', 'socket hang up'));
      } catch (error) {
        finish(new TransportError('HPE_INVALID_RESPONSE', (error as Error).message));
      }
    };
    socket.on('connect', () => socket.write(head + '\r\n' + (request.body ?? ''), () => request.onSent?.()));
    socket.on('data', (chunk: Buffer) => read(chunk));
    socket.on('end', () => read(undefined));
    socket.on('error', (error: NodeJS.ErrnoException) => finish(new TransportError(error.code ?? 'ECONNRESET', error.message)));
    socket.on('close', () => finish(new TransportError('ECONNRESET', 'socket hang up')));
  });
}

/** Reads one HTTP/1.1 response as its bytes arrive: `push` returns it once complete (undefined chunk: the connection ended). */
export class ResponseReader {
  private data = Buffer.alloc(0);
  private pending: Buffer[] = [];
  private size = 0;
  private head?: { status: number; statusText: string; fields: Map<string, string>; bodyStart: number; framing: number | 'chunked' | 'close' };

  push(chunk: Buffer | undefined): TransportResponse | undefined {
    if (chunk) {
      this.pending.push(chunk);
      this.size += chunk.length;
    }
    const ended = chunk === undefined;
    if (!this.head) {
      this.gather();
      this.head = this.readHead(ended);
      if (!this.head) return undefined;
    }
    const { framing, bodyStart } = this.head;
    if (typeof framing === 'number') {
      if (this.size - bodyStart >= framing) return this.response(this.gather().subarray(bodyStart, bodyStart + framing));
      if (ended) throw new Error('the connection closed before the whole body arrived');
      return undefined;
    }
    if (framing === 'chunked') {
      // The last chunk ends with an empty line; only then is the whole body worth decoding.
      const tail = chunk ?? Buffer.alloc(0);
      if (ended || tail.includes('\r\n\r\n') || tail.length < 4) {
        const body = dechunk(this.gather(), bodyStart);
        if (body) return this.response(body);
      }
      if (ended) throw new Error('the connection closed inside a chunked body');
      return undefined;
    }
    return ended ? this.response(this.gather().subarray(bodyStart)) : undefined;
  }

  private gather(): Buffer {
    if (this.pending.length) {
      this.data = Buffer.concat([this.data, ...this.pending]);
      this.pending = [];
    }
    return this.data;
  }

  private readHead(ended: boolean): ResponseReader['head'] {
    const data = this.data;
    let start = 0;
    for (;;) {
      const headEnd = data.indexOf('\r\n\r\n', start);
      if (headEnd < 0) {
        // Closed with no response at all: the caller reports a hang-up (ECONNRESET), as node:http does.
        if (ended && data.length > start) throw new Error('the connection closed inside the response headers');
        return undefined;
      }
      const lines = data.toString('latin1', start, headEnd).split('\r\n');
      const statusLine = /^HTTP\/1\.[01] (\d{3})(?: (.*))?$/.exec(lines[0]);
      if (!statusLine) throw new Error(`not an HTTP/1.1 status line: ${JSON.stringify(lines[0].slice(0, 100))}`);
      const status = Number(statusLine[1]);
      const bodyStart = headEnd + 4;
      if (status >= 100 && status < 200) {
        start = bodyStart; // an interim response (100 Continue, 103 Early Hints): the real one follows
        continue;
      }
      const fields = new Map<string, string>();
      for (const line of lines.slice(1)) {
        const colon = line.indexOf(':');
        if (colon <= 0) throw new Error(`malformed header line: ${JSON.stringify(line.slice(0, 100))}`);
        const name = line.slice(0, colon).trim().toLowerCase();
        const value = line.slice(colon + 1).trim();
        fields.set(name, fields.has(name) ? `${fields.get(name)}, ${value}` : value);
      }
      const length = fields.get('content-length');
      let framing: number | 'chunked' | 'close';
      if (status === 204 || status === 304) framing = 0;
      else if (/\bchunked\b/i.test(fields.get('transfer-encoding') ?? '')) framing = 'chunked';
      else if (length !== undefined) {
        if (!/^\d+$/.test(length)) throw new Error(`bad content-length ${JSON.stringify(length)}`);
        framing = Number(length);
      } else framing = 'close';
      return { status, statusText: statusLine[2] ?? '', fields, bodyStart, framing };
    }
  }

  private response(body: Buffer): TransportResponse {
    const { status, statusText, fields } = this.head!;
    return { status, statusText, headers: { get: (name) => fields.get(name.toLowerCase()) ?? null }, text: body.toString('utf8') };
  }
}

/** The body of a chunked transfer coding starting at `from`, or undefined while its last chunk has not arrived. */
function dechunk(data: Buffer, from: number): Buffer | undefined {
  const parts: Buffer[] = [];
  let at = from;
  for (;;) {
    const lineEnd = data.indexOf('\r\n', at);
    if (lineEnd < 0) return undefined;
    const sizeText = data.toString('latin1', at, lineEnd).split(';')[0].trim();
    if (!/^[0-9a-fA-F]+$/.test(sizeText)) throw new Error(`bad chunk size ${JSON.stringify(sizeText.slice(0, 20))}`);
    const size = parseInt(sizeText, 16);
    // The last chunk: then optional trailer fields, ended by an empty line.
    if (size === 0) return data.indexOf('\r\n\r\n', lineEnd) < 0 ? undefined : Buffer.concat(parts);
    if (data.length < lineEnd + 2 + size + 2) return undefined;
    parts.push(data.subarray(lineEnd + 2, lineEnd + 2 + size));
    at = lineEnd + 2 + size + 2;
  }
}
