/**
 * Retry with a threshold and back-off, as Distribution's retrying sink: a failed attempt is
 * repeated until it succeeds or the endpoint stops. Before `threshold` consecutive failures the
 * retry is immediate; from then on each retry waits `backoff` (on the injected clock). A success
 * resets the count, which spans batches: an endpoint that keeps failing keeps backing off.
 *
 * Logs: every failure and back-off up to LOGGED_IN_FULL failures in a row, then only at the 16th,
 * 32nd, 64th... (a dead endpoint would otherwise write two lines every back-off, forever), and one
 * line when it delivers again.
 */
import type { Logger } from 'pino';
import type { Clock } from '../scheduler/clock.js';
import { statusText, type Outcome } from './metrics.js';

export interface RetryOptions {
  threshold: number;
  /** milliseconds */
  backoff: number;
  clock: Clock;
  /** every attempt's outcome, with the number of events it carried */
  onAttempt(outcome: Outcome, events: number): void;
  /** logs name the endpoint and its URL */
  logger: Pick<Logger, 'warn' | 'error'>;
  endpoint: { name: string; url: string };
}

const LOGGED_IN_FULL = 10;

/** whether the n-th failure in a row is logged */
function logged(failures: number): boolean {
  return failures <= LOGGED_IN_FULL || (failures & (failures - 1)) === 0;
}

export class Retrying {
  private consecutiveFailures = 0;

  constructor(private readonly options: RetryOptions) {}

  /** runs `attempt` until one succeeds or `signal` aborts */
  async deliver(attempt: (signal: AbortSignal) => Promise<Outcome>, events: number, signal: AbortSignal): Promise<void> {
    const { threshold, backoff, logger, endpoint } = this.options;
    const { name, url } = endpoint;
    while (!signal.aborted) {
      if (this.consecutiveFailures > 0 && this.consecutiveFailures >= threshold) {
        if (logged(this.consecutiveFailures)) logger.warn(
          { endpoint: name, url, failures: this.consecutiveFailures, backoff: `${backoff}ms` },
          `notification endpoint ${name}: ${this.consecutiveFailures} consecutive failures, backing off ${backoff}ms before retrying`,
        );
        await wait(this.options.clock, backoff, signal);
        if (signal.aborted) return;
      }
      const outcome = await attempt(signal);
      // an attempt cut short by the stop says nothing about the endpoint
      if (signal.aborted && !('status' in outcome)) return;
      this.options.onAttempt(outcome, events);
      if (outcome.ok) {
        if (this.consecutiveFailures > LOGGED_IN_FULL) {
          logger.warn({ endpoint: name, url, failures: this.consecutiveFailures }, `notification endpoint ${name}: delivered again after ${this.consecutiveFailures} consecutive failures`);
        }
        this.consecutiveFailures = 0;
        return;
      }
      if (signal.aborted) return;
      this.consecutiveFailures++;
      const reason = 'error' in outcome ? outcome.error.message : `response status ${statusText(outcome.status)} unaccepted`;
      if (!logged(this.consecutiveFailures)) continue;
      const quieter = this.consecutiveFailures >= LOGGED_IN_FULL ? ` (${this.consecutiveFailures} in a row; from now on logged at the ${2 ** Math.ceil(Math.log2(this.consecutiveFailures + 1))}th)` : '';
      logger.error({ endpoint: name, url, events, failures: this.consecutiveFailures, err: reason }, `notification endpoint ${name}: error posting events to ${url}: ${reason}; retrying${quieter}`);
    }
  }
}

/** resolves after `ms` on `clock`, or at once when `signal` aborts */
function wait(clock: Clock, ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal.aborted) return resolve();
    const done = () => {
      cancel();
      signal.removeEventListener('abort', done);
      resolve();
    };
    const cancel = clock.after(ms, done);
    signal.addEventListener('abort', done);
  });
}
