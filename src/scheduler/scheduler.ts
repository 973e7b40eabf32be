/**
 * The one home for background work: periodic tasks (upload purging, the CDN IP-range refresh,
 * garbage collection, proxy TTL expiry and retention) are registered here,
 * run on an injectable clock, never overlap themselves, log their failures under their name, and
 * all stop in one place at shutdown.
 */
import type { Logger } from 'pino';
import { systemClock, type Clock } from './clock.js';

export interface PeriodicTask {
  /** shown in logs: "upload purge", "htpasswd reload", ... */
  name: string;
  /** milliseconds from the end of one run to the start of the next */
  interval: number;
  /** milliseconds before the first run; default `interval` */
  firstDelay?: number;
  /** one run; `signal` aborts when the scheduler closes. A thrown error is logged, the task goes on. */
  run(signal: AbortSignal): Promise<void> | void;
}

export class Scheduler {
  readonly clock: Clock;
  private readonly stops = new Set<() => void>();
  private readonly running = new Set<Promise<void>>();
  private readonly abort = new AbortController();

  /** `runs: false`: tasks are taken and never run (a worker process other than the first: src/workers/) */
  constructor(
    private readonly logger: Pick<Logger, 'error'>,
    clock: Clock = systemClock,
    private readonly runs = true,
  ) {
    this.clock = clock;
  }

  /** runs `task` periodically until the returned function or close() is called */
  every(task: PeriodicTask): () => void {
    if (this.abort.signal.aborted) throw new Error(`scheduler is closed: cannot start ${task.name}`);
    if (!this.runs) return () => {};
    let cancel = () => {};
    let stopped = false;
    const schedule = (ms: number) => {
      cancel = this.clock.after(ms, () => {
        const run = this.runOnce(task).finally(() => {
          this.running.delete(run);
          if (!stopped) schedule(task.interval);
        });
        this.running.add(run);
      });
    };
    const stop = () => {
      stopped = true;
      cancel();
      this.stops.delete(stop);
    };
    this.stops.add(stop);
    schedule(task.firstDelay ?? task.interval);
    return stop;
  }

  /** stops every task, aborts runs in progress and waits for them to end */
  async close(): Promise<void> {
    for (const stop of [...this.stops]) stop();
    this.abort.abort(new Error('the registry is shutting down'));
    await Promise.allSettled([...this.running]);
  }

  private async runOnce(task: PeriodicTask): Promise<void> {
    try {
      await task.run(this.abort.signal);
    } catch (err) {
      if (!this.abort.signal.aborted) this.logger.error({ err, task: task.name }, `${task.name} failed`);
    }
  }
}
