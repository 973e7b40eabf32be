/**
 * A tag's history: which digest it named, from when to when, and who pushed it (the
 * authenticated user of the manifest PUT; unknown for an anonymous push, a proxy fill or a
 * rebuild). Newest first, a page at a time by the start time (the primary key of tag_history
 * is (repository, tag, from_at, digest): one range of it).
 */
import { sql, type Kysely } from 'kysely';
import type { Database } from './schema.js';

export interface HistoryEntry {
  digest: string;
  from: string;
  /** absent while the tag still names the digest */
  to?: string;
  pushedBy?: string;
}

export class HistoryReads {
  constructor(private readonly db: Kysely<Database>) {}

  /** up to `limit` entries, newest first, starting after the entry `before` when given */
  async tagHistory(repository: string, tag: string, limit: number, before?: { from: string; digest: string }): Promise<HistoryEntry[]> {
    let q = this.db
      .selectFrom('tag_history')
      .select(['digest', 'from_at', 'to_at', 'pushed_by'])
      .where('repository', '=', repository)
      .where('tag', '=', tag)
      .orderBy('from_at', 'desc')
      .orderBy('digest', 'desc')
      .limit(limit);
    if (before !== undefined) q = q.where(sql<boolean>`(from_at, digest) < (${before.from}, ${before.digest})`);
    const rows = await q.execute();
    return rows.map((r) => ({ digest: r.digest, from: r.from_at, ...(r.to_at !== null && { to: r.to_at }), ...(r.pushed_by !== null && { pushedBy: r.pushed_by }) }));
  }
}
