// The client in a browser (the web console): requests through fetch, with the page's cookies
// (same origin only) instead of an API key, and headers the page adds to each request (the
// console's CSRF token). No Node module is touched, so the client bundles for the browser.
import type { OpenedStream, StreamOpener } from './stream-core.js';
import { TransportError, type Transport } from './transport.js';

export interface FetchTransportOptions {
  /** Headers added to every request, read at each call (a CSRF token that changes with the session). */
  headers?: () => Record<string, string>;
  fetch?: typeof fetch;
}

/** A request that never got an HTTP answer: what fetch reports as a TypeError. */
const networkError = (error: unknown) => new TransportError('ECONNRESET', error instanceof Error ? error.message : String(error));

/** One HTTP exchange with fetch, credentials kept to the same origin. */
export function fetchTransport(options: FetchTransportOptions = {}): Transport {
  return async (url, request) => {
    let response: Response;
    try {
      response = await (options.fetch ?? fetch)(url, {
        method: request.method,
        headers: { ...request.headers, ...options.headers?.() },
        body: request.body,
        signal: request.signal,
        credentials: 'same-origin',
      });
      request.onSent?.();
    } catch (error) {
      if (request.signal.aborted) throw request.signal.reason;
      throw networkError(error);
    }
    let text: string;
    try {
      text = await response.text();
    } catch (error) {
      if (request.signal.aborted) throw request.signal.reason;
      throw networkError(error);
    }
    return { status: response.status, statusText: response.statusText, headers: response.headers, text };
  };
}

/** Opens a task's event stream with fetch (the Last-Event-ID header is the client's to set, which EventSource does not allow). */
export function fetchStreamOpener(options: FetchTransportOptions = {}): StreamOpener {
  return async (url, { headers, signal }) => {
    const controller = new AbortController();
    const abort = () => controller.abort(signal?.reason);
    signal?.addEventListener('abort', abort, { once: true });
    let response: Response;
    try {
      response = await (options.fetch ?? fetch)(url, {
        headers: { ...headers, ...options.headers?.() },
        signal: controller.signal,
        credentials: 'same-origin',
      });
    } catch (error) {
      signal?.removeEventListener('abort', abort);
      if (signal?.aborted) throw signal.reason;
      throw networkError(error);
    }
    const reader = response.body?.getReader();
    async function* chunks(): AsyncGenerator<Uint8Array> {
      if (!reader) return;
      try {
        for (;;) {
          const { done, value } = await reader.read();
          if (done) return;
          yield value;
        }
      } catch (error) {
        if (signal?.aborted) throw signal.reason;
        throw networkError(error);
      } finally {
        signal?.removeEventListener('abort', abort);
      }
    }
    const opened: OpenedStream = {
      status: response.status,
      headers: response.headers,
      body: chunks(),
      text: () => response.text(),
      close: () => controller.abort(),
    };
    return opened;
  };
}
