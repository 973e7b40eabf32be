/** A Clock for tests: time moves only when a test advances it. */
import type { Clock } from '../../src/scheduler/clock.js';

/**
 * A clock that moves only when told. `advance(ms)` fires, in time order, every callback that falls
 * due, and lets the promises they start settle before the next one fires, so a task that awaits
 * storage finishes within the same advance.
 */
export class ManualClock implements Clock {
  private current: number;
  private readonly pending = new Set<{ at: number; seq: number; fn: () => void }>();
  private seq = 0;

  constructor(start = Date.parse('2026-01-01T00:00:00Z')) {
    this.current = start;
  }

  now(): number {
    return this.current;
  }

  after(ms: number, fn: () => void): () => void {
    const entry = { at: this.current + Math.max(0, ms), seq: this.seq++, fn };
    this.pending.add(entry);
    return () => this.pending.delete(entry);
  }

  /** moves time forward by `ms`, running what falls due on the way */
  async advance(ms: number): Promise<void> {
    const target = this.current + ms;
    for (;;) {
      await settle();
      const next = [...this.pending].filter((e) => e.at <= target).sort((a, b) => a.at - b.at || a.seq - b.seq)[0];
      if (!next) break;
      this.pending.delete(next);
      this.current = next.at;
      next.fn();
    }
    this.current = target;
    await settle();
  }
}

/** lets already-started promise chains (and the I/O they wait on, when short) run to completion */
async function settle(): Promise<void> {
  for (let i = 0; i < 20; i++) await new Promise<void>((resolve) => setImmediate(resolve));
}

/**
 * Waits (real time, up to `ms`) until `check` holds, moving `clock` on by `step` at each look.
 * For scheduled work that does real I/O: a run may end after ManualClock.advance returned, and
 * its next run is then due only once the clock moves again. `busy`: while it holds (a run still
 * at work), the clock stands still, so a slow machine does not carry it past times the test has
 * not reached yet (the next run would start there, e.g. expire what must still be kept).
 */
export async function advanceUntil(clock: ManualClock | undefined, what: string, check: () => Promise<boolean>, options: { step?: number; ms?: number; busy?: () => Promise<boolean> } = {}): Promise<void> {
  const deadline = Date.now() + (options.ms ?? 20_000);
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting until ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
    if (!(await options.busy?.())) await clock?.advance(options.step ?? 60_000);
  }
}
