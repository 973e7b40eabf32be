/**
 * A lease in the database: a row of `index_state` naming who holds a piece of work and until when,
 * so that of the instances sharing one database only one does it (the start-up build of the index,
 * registry/indexing/startup-build.ts). Taken by an insert that conflicts, or by replacing an
 * expired holder's exact value: the database decides, no two takers both win (storage, which has
 * no compare-and-swap, cannot promise that: registry/shared-schedule.ts). A holder that dies stops
 * renewing, and its lease expires.
 */
import type { Kysely } from 'kysely';
import type { Database } from './schema.js';

interface Held {
  holder: string;
  /** ms since the epoch */
  until: number;
}

export class Lease {
  constructor(
    private readonly db: Kysely<Database>,
    /** the index_state key, e.g. `building` */
    private readonly key: string,
    /** this instance, unique */
    private readonly holder: string,
  ) {}

  /** takes the lease until `until` when nobody holds it (or the holder's time ran out); true when this instance holds it now */
  async take(now: number, until: number): Promise<boolean> {
    const value = JSON.stringify({ holder: this.holder, until } satisfies Held);
    const inserted = await this.db.insertInto('index_state').values({ key: this.key, value }).onConflict((oc) => oc.column('key').doNothing()).executeTakeFirst();
    if (Number(inserted.numInsertedOrUpdatedRows ?? 0) === 1) return true;
    const current = await this.read();
    if (current && current.held && current.held.holder !== this.holder && current.held.until > now) return false;
    // expired, ours, or unreadable: replace exactly what was read (another taker changes it first: it wins)
    const updated = await this.db.updateTable('index_state').set({ value }).where('key', '=', this.key).where('value', '=', current?.raw ?? '').executeTakeFirst();
    return Number(updated.numUpdatedRows) === 1;
  }

  /** lets go (only if this instance still holds it) */
  async release(): Promise<void> {
    const current = await this.read();
    if (current?.held?.holder === this.holder) await this.db.deleteFrom('index_state').where('key', '=', this.key).where('value', '=', current.raw).execute();
  }

  private async read(): Promise<{ raw: string; held?: Held } | undefined> {
    const row = await this.db.selectFrom('index_state').select('value').where('key', '=', this.key).executeTakeFirst();
    if (!row) return undefined;
    try {
      const held = JSON.parse(row.value) as Held;
      return { raw: row.value, held: typeof held?.holder === 'string' && typeof held.until === 'number' ? held : undefined };
    } catch {
      return { raw: row.value };
    }
  }
}
