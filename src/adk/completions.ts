import { MAX_COMPLETIONS_PER_REQUEST } from '../contract/enums.js';
import type { AcpCarriedCompletion } from '../contract/acp.js';
import type { SpanInput } from '../contract/traces.js';

/** A deferred delivery whose handler finished, as reported to the platform. */
export interface CompletionReport {
  deliveryId: string;
  /** The handler's spans, when they go with the completion. */
  spans?: SpanInput[];
  /** The delivery's trace context: a report sent alone carries it as its request's `traceparent`. */
  traceparent?: string;
}

/** How reports reach the platform: one alone, or several in one request (each answered on its own). */
export interface CompletionWire {
  one(report: CompletionReport): Promise<void>;
  /** Per report, in order: undefined when it was completed, else why not. Throws when the request as a whole failed. */
  many(reports: CompletionReport[]): Promise<(Error | undefined)[]>;
}

/**
 * The spans' JSON one request may carry: half the server's 1 MiB body limit, the rest left for the
 * ids and the spans' own estimate being short. A report above it goes alone.
 */
const BATCH_SPAN_BYTES = 512 * 1024;

/** A report waiting to go (in a request, or carried in an answer), with its caller's promise. */
interface Queued {
  report: CompletionReport;
  bytes: number;
  resolve: () => void;
  reject: (error: unknown) => void;
}

/**
 * Completion reports coalesced without added latency: a report goes at once while none is on its
 * way; those that come meanwhile wait for that one's answer and then go together, in one request.
 * No timer: a lone completion is never held back, and a busy process sends one request per round
 * trip instead of one per delivery (each an authenticated request the server handles on its own).
 */
export class CompletionReporter {
  private queued: Queued[] = [];
  private sending = false;

  constructor(private readonly wire: CompletionWire) {}

  /** Resolves once the platform took the completion; rejects with the error of its request or its own refusal. */
  report(report: CompletionReport): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      const bytes = report.spans?.length ? JSON.stringify(report.spans).length : 0;
      this.queued.push({ report, bytes, resolve, reject });
      if (!this.sending) this.sendQueued();
    });
  }

  private sendQueued(): void {
    const batch = this.take();
    this.sending = true;
    const sent =
      batch.length === 1
        ? this.wire.one(batch[0].report).then(batch[0].resolve, batch[0].reject)
        : this.wire.many(batch.map((q) => q.report)).then(
            (refusals) => {
              for (const [i, q] of batch.entries()) {
                const refusal = refusals[i];
                if (refusal) q.reject(refusal);
                else q.resolve();
              }
            },
            (error: unknown) => {
              for (const q of batch) q.reject(error);
            },
          );
    void sent.finally(() => {
      this.sending = false;
      if (this.queued.length > 0) this.sendQueued();
    });
  }

  /** The oldest reports that fit one request (the first always does). */
  private take(): Queued[] {
    let count = 1;
    let bytes = this.queued[0].bytes;
    while (count < this.queued.length && count < MAX_COMPLETIONS_PER_REQUEST && bytes + this.queued[count].bytes <= BATCH_SPAN_BYTES) {
      bytes += this.queued[count].bytes;
      count++;
    }
    return this.queued.splice(0, count);
  }
}

/** Reports taken by one answer: its `completed`, and what to call once the answer was written (or was not). */
export interface CarriedReports {
  completed: AcpCarriedCompletion[];
  /** True: the answer went out (the platform completes them as it settles it); false: each goes by request. */
  settle(written: boolean): void;
}

/**
 * Completion reports carried in answers (README "Delivery to agents"): a report waits until the end
 * of this turn of the event loop for the answer to a later delivery that offers to take it
 * (`completions_in_answer`). A busy process answers many deliveries a turn, so their answers carry
 * the completions of the handlers that finished meanwhile, and the platform completes them as it
 * settles those answers, with no request of their own. One no answer took goes by request, at the
 * end of the turn: a lone completion waits no longer than that.
 */
export class CompletionCarriage {
  private waiting: Queued[] = [];
  private flushing = false;

  constructor(private readonly byRequest: (report: CompletionReport) => Promise<void>) {}

  /** Resolves once an answer carrying it was written, or the platform took it by request. */
  report(report: CompletionReport): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      const bytes = report.spans?.length ? JSON.stringify(report.spans).length : 0;
      this.waiting.push({ report, bytes, resolve, reject });
      if (this.flushing) return;
      this.flushing = true;
      setImmediate(() => {
        this.flushing = false;
        this.sendByRequest(this.waiting.splice(0));
      });
    });
  }

  /** The waiting reports one answer can carry (the oldest first, within one request's limits); undefined when none waits. */
  take(): CarriedReports | undefined {
    if (this.waiting.length === 0) return undefined;
    let count = 0;
    let bytes = 0;
    while (count < this.waiting.length && count < MAX_COMPLETIONS_PER_REQUEST && (count === 0 || bytes + this.waiting[count].bytes <= BATCH_SPAN_BYTES)) {
      bytes += this.waiting[count].bytes;
      count++;
    }
    // One report too large for an answer goes by request.
    if (bytes > BATCH_SPAN_BYTES) return undefined;
    const taken = this.waiting.splice(0, count);
    let settled = false;
    return {
      completed: taken.map(({ report }) => ({ id: report.deliveryId, ...(report.spans ? { spans: report.spans } : {}) })),
      settle: (written) => {
        if (settled) return;
        settled = true;
        if (written) for (const carried of taken) carried.resolve();
        else this.sendByRequest(taken);
      },
    };
  }

  private sendByRequest(reports: Queued[]): void {
    for (const { report, resolve, reject } of reports) this.byRequest(report).then(resolve, reject);
  }
}
