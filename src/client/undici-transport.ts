import { TransportError, type Transport } from './transport.js';

/** The variables EnvHttpProxyAgent takes its proxies from (NO_PROXY only ever exempts hosts from one). */
const PROXY_VARIABLES = ['http_proxy', 'HTTP_PROXY', 'https_proxy', 'HTTPS_PROXY'];

/**
 * A keep-alive transport for long-lived callers (the ADK, streams, the dispatcher): one connection
 * pool per origin, reused across requests. undici loads on the first request, not on import, so an
 * agent that imports the ADK starts as fast as one that does not; the CLI never loads it.
 */
export function createUndiciTransport(
  options: { connections?: number; keepAliveTimeoutMs?: number } = {},
): Transport & { close(): Promise<void>; warm(): Promise<void> } {
  type Loaded = { undici: typeof import('undici'); dispatcher: import('undici').Dispatcher };
  let loaded: Promise<Loaded> | undefined;
  /** Once loaded: so a request goes out in the caller's turn, not a microtask later. */
  let ready: Loaded | undefined;
  const load = () =>
    (loaded ??= import('undici').then((undici) => {
      // Honours HTTP_PROXY, HTTPS_PROXY and NO_PROXY as other HTTP clients do. With no proxy set
      // (read once, as EnvHttpProxyAgent reads them) a plain pool: EnvHttpProxyAgent would hand every
      // request to one too, after parsing its origin and NO_PROXY each time (a streamed delta's path).
      const pool = { connections: options.connections ?? 32, keepAliveTimeout: options.keepAliveTimeoutMs ?? 10_000 };
      const proxied = PROXY_VARIABLES.some((name) => process.env[name]);
      const dispatcher = proxied ? new undici.EnvHttpProxyAgent(pool) : new undici.Agent(pool);
      return (ready = { undici, dispatcher });
    }));
  const transport: Transport = async (url, req) => {
    const { undici, dispatcher } = ready ?? (await load());
    try {
      const res = await undici.request(url, { method: req.method as 'GET', headers: req.headers, body: req.body, signal: req.signal, dispatcher });
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
      const code = (error as NodeJS.ErrnoException).code ?? (error instanceof undici.errors.UndiciError ? error.name : 'ECONNRESET');
      throw new TransportError(code, (error as Error).message);
    }
  };
  return Object.assign(transport, {
    close: async () => (loaded ? (await loaded).dispatcher.close() : undefined),
    /** Loads undici now rather than on the first request. */
    warm: async () => void (await load()),
  });
}
