// readArchive without a sink (validate, hash, summarize) on a worker thread: the server's uploads are
// decompressed, walked and hashed there, with their garbage in the worker's small heap, while the main
// thread receives, hashes and stores the compressed bytes. One worker, started on first use and held only while it has work,
// serves every upload of the process; the archive reader and its every check are readArchive's own.
import type { Readable } from 'node:stream';
import { Worker } from 'node:worker_threads';
import { ArchiveRejected, type ArchiveLimits, type ArchiveSummary, type ReadArchiveOptions } from './archive.js';

export type ToWorker =
  | { type: 'start'; id: number; limits: ArchiveLimits }
  | { type: 'chunk'; id: number; data: Uint8Array }
  | { type: 'end'; id: number }
  | { type: 'abort'; id: number; status?: 413 | 422; code?: ArchiveRejected['code']; message: string };

export type ToMain =
  | { type: 'taken'; id: number; bytes: number }
  | { type: 'done'; id: number; summary: ArchiveSummary }
  | { type: 'refused'; id: number; status: 413 | 422; code: ArchiveRejected['code']; message: string; member?: string }
  | { type: 'failed'; id: number; message: string };

/** Bytes posted to the worker and not yet taken by its reader: the upload waits past this. */
const MAX_IN_FLIGHT = 4 * 1024 * 1024;
/** Received chunks are gathered up to this size before they are posted. */
const BATCH_BYTES = 1024 * 1024;

interface Pending {
  settle(message: ToMain & { type: 'done' | 'refused' | 'failed' }): void;
  taken(bytes: number): void;
}

let worker: Worker | undefined;
const pending = new Map<number, Pending>();
let nextId = 1;

function theWorker(): Worker {
  if (worker) return worker;
  const source = import.meta.url.endsWith('.ts');
  const w = new Worker(new URL(source ? './validate-worker.ts' : './validate-worker.js', import.meta.url), {
    // From the sources (tests, benches): the worker loads TypeScript as its parent does.
    execArgv: source ? ['--import', 'tsx'] : [],
  });
  w.on('message', (message: ToMain) => {
    const job = pending.get(message.id);
    if (!job) return;
    if (message.type === 'taken') job.taken(message.bytes);
    else job.settle(message);
  });
  const lost = (error: Error) => {
    if (worker === w) worker = undefined;
    for (const job of pending.values()) job.settle({ type: 'failed', id: 0, message: `The archive validator stopped: ${error.message}` });
  };
  w.on('error', lost);
  w.on('exit', (code) => lost(new Error(`exit code ${code}`)));
  // Held only while it has work: an idle validator keeps no process alive (unref after the listeners, which ref it).
  w.unref();
  worker = w;
  return w;
}

/**
 * What readArchive(source, limits, undefined, options) returns or throws, computed on the worker
 * thread. A failure of `source` itself (the client went away) is thrown as it is.
 */
export async function validateArchive(source: Readable, limits: ArchiveLimits, options: ReadArchiveOptions = {}): Promise<ArchiveSummary> {
  const w = theWorker();
  const id = nextId++;
  let inFlight = 0;
  let wake: (() => void) | undefined;
  let settled = false;
  const result = new Promise<ArchiveSummary>((resolve, reject) => {
    pending.set(id, {
      taken(bytes) {
        inFlight -= bytes;
        if (inFlight < MAX_IN_FLIGHT) wake?.();
      },
      settle(message) {
        settled = true;
        pending.delete(id);
        if (pending.size === 0) w.unref();
        wake?.();
        // Refused part-way: stop reading the input (the caller drains what the client still sends).
        if (!source.readableEnded) source.destroy();
        if (message.type === 'done') resolve(message.summary);
        else if (message.type === 'refused') reject(new ArchiveRejected(message.status, message.code, message.message, message.member));
        else reject(new Error(message.message));
      },
    });
  });
  result.catch(() => undefined);
  const post = (message: ToWorker, transfer?: ArrayBuffer[]) => w.postMessage(message, transfer);
  const stop = () => {
    const reason = options.signal!.reason as unknown;
    post(
      reason instanceof ArchiveRejected
        ? { type: 'abort', id, status: reason.status, code: reason.code, message: reason.message }
        : { type: 'abort', id, status: 413, code: 'archive_too_large', message: 'The archive took too long to read' },
    );
  };
  w.ref();
  post({ type: 'start', id, limits });
  options.signal?.addEventListener('abort', stop, { once: true });
  if (options.signal?.aborted) stop();
  try {
    // Chunks already received are sent together: fewer, larger pieces for the worker's decompressor.
    const batch: Buffer[] = [];
    let batched = 0;
    for await (const chunk of source as AsyncIterable<Buffer>) {
      if (settled) break;
      batch.push(chunk);
      batched += chunk.length;
      if (batched < BATCH_BYTES && source.readableLength > 0) continue;
      // A copy the worker owns: the chunks themselves may still be on their way to the staged file.
      const copy = new Uint8Array(batched);
      for (let at = 0, i = 0; i < batch.length; at += batch[i]!.length, i++) copy.set(batch[i]!, at);
      batch.length = 0;
      batched = 0;
      inFlight += copy.length;
      post({ type: 'chunk', id, data: copy }, [copy.buffer]);
      while (inFlight >= MAX_IN_FLIGHT && !settled) await new Promise<void>((resolve) => (wake = resolve));
      wake = undefined;
    }
    if (!settled) post({ type: 'end', id });
  } catch (error) {
    // The input failed (the client went away): the worker drops the job, the caller hears why.
    // (After a refusal the input fails because it was stopped: the refusal is the answer.)
    if (!settled) {
      post({ type: 'abort', id, message: (error as Error).message });
      await result.catch(() => undefined);
      throw error;
    }
  } finally {
    options.signal?.removeEventListener('abort', stop);
  }
  return result;
}
