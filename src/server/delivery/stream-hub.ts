// One per server. Writers NOTIFY `agentctl_task` with the task id and sequence number in their
// transaction (delivered at commit, to every replica's LISTEN). The hub keeps one group per watched
// task: on a notification (or the periodic safety poll) the group reads the new stream records once
// and hands them to each of its watchers, so a hundred watchers of one task cost one read per change.
// A one-statement write in this process (an event, a message, a delta: the streaming hot path) hands
// the hub the record it committed instead (conversation.ts `onCommitted`): when it is the group's next
// one it goes to the watchers at once, with no NOTIFY round trip and no read, and its NOTIFY then
// finds the group already past it. A NOTIFY that comes while such a write is still in flight (on
// PostgreSQL it comes on another connection and may beat the statement's answer) waits for it to
// settle before the group reads. A watcher only ever emits the next sequence number: anything it
// has not seen (it joined late, a read raced) it reads itself from the table, so a missed
// notification delays and never loses a record.
//
// A watcher whose consumer stops taking records (an SSE reader that does not read: its socket is full
// and the route waits for 'drain') would otherwise collect every record of the task. Its buffer is
// bounded (records and bytes); past the bound the hub drops it and ends that watch. The SSE client
// resumes with Last-Event-ID and reads what it missed from the table, so nothing is lost.
import type { StreamRecord } from '../../contract/conversation.js';
import type { Store } from '../store/db.js';
import { onCommitted, parseTaskNotice, readStream, TASK_CHANNEL, writesSettled } from '../domain/conversation.js';

const PAGE = 500;

export interface StreamHubOptions {
  /** Re-read every watched task this often even without a notification (default 5 s). */
  pollMs?: number;
  /** Records handed to one watcher and not yet taken, at most (default 1,000: two read pages). */
  maxBufferedRecords?: number;
  /** Their size as JSON, at most (default 1 MiB); one record alone never counts as too much. */
  maxBufferedBytes?: number;
}

export interface WatchOptions {
  signal?: AbortSignal;
  /**
   * Called once when the watcher fell behind past the hub's bound: its buffer is dropped and the
   * watch ends at the consumer's next step. A consumer blocked elsewhere (waiting for a socket to
   * drain) listens here to stop waiting.
   */
  onBehind?: () => void;
  /**
   * Called when the watch has handed over every record it holds and waits for the next: the moment
   * for an SSE route to flush what it wrote (Node holds a response's writes until the next tick,
   * which comes only after the writer's request has finished in this process). Records that come
   * together still go out together.
   */
  onIdle?: () => void;
}

/** A record as the group read it, with its size counted once for all watchers. */
interface Sized {
  record: StreamRecord;
  bytes: number;
}

interface Limits {
  records: number;
  bytes: number;
}

class Watcher {
  buffer: Sized[] = [];
  private bytes = 0;
  /** Fell behind past the bound: takes nothing more; the watch ends. */
  behind = false;
  wake: () => void = () => {};

  constructor(
    private readonly limits: Limits,
    private readonly onBehind?: () => void,
  ) {}

  take(records: Sized[]): void {
    if (this.behind) return;
    for (const sized of records) {
      this.buffer.push(sized);
      this.bytes += sized.bytes;
    }
    if (this.buffer.length > 1 && (this.buffer.length > this.limits.records || this.bytes > this.limits.bytes)) {
      this.behind = true;
      this.buffer = [];
      this.bytes = 0;
      this.onBehind?.();
    }
    this.wake();
  }

  next(): Sized | undefined {
    const next = this.buffer.shift();
    if (next) this.bytes -= next.bytes;
    return next;
  }

  putBack(sized: Sized): void {
    this.buffer.unshift(sized);
    this.bytes += sized.bytes;
  }
}

class TaskGroup {
  /** The last sequence number the group has read; null until its first watcher has caught up. */
  cursor: number | null = null;
  readonly watchers = new Set<Watcher>();
  private reading = false;
  /** Read once more after the read under way: it may have missed something (a poll, a notice without a number). */
  private again = false;
  /** The highest sequence number a notice or a publish asked to be read while a read was under way. */
  private wanted = 0;

