/**
 * An endpoint's queue: in memory (spec 6.5), optionally bounded (the oldest beyond the limit are
 * dropped), drained by one consumer loop that takes up to `maxBatch` items at a time and hands
 * them on. Pushing never waits; nothing one queue does can delay another.
 */
import type { Clock } from '../scheduler/clock.js';

export interface QueueOptions<T> {
  /** delivers one batch; resolves when it is delivered or `signal` aborts */
  consume(batch: T[], signal: AbortSignal): Promise<void>;
  maxBatch: number;
  /** most items held, not counting the batch being consumed; unset: unbounded */
  limit?: number;
  /** told how many of the oldest items were just dropped over the limit */
  onDrop(count: number): void;
  /** the consumer threw (a bug: delivery failures are outcomes); the batch goes back to the front */
  onError(err: unknown): void;
  /** times drain()'s grace */
  clock: Clock;
}

export class BoundedQueue<T> {
  private readonly items: T[] = [];
  private inflight: T[] = [];
  private wake?: () => void;
  private idleWaiters: (() => void)[] = [];
  private readonly stopper = new AbortController();
  private running?: Promise<void>;

  constructor(private readonly options: QueueOptions<T>) {}

  /** false once stopped (the item is not taken) */
  push(item: T): boolean {
    if (this.stopper.signal.aborted) return false;
    this.items.push(item);
    const { limit } = this.options;
    if (limit !== undefined && this.items.length > limit) this.options.onDrop(this.items.splice(0, this.items.length - limit).length);
    // the consumer starts with the first item and takes it at once: the limit counts what waits behind it
    this.running ??= this.run();
    this.wake?.();
    return true;
  }

  /** items queued or being consumed */
  get pending(): number {
    return this.items.length + this.inflight.length;
  }

  /** resolves true when nothing is queued or in flight, or false after `ms` */
  async drain(ms: number): Promise<boolean> {
    if (this.pending === 0) return true;
    let cancel = () => {};
    const idle = new Promise<boolean>((resolve) => this.idleWaiters.push(() => resolve(true)));
    const late = new Promise<boolean>((resolve) => (cancel = this.options.clock.after(ms, () => resolve(false))));
    try {
      return await Promise.race([idle, late]);
    } finally {
      cancel();
    }
  }

  /** stops the consumer, aborting the batch in progress; what is queued stays undelivered */
  async stop(): Promise<void> {
    this.stopper.abort();
    this.wake?.();
    await this.running;
  }

  private async run(): Promise<void> {
    try {
      await this.loop();
    } catch (err) {
      this.options.onError(err);
      this.items.unshift(...this.inflight);
      this.inflight = [];
      this.running = undefined; // the next push starts a new consumer
    }
  }

  private async loop(): Promise<void> {
    const { signal } = this.stopper;
    while (!signal.aborted) {
      if (this.items.length === 0) {
        for (const waiter of this.idleWaiters.splice(0)) waiter();
        await new Promise<void>((resolve) => (this.wake = resolve));
        this.wake = undefined;
        continue;
      }
      this.inflight = this.items.splice(0, this.options.maxBatch);
      await this.options.consume(this.inflight, signal);
      this.inflight = [];
    }
    for (const waiter of this.idleWaiters.splice(0)) waiter();
  }
}
