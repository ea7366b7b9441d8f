import type { TestService } from './service.js';

export interface SseFrame {
  id?: string;
  event?: string;
  data?: any;
  comment?: string;
}

export interface SseRead {
  status: number;
  headers: Headers;
  frames: SseFrame[];
  /** True when the server ended the response (not the reader stopping early). */
  ended: boolean;
  /** The error body when the status is not 200. */
  body?: any;
}

/**
 * Reads `GET /tasks/{id}/stream` with fetch and a hand-rolled SSE parser (independent of the client
 * under test) until the server ends it or `stopAfter` data frames arrived (or `timeoutMs` passed).
 */
export async function readSse(
  svc: { url: string },
  path: string,
  options: { key: string; headers?: Record<string, string>; stopAfter?: number; keepComments?: boolean; timeoutMs?: number; onOpen?: () => void },
): Promise<SseRead> {
  const abort = new AbortController();
  const timer = setTimeout(() => abort.abort(), options.timeoutMs ?? 20_000);
  try {
    const response = await fetch(svc.url + path, { headers: { authorization: `Bearer ${options.key}`, ...options.headers }, signal: abort.signal });
    if (response.status !== 200) return { status: response.status, headers: response.headers, frames: [], ended: true, body: await response.json() };
    options.onOpen?.();
    const frames: SseFrame[] = [];
    const decoder = new TextDecoder();
    let buffer = '';
    let dataFrames = 0;
    const reader = response.body!.getReader();
    for (;;) {
      let chunk: ReadableStreamReadResult<Uint8Array>;
      try {
        chunk = await reader.read();
      } catch {
        return { status: 200, headers: response.headers, frames, ended: false };
      }
      if (chunk.done) return { status: 200, headers: response.headers, frames, ended: true };
      buffer += decoder.decode(chunk.value, { stream: true });
      let end: number;
      while ((end = buffer.indexOf('\n\n')) >= 0) {
        const block = buffer.slice(0, end);
        buffer = buffer.slice(end + 2);
        const frame: SseFrame = {};
        for (const line of block.split('\n')) {
          if (line.startsWith(':')) frame.comment = line.slice(1).trim();
          else if (line.startsWith('id: ')) frame.id = line.slice(4);
          else if (line.startsWith('event: ')) frame.event = line.slice(7);
          else if (line.startsWith('data: ')) frame.data = JSON.parse(line.slice(6));
        }
        if (frame.comment !== undefined && !options.keepComments) continue;
        frames.push(frame);
        if (frame.data !== undefined && ++dataFrames === options.stopAfter) {
          abort.abort();
          return { status: 200, headers: response.headers, frames, ended: false };
        }
      }
    }
  } finally {
    clearTimeout(timer);
  }
}

export type { TestService };