  constructor(private readonly read: (after: number) => Promise<StreamRecord[]>) {}

  /**
   * A record committed by a write in this process. The group's next one goes to the watchers as it
   * is; one past a gap (records committed elsewhere, not read yet) makes the group read them all.
   */
  publish(record: StreamRecord): void {
    if (this.cursor === null || record.sequence_id <= this.cursor) return;
    if (record.sequence_id > this.cursor + 1) {
      this.refresh(record.sequence_id);
      return;
    }
    this.cursor = record.sequence_id;
    this.hand([record]);
  }

  /**
   * A NOTIFY: reads, unless the group already has that sequence number. `settled` (the one-statement
   * writes in flight in this process, conversation.ts `writesSettled`): the record may be one of
   * theirs, on its way to `publish` (on PGlite the NOTIFY comes before the statement's result, on
   * PostgreSQL it may), so the group reads only once they settled and it still lacks the record.
   */
  noticed(sequenceId: number | undefined, settled: Promise<unknown> | undefined): void {
    if (sequenceId === undefined) {
      this.refresh();
      return;
    }
    if (this.cursor === null || sequenceId <= this.cursor) return;
    const lacking = () => {
      if (this.watchers.size && this.cursor !== null && sequenceId > this.cursor) this.refresh(sequenceId);
    };
    if (settled) void settled.then(lacking);
    else lacking();
  }

  /**
   * Reads what is new since the group's cursor, once for all watchers; coalesces overlapping calls.
   * `upTo`: the sequence number wanted (a read under way that already brings it is enough).
   */
  refresh(upTo?: number): void {
    if (this.cursor === null) return;
    if (this.reading) {
      if (upTo === undefined) this.again = true;
      else this.wanted = Math.max(this.wanted, upTo);
      return;
    }
    this.reading = true;
    void this.readLoop();
  }

  private async readLoop(): Promise<void> {
    try {
      do {
        this.again = false;
        this.wanted = 0;
        let records: StreamRecord[];
        try {
          records = await this.read(this.cursor!);
        } catch {
          return; // the next notification or poll tries again
        }
        // Records a publish handed over while the read ran are not handed again. The read saw a
        // prefix of the committed records (writers of a task commit in sequence order), so what is
        // left is the continuation.
        const fresh = records.filter((record) => record.sequence_id > this.cursor!);
        if (fresh.length) {
          this.cursor = fresh[fresh.length - 1]!.sequence_id;
          this.hand(fresh);
        }
        if (records.length === PAGE || this.wanted > this.cursor!) this.again = true;
      } while (this.again && this.watchers.size);
    } finally {
      // In the turn the loop decided to stop: a refresh after it starts a read of its own.
      this.reading = false;
    }
  }

  private hand(records: StreamRecord[]): void {
    const sized = records.map((record) => ({ record, bytes: JSON.stringify(record.data).length }));
    for (const watcher of this.watchers) watcher.take(sized);
  }
}

/** How long a new watch waits for the LISTEN connection before relying on the poll. */
const LISTEN_WAIT_MS = 2000;

export class StreamHub {
  private readonly groups = new Map<string, TaskGroup>();
  private listening?: Promise<() => Promise<void>>;
  private poll?: NodeJS.Timeout;
  private closed = false;
  /** Reads done by groups and watchers: what the benchmark and tests count. */
  reads = 0;
  /** Watches ended because their consumer fell behind past the bound. */
  endedBehind = 0;
  private readonly limits: Limits;
  private readonly stopPublishing: () => void;

  constructor(
    private readonly store: Store,
    private readonly options: StreamHubOptions = {},
  ) {
    this.limits = { records: options.maxBufferedRecords ?? 2 * PAGE, bytes: options.maxBufferedBytes ?? 1024 * 1024 };
    this.stopPublishing = onCommitted(store.db, (taskId, record) => this.groups.get(taskId)?.publish(record));
  }

  /** How many streams follow the task on this server right now. */
  watching(taskId: string): number {
    return this.groups.get(taskId)?.watchers.size ?? 0;
  }

  /**
   * A write to the task committed (called by the LISTEN connection; in-process writers may call it
   * too): the group reads, unless it already holds `sequenceId`.
   */
  notify(taskId: string, sequenceId?: number): void {
    this.groups.get(taskId)?.noticed(sequenceId, sequenceId === undefined ? undefined : writesSettled(this.store.db));
  }

