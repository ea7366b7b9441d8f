/**
 * Drives rehearsals (domain/rehearsals.ts): after every delivery change (the outbox's wake-ups: an
 * enqueue, a completion) and on a short poll, it runs one level-triggered step. Each replica runs
 * one; their steps skip rows another holds, so a rehearsal advances once across replicas and
 * carries on after a restart from what the database says.
 */
import type { Store } from '../store/db.js';
import { DELIVERY_CHANNEL, onDeliveryEnqueued } from '../store/outbox.js';
import { advanceRehearsals, DEFAULT_REHEARSAL_CONCURRENCY, onRehearsalCreated, sweepRehearsals } from '../domain/rehearsals.js';

export interface RehearsalDriverOptions {
  /** Rehearsal deliveries outstanding at once across the service (default 32). */
  concurrency?: number;
  /** Safety-net poll (timeouts come due, missed wake-ups); default 250 ms. */
  pollMs?: number;
  /** How often shadows past their retention are deleted (default hourly). */
  sweepMs?: number;
  log?: (message: string) => void;
}

export class RehearsalDriver {
  private running = false;
  /** Whether the last step found a running rehearsal (assumed at start). */
  private active = true;
  private again = false;
  private closed = false;
  private timer: NodeJS.Timeout | undefined;
  private sweepTimer: NodeJS.Timeout | undefined;
  private current: Promise<void> = Promise.resolve();
  private unsubscribe: () => void = () => {};
  private unlisten: (() => Promise<void>) | undefined;

  constructor(
    private readonly store: Store,
    private readonly options: RehearsalDriverOptions = {},
  ) {}

  async start(): Promise<void> {
    // Delivery changes matter only while a rehearsal runs: idle, the poll and a new rehearsal wake it.
    const onDelivery = () => {
      if (this.active) this.wake();
    };
    const offDelivery = onDeliveryEnqueued(onDelivery);
    const offCreated = onRehearsalCreated(() => {
      this.active = true;
      this.wake();
    });
    this.unsubscribe = () => {
      offDelivery();
      offCreated();
    };
    if (this.store.engine === 'postgres') this.unlisten = await this.store.listen(DELIVERY_CHANNEL, onDelivery).catch(() => undefined);
    this.schedulePoll();
    this.sweepTimer = setInterval(
      () => void sweepRehearsals(this.store.db).catch((e) => this.options.log?.(`rehearsals: ${(e as Error).message}`)),
      this.options.sweepMs ?? 3600_000,
    );
    this.sweepTimer.unref();
    this.wake();
  }

  private schedulePoll(): void {
    if (this.closed) return;
    this.timer = setTimeout(() => {
      this.wake();
      this.schedulePoll();
    }, this.options.pollMs ?? 250);
    this.timer.unref();
  }

  /** Runs a step now, or once more after the one running (wake-ups coalesce). */
  wake(): void {
    if (this.closed) return;
    if (this.running) {
      this.again = true;
      return;
    }
    this.running = true;
    this.current = (async () => {
      try {
        do {
          this.again = false;
          this.active = (await advanceRehearsals(this.store.db, this.options.concurrency ?? DEFAULT_REHEARSAL_CONCURRENCY)).running;
        } while (this.again && !this.closed);
      } catch (error) {
        if (!this.closed) this.options.log?.(`rehearsals: ${(error as Error).message}`);
      } finally {
        this.running = false;
      }
    })();
  }

  async close(): Promise<void> {
    this.closed = true;
    this.unsubscribe();
    if (this.timer) clearTimeout(this.timer);
    if (this.sweepTimer) clearInterval(this.sweepTimer);
    await this.current;
    await this.unlisten?.().catch(() => {});
  }
}

export async function startRehearsalDriver(store: Store, options: RehearsalDriverOptions = {}): Promise<RehearsalDriver> {
  const driver = new RehearsalDriver(store, options);
  await driver.start();
  return driver;
}
