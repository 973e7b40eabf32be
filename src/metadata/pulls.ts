/**
 * Pull counts and last pulls (manifests.pull_count, last_pulled_at), counted in memory and written
 * in one transaction per flush rather than one write per GET: a pull costs a map update. The
 * metadata feature flushes every FLUSH_MS on the scheduler and once more at close, so a crash
 * loses at most one interval's counts of this process (docs/decisions.md, "Pull counts").
 *
 * Increments, not values: every instance adds its own counts, so several instances on one
 * PostgreSQL database sum up. A pull of a manifest the index has no row for (not reconciled yet)
 * counts nothing. The map is bounded: past MAX_PENDING distinct manifests it flushes early.
 */
import { sql, type Kysely } from 'kysely';
import type { Database } from './schema.js';

/** how often counts are written (ms) */
export const FLUSH_MS = 5_000;
/** distinct manifests counted before a flush is started early */
export const MAX_PENDING = 10_000;

interface Pending {
  repository: string;
  digest: string;
  count: number;
  /** ISO time of the latest pull counted */
  last: string;
}

export class PullCounts {
  private pending = new Map<string, Pending>();
  private flushing: Promise<void> = Promise.resolve();

  constructor(
    private readonly db: Kysely<Database>,
    private readonly now: () => number,
    private readonly onError: (err: unknown) => void = () => {},
  ) {}

  /** one GET of the manifest (synchronous: nothing is written now) */
  pulled(repository: string, digest: string): void {
    const key = `${repository}@${digest}`;
    const at = new Date(this.now()).toISOString();
    const entry = this.pending.get(key);
    if (entry) {
      entry.count++;
      if (at > entry.last) entry.last = at;
    } else {
      this.pending.set(key, { repository, digest, count: 1, last: at });
      if (this.pending.size >= MAX_PENDING) void this.flush().catch(this.onError);
    }
  }

  /** distinct manifests counted since the last flush */
  get size(): number {
    return this.pending.size;
  }

  /** writes what was counted (one flush at a time; a failed one puts its counts back for the next) */
  flush(): Promise<void> {
    // after the previous flush, failed or not (its failure went to its caller): a rejected chain would refuse every later write
    this.flushing = this.flushing.catch(() => undefined).then(() => this.write());
    return this.flushing;
  }

  private async write(): Promise<void> {
    if (this.pending.size === 0) return;
    const batch = this.pending;
    this.pending = new Map();
    try {
      await this.db.transaction().execute(async (tx) => {
        for (const p of batch.values()) {
          await tx
            .updateTable('manifests')
            .set({
              pull_count: sql`pull_count + ${p.count}`,
              last_pulled_at: sql`case when last_pulled_at is null or last_pulled_at < ${p.last} then ${p.last} else last_pulled_at end`,
            })
            .where('repository', '=', p.repository)
            .where('digest', '=', p.digest)
            .execute();
        }
      });
    } catch (err) {
      for (const [key, p] of batch) {
        const later = this.pending.get(key);
        this.pending.set(key, later ? { ...p, count: p.count + later.count, last: later.last > p.last ? later.last : p.last } : p);
      }
      throw err;
    }
  }
}
