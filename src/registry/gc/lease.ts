/**
 * One collector at a time among the instances sharing a store: a lease object naming its holder
 * and until when it holds (the holder's clock), renewed while it collects, free once expired.
 *
 * Storage offers no compare-and-swap here, so taking it is write, wait, read back: two instances
 * that both found it free each write; after `settleMs` each reads what is stored, and only the
 * last writer finds its own name. A taker whose read and write were further apart than half the
 * settle time gives up, so a write cannot land after the other's read-back. Safety does not
 * depend on it (each collection is safe alone: online.ts); the lease saves duplicate work.
 * Clocks of the instances are assumed to agree to well within the lease's length.
 */
import { randomUUID } from 'node:crypto';
import { unlessMissing, type StorageDriver } from '../../storage/driver.js';
import * as layout from '../layout.js';

interface LeaseRecord {
  holder: string;
  /** epoch milliseconds */
  until: number;
}

export interface LeaseOptions {
  /** how long a lease lasts without renewal */
  ttlMs: number;
  /** the wait between writing the lease and reading it back */
  settleMs: number;
  now?: () => number;
  sleep?: (ms: number) => Promise<void>;
}

export class Lease {
  readonly holder = randomUUID();
  private readonly now: () => number;
  private readonly sleep: (ms: number) => Promise<void>;

  constructor(
    private readonly driver: StorageDriver,
    private readonly options: LeaseOptions,
  ) {
    this.now = options.now ?? Date.now;
    this.sleep = options.sleep ?? ((ms) => new Promise((resolve) => setTimeout(resolve, ms)));
  }

  /** true when this instance now holds the lease */
  async acquire(): Promise<boolean> {
    const readAt = this.now();
    const current = await this.read();
    if (current && current.holder !== this.holder && current.until > readAt) return false;
    if (this.now() - readAt > this.options.settleMs / 2) return false; // too slow to be sure: next time
    await this.write();
    await this.sleep(this.options.settleMs);
    return (await this.read())?.holder === this.holder;
  }

  /** extends the lease; false when another instance took it meanwhile */
  async renew(): Promise<boolean> {
    if ((await this.read())?.holder !== this.holder) return false;
    await this.write();
    return true;
  }

  async release(): Promise<void> {
    if ((await this.read())?.holder === this.holder) await unlessMissing(this.driver.delete(layout.GC_LEASE));
  }

  private async read(): Promise<LeaseRecord | undefined> {
    const content = await unlessMissing(this.driver.getContent(layout.GC_LEASE));
    if (!content) return undefined;
    try {
      return JSON.parse(content.toString()) as LeaseRecord;
    } catch {
      return undefined; // a torn or foreign file: free
    }
  }

  private async write(): Promise<void> {
    const record: LeaseRecord = { holder: this.holder, until: this.now() + this.options.ttlMs };
    await this.driver.putContent(layout.GC_LEASE, Buffer.from(JSON.stringify(record)));
  }
}