  private async start(): Promise<void> {
    if (!this.listening) {
      const listening = this.store.listen(TASK_CHANNEL, (payload) => {
        const { taskId, sequenceId } = parseTaskNotice(payload);
        this.notify(taskId, sequenceId);
      });
      this.listening = listening;
      // A LISTEN that failed is tried again by the next watch, not remembered as failed for good.
      listening.catch(() => {
        if (this.listening === listening) this.listening = undefined;
      });
    }
    // A watch waits for LISTEN a little, never for ever: the poll below re-reads meanwhile, so a
    // slow or failed LISTEN connection only delays what watchers see.
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([this.listening.catch(() => undefined), new Promise((resolve) => (timer = setTimeout(resolve, LISTEN_WAIT_MS)))]);
    clearTimeout(timer);
    if (!this.poll) {
      this.poll = setInterval(() => {
        for (const group of this.groups.values()) group.refresh();
      }, this.options.pollMs ?? 5000);
      this.poll.unref();
    }
  }

  private async read(taskId: string, after: number): Promise<StreamRecord[]> {
    this.reads++;
    return readStream(this.store.db, taskId, after, PAGE);
  }

  /**
   * The task's stream records after `afterSequenceId`, in order, without end: the caller stops
   * (break, or `signal`) when it has what it wants. Ends on its own when the hub closes, and when the
   * caller fell behind past the bound (`onBehind` says so at once).
   */
  async *watch(taskId: string, afterSequenceId: number, options: WatchOptions = {}): AsyncGenerator<StreamRecord> {
    const { signal } = options;
    if (this.closed) return;
    await this.start();
    let group = this.groups.get(taskId);
    if (!group) {
      group = new TaskGroup((after) => this.read(taskId, after));
      this.groups.set(taskId, group);
    }
    const watcher = new Watcher(this.limits, () => {
      this.endedBehind++;
      options.onBehind?.();
    });
    const onAbort = () => watcher.wake();
    signal?.addEventListener('abort', onAbort);
    // Joined before the catch-up read: whatever commits after it is pushed, whatever before it is read.
    group.watchers.add(watcher);
    let cursor = afterSequenceId;
    const stopped = () => signal?.aborted || this.closed || watcher.behind;
    try {
      // Catch up alone, then hand over to the group.
      for (;;) {
        const records = await this.read(taskId, cursor);
        for (const record of records) {
          if (stopped()) break;
          yield record;
          cursor = record.sequence_id;
        }
        if (records.length < PAGE || stopped()) break;
      }
      if (group.cursor === null) {
        group.cursor = cursor;
        group.refresh();
      }
      while (!stopped()) {
        const sized = watcher.next();
        if (!sized) {
          options.onIdle?.();
          await new Promise<void>((resolve) => {
            watcher.wake = resolve;
            if (watcher.buffer.length || stopped()) resolve();
          });
          watcher.wake = () => {};
          continue;
        }
        const next = sized.record;
        if (next.sequence_id <= cursor) continue;
        if (next.sequence_id > cursor + 1) {
          // A gap: read it ourselves, then go on with what the group handed over.
          watcher.putBack(sized);
          const records = await this.read(taskId, cursor);
          for (const record of records) {
            if (record.sequence_id > next.sequence_id || stopped()) break;
            if (record.sequence_id <= cursor) continue;
            yield record;
            cursor = record.sequence_id;
          }
          continue;
        }
        yield next;
        cursor = next.sequence_id;
      }
    } finally {
      signal?.removeEventListener('abort', onAbort);
      group.watchers.delete(watcher);
      if (group.watchers.size === 0 && this.groups.get(taskId) === group) this.groups.delete(taskId);
    }
  }

  /** Ends every watch and stops listening. */
  async close(): Promise<void> {
    this.closed = true;
    this.stopPublishing();
    clearInterval(this.poll);
    for (const group of this.groups.values()) for (const watcher of group.watchers) watcher.wake();
    const unlisten = await this.listening?.catch(() => undefined);
    await unlisten?.();
  }
}
