/**
 * The audit sink of every instance: `record()` only appends to a buffer (a request never waits
 * for, or fails by, the audit log); the buffer is written to the metadata database in one
 * transaction every FLUSH_MS, as soon as BATCH records wait, and once more at close. A write that
 * fails is retried with the next flush; past MAX_PENDING waiting records the oldest are dropped
 * and counted (a database down for long must not grow the heap without bound).
 */
import type { AuditRow } from '../metadata/audit.js';
import type { Clock } from '../scheduler/clock.js';
import type { AuditRecord, AuditSink } from './record.js';

export const FLUSH_MS = 1_000;
/** records waiting that start a flush at once */
export const BATCH = 500;
/** records held while the database cannot be written; older ones are dropped */
export const MAX_PENDING = 50_000;

/** where the batches go (metadata/audit.ts's AuditLog) */
export interface AuditWriter {
  append(rows: readonly AuditRow[]): Promise<void>;
}

export class BatchedAuditSink implements AuditSink {
  private pending: AuditRow[] = [];
  private flushing: Promise<void> = Promise.resolve();
  private cancelTimer: (() => void) | undefined;
  private closed = false;
  /** records dropped because the buffer was full, for the figures */
  dropped = 0;
  written = 0;

  constructor(
    private readonly writer: AuditWriter,
    private readonly clock: Clock,
    private readonly onError: (err: unknown) => void = () => {},
  ) {}

  record(record: AuditRecord): void {
    const row: AuditRow = { ...record, at: record.at ?? new Date(this.clock.now()).toISOString(), actor: record.actor };
    if (row.actor === undefined) delete row.actor;
    this.pending.push(row);
    if (this.pending.length > MAX_PENDING) {
      this.dropped += this.pending.length - MAX_PENDING;
      this.pending.splice(0, this.pending.length - MAX_PENDING);
    }
    if (this.pending.length >= BATCH) this.flushSoon(0);
    else this.flushSoon(FLUSH_MS);
  }

  /** writes what waits (one flush at a time; a failed batch goes back to the front) */
  flush(): Promise<void> {
    this.cancelTimer?.();
    this.cancelTimer = undefined;
    // after the previous flush, whether it failed or not (its failure was reported to its caller)
    this.flushing = this.flushing.catch(() => undefined).then(() => this.write());
    return this.flushing;
  }

  /** the last flush; records after it are written by nobody */
  async close(): Promise<void> {
    this.closed = true;
    await this.flush();
  }

  private flushSoon(ms: number): void {
    if (this.closed) return void this.flush().catch(this.onError);
    if (this.cancelTimer && ms > 0) return;
    this.cancelTimer?.();
    this.cancelTimer = this.clock.after(ms, () => {
      this.cancelTimer = undefined;
      this.flush().catch(this.onError);
    });
  }

  private async write(): Promise<void> {
    if (this.pending.length === 0) return;
    const batch = this.pending;
    this.pending = [];
    try {
      await this.writer.append(batch);
      this.written += batch.length;
    } catch (err) {
      this.pending = [...batch, ...this.pending].slice(-MAX_PENDING);
      if (!this.closed) this.flushSoon(FLUSH_MS);
      throw err;
    }
  }
}
