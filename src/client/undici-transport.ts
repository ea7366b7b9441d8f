import { Agent, errors, request } from 'undici';
import { TransportError, type Transport } from './transport.js';

/**
 * A keep-alive transport for long-lived callers (the ADK, streams, the dispatcher): one connection
 * pool per origin, reused across requests. Not imported by the CLI, whose one-shot calls stay on
 * node:http (loading undici would cost every command's start-up).
 */
export function createUndiciTransport(options: { connections?: number; keepAliveTimeoutMs?: number } = {}): Transport & { close(): Promise<void> } {
  const dispatcher = new Agent({ connections: options.connections ?? 32, keepAliveTimeout: options.keepAliveTimeoutMs ?? 10_000 });
  const transport = async (url: string, req: Parameters<Transport>[1]) => {
    try {
      const res = await request(url, { method: req.method as 'GET', headers: req.headers, body: req.body, signal: req.signal, dispatcher });
      req.onSent?.();
      const text = await res.body.text();
      return {
        status: res.statusCode,
        statusText: '',
        headers: {
          get(name: string) {
            const value = res.headers[name.toLowerCase()];
            return value === undefined ? null : Array.isArray(value) ? value.join(', ') : value;
          },
        },
        text,
      };
    } catch (error) {
      if (req.signal.aborted) throw req.signal.reason;
      const code = (error as NodeJS.ErrnoException).code ?? (error instanceof errors.UndiciError ? error.name : 'ECONNRESET');
      throw new TransportError(code, (error as Error).message);
    }
  };
  return Object.assign(transport, { close: () => dispatcher.close() });
}
