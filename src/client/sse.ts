import { ApiRequestError, UnreachableError } from './errors.js';
import type { AgentctlClient } from './index.js';

export interface ServerSentEvent {
  event: string;
  data: string;
  id?: string;
}

/**
 * GETs an endpoint that answers Server-Sent Events and yields its events until the server ends
 * the stream or `signal` aborts. An error status before the stream starts throws the same
 * ApiRequestError a JSON call would.
 */
export async function* readEventStream(
  client: AgentctlClient,
  path: string,
  query: Record<string, string | number | boolean | undefined>,
  signal?: AbortSignal,
): AsyncGenerator<ServerSentEvent> {
  const url = new URL(client.baseUrl + path);
  for (const [name, value] of Object.entries(query)) if (value !== undefined) url.searchParams.set(name, String(value));
  const headers: Record<string, string> = { accept: 'text/event-stream' };
  if (client.options.apiKey) headers.authorization = `Bearer ${client.options.apiKey}`;
  const signals = [signal, client.options.signal].filter((s): s is AbortSignal => !!s);
  let response: Response;
  try {
    response = await fetch(url, { headers, signal: signals.length > 0 ? AbortSignal.any(signals) : undefined });
  } catch (error) {
    if (signals.some((s) => s.aborted)) return;
    throw new UnreachableError(client.baseUrl, (error as { cause?: { code?: string } }).cause?.code ?? String(error));
  }
  if (!response.ok) {
    const text = await response.text();
    let body: { detail?: unknown; code?: unknown } | undefined;
    try {
      body = JSON.parse(text);
    } catch {
      body = undefined;
    }
    const request = { method: 'GET', url: url.toString(), requestId: response.headers.get('x-request-id') ?? undefined };
    if (body && Array.isArray(body.detail)) throw new ApiRequestError(response.status, 'validation_error', body.detail, request);
    throw new ApiRequestError(
      response.status,
      typeof body?.code === 'string' ? body.code : `http_${response.status}`,
      typeof body?.detail === 'string' ? body.detail : text.slice(0, 200) || `HTTP ${response.status}`,
      request,
    );
  }
  const decoder = new TextDecoder();
  let buffer = '';
  try {
    // A reader, not `for await` over the body: browsers the console supports lack async iteration of streams.
    const reader = response.body?.getReader();
    for (;;) {
      if (!reader) break;
      const { done, value: chunk } = await reader.read();
      if (done) break;
      buffer += decoder.decode(chunk, { stream: true });
      let end: number;
      while ((end = buffer.indexOf('\n\n')) >= 0) {
        const block = buffer.slice(0, end);
        buffer = buffer.slice(end + 2);
        const event: ServerSentEvent = { event: 'message', data: '' };
        const data: string[] = [];
        for (const line of block.split('\n')) {
          if (line.startsWith(':')) continue;
          const colon = line.indexOf(':');
          const field = colon < 0 ? line : line.slice(0, colon);
          const value = colon < 0 ? '' : line.slice(colon + 1).replace(/^ /, '');
          if (field === 'event') event.event = value;
          else if (field === 'data') data.push(value);
          else if (field === 'id') event.id = value;
        }
        if (data.length === 0) continue;
        event.data = data.join('\n');
        yield event;
      }
    }
  } catch (error) {
    if (signals.some((s) => s.aborted)) return;
    throw error;
  }
}
