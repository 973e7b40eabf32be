/** What one delivery attempt came to, and an endpoint's counters of them (spec 6.6, plus Dropped). */
import { STATUS_CODES } from 'node:http';

/** an answer (ok when 2xx or 3xx after redirects), or a transport error, timeout included */
export type Outcome = { ok: boolean; status: number } | { ok: false; error: Error };

/** the counters of spec 6.6 (plus Dropped, for queuelimit) */
export interface EndpointMetrics {
  Pending: number;
  Events: number;
  Successes: number;
  Failures: number;
  Errors: number;
  Statuses: Record<string, number>;
  Dropped: number;
}

/**
 * Counts events, not requests, as Distribution's metrics do: each attempt adds the envelope's
 * event count to Successes, Failures (an answer refused) or Errors (no answer), and to its status.
 */
export class EndpointCounters {
  private readonly counts = { Events: 0, Successes: 0, Failures: 0, Errors: 0, Dropped: 0 };
  private readonly statuses = new Map<string, number>();

  queued(n = 1): void {
    this.counts.Events += n;
  }

  dropped(n: number): void {
    this.counts.Dropped += n;
  }

  get droppedTotal(): number {
    return this.counts.Dropped;
  }

  attempt(outcome: Outcome, events: number): void {
    if ('status' in outcome) {
      const key = statusText(outcome.status);
      this.statuses.set(key, (this.statuses.get(key) ?? 0) + events);
    }
    if (outcome.ok) this.counts.Successes += events;
    else if ('error' in outcome) this.counts.Errors += events;
    else this.counts.Failures += events;
  }

  snapshot(pending: number): EndpointMetrics {
    return { Pending: pending, ...this.counts, Statuses: Object.fromEntries(this.statuses) };
  }
}

/** "500 Internal Server Error", as Distribution's metrics name statuses */
export function statusText(status: number): string {
  return `${status} ${STATUS_CODES[status] ?? ''}`.trim();
}
