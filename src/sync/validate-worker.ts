// The worker thread behind validateArchive (validate.ts): runs readArchive (decompress, walk, check,
// hash) on archives whose bytes the main thread posts to it, so that work and its garbage stay off the
// main thread's heap. One worker serves every upload of a process, each by its id.
import { Readable } from 'node:stream';
import { parentPort } from 'node:worker_threads';
import { ArchiveRejected, readArchive, type ArchiveLimits } from './archive.js';
import type { ToMain, ToWorker } from './validate.js';

const port = parentPort!;
const post = (message: ToMain) => port.postMessage(message);

interface Job {
  input: Readable;
  controller: AbortController;
  /** Bytes posted to the input that the reader has not taken yet. */
  unread: number;
  /** Bytes the main thread has been told were taken. */
  taken: number;
}
const jobs = new Map<number, Job>();

function start(id: number, limits: ArchiveLimits): void {
  const controller = new AbortController();
  const job: Job = {
    controller,
    unread: 0,
    taken: 0,
    input: new Readable({
      highWaterMark: 4 * 1024 * 1024,
      read() {
        // The reader wants more: what it has taken so far may be replaced.
        const taken = job.unread;
        if (taken > 0) {
          job.unread = 0;
          post({ type: 'taken', id, bytes: taken });
        }
      },
    }),
  };
  jobs.set(id, job);
  readArchive(job.input, limits, undefined, { signal: controller.signal })
    .then(
      (summary) => post({ type: 'done', id, summary }),
      (error: unknown) =>
        post(
          error instanceof ArchiveRejected
            ? { type: 'refused', id, status: error.status, code: error.code, message: error.message, member: error.member }
            : { type: 'failed', id, message: error instanceof Error ? error.message : String(error) },
        ),
    )
    .finally(() => {
      jobs.delete(id);
      job.input.destroy();
    });
}

port.on('message', (message: ToWorker) => {
  if (message.type === 'start') return start(message.id, message.limits);
  const job = jobs.get(message.id);
  if (!job) return;
  if (message.type === 'chunk') {
    const chunk = Buffer.from(message.data);
    job.unread += chunk.length;
    job.input.push(chunk);
  } else if (message.type === 'end') job.input.push(null);
  else if (message.type === 'abort') {
    job.controller.abort(message.status ? new ArchiveRejected(message.status, message.code!, message.message) : new Error(message.message));
  }
});
