/**
 * Time as the scheduler and time-dependent modules see it. Production uses the system clock; tests
 * use a ManualClock and advance it, so nothing waits for real time to pass.
 */
export interface Clock {
  /** milliseconds since the epoch, as Date.now() */
  now(): number;
  /** calls `fn` once after `ms`; the returned function cancels it. Never keeps the process alive. */
  after(ms: number, fn: () => void): () => void;
}

export const systemClock: Clock = {
  now: () => Date.now(),
  after(ms, fn) {
    const timer = setTimeout(fn, ms);
    timer.unref();
    return () => clearTimeout(timer);
  },
};
