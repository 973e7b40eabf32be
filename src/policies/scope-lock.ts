/**
 * One quota check-and-record at a time per quota scope, across every instance on the database: a
 * lease row in `index_state` (metadata/lease.ts; `quota:<the scope's globs>`) taken by an insert that
 * conflicts, so the database decides who holds it, on SQLite and PostgreSQL alike. Within a process
 * a keyed lock queues the pushes first, so only one of them polls the database. A holder that dies
 * leaves a lease that expires after HOLD_MS. (docs/decisions.md, "Quotas".)
 */
import { randomUUID } from 'node:crypto';
import type { Kysely } from 'kysely';
import { Lease } from '../metadata/lease.js';
import type { Database } from '../metadata/schema.js';
import { RegistryError } from '../registry/errors.js';
import { KeyedLock } from '../registry/keyed-lock.js';

/** how long a holder keeps the scope at most (a manifest PUT's writes take well under a second) */
export const HOLD_MS = 60_000;
/** how long a push waits for the scope before it is answered 503 */
export const WAIT_MS = 60_000;
/** between two tries to take a held scope */
const POLL_MS = 10;

export class ScopeLocks {
  private readonly local = new KeyedLock();
  /** this process, as the holder the lease rows name */
  private readonly holder = randomUUID();

  constructor(private readonly db: Kysely<Database>) {}

  run<T>(scope: string, work: () => Promise<T>): Promise<T> {
    return this.local.run(scope, async () => {
      const lease = new Lease(this.db, `quota:${scope}`, this.holder);
      const deadline = Date.now() + WAIT_MS;
      while (!(await lease.take(Date.now(), Date.now() + HOLD_MS))) {
        if (Date.now() > deadline) throw new RegistryError('UNAVAILABLE', `the quota over ${scope} stayed busy for ${WAIT_MS / 1000} s (another push holds it); try again`);
        await new Promise((resolve) => setTimeout(resolve, POLL_MS + Math.random() * POLL_MS));
      }
      try {
        return await work();
      } finally {
        await lease.release();
      }
    });
  }
}
