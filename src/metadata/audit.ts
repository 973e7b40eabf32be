/**
 * The audit log's queries (table `audit_log`, step 0008): appending a batch, reading a filtered
 * page by keyset (the web view newest first, the export oldest first), pruning what retention
 * let go, and the configuration fingerprint the start-up compares to record policy changes.
 */
import { sql, type Kysely } from 'kysely';
import type { Database } from './schema.js';

/** one record as stored (the audit room's AuditRecord with its time filled in) */
export interface AuditRow {
  at: string;
  actor?: string;
  address?: string;
  action: string;
  repository?: string;
  target?: string;
  outcome: string;
  detail?: string;
}

/** a stored record and its place in the log (the keyset cursor is `at` and `id`) */
export interface StoredAuditRow extends AuditRow {
  id: number;
}

export interface AuditFilter {
  /** ISO times: at >= since, at < until */
  since?: string;
  until?: string;
  repository?: string;
  actor?: string;
  action?: string;
}

/** a position in the log: the records after it (oldest first) or before it (newest first) */
export interface AuditCursor {
  at: string;
  id: number;
}

/** rows per INSERT (SQLite allows 32,766 bound values; 9 a row) */
const ROWS_PER_INSERT = 200;

/** index_state's key for the last recorded fingerprint of `policies` and `auth.access` */
export const POLICY_STATE_KEY = 'audit-policies';

export class AuditLog {
  constructor(private readonly db: Kysely<Database>) {}

  /** writes `rows` in one transaction */
  async append(rows: readonly AuditRow[]): Promise<void> {
    if (rows.length === 0) return;
    await this.db.transaction().execute(async (tx) => {
      for (let i = 0; i < rows.length; i += ROWS_PER_INSERT) {
        const values = rows.slice(i, i + ROWS_PER_INSERT).map((r) => ({
          at: r.at,
          actor: r.actor ?? null,
          address: r.address ?? null,
          action: r.action,
          repository: r.repository ?? null,
          target: r.target ?? null,
          outcome: r.outcome,
          detail: r.detail ?? null,
        }));
        await tx.insertInto('audit_log').values(values).execute();
      }
    });
  }

  /**
   * up to `limit` records matching `filter`: `newest` first before `cursor`, else oldest first
   * after it
   */
  async page(filter: AuditFilter, options: { newest: boolean; cursor?: AuditCursor; limit: number }): Promise<StoredAuditRow[]> {
    let query = this.db.selectFrom('audit_log').selectAll();
    if (filter.since !== undefined) query = query.where('at', '>=', filter.since);
    if (filter.until !== undefined) query = query.where('at', '<', filter.until);
    if (filter.repository !== undefined) query = query.where('repository', '=', filter.repository);
    if (filter.actor !== undefined) query = query.where('actor', '=', filter.actor);
    if (filter.action !== undefined) query = query.where('action', '=', filter.action);
    const { cursor, newest } = options;
    if (cursor) {
      const op = newest ? '<' : '>';
      query = query.where((eb) => eb.or([eb('at', op, cursor.at), eb.and([eb('at', '=', cursor.at), eb('id', op, cursor.id)])]));
    }
    const direction = newest ? 'desc' : 'asc';
    const rows = await query.orderBy('at', direction).orderBy('id', direction).limit(options.limit).execute();
    return rows.map((r) => {
      const out: StoredAuditRow = { id: Number(r.id), at: r.at, action: r.action, outcome: r.outcome };
      for (const key of ['actor', 'address', 'repository', 'target', 'detail'] as const) if (r[key] !== null) out[key] = r[key];
      return out;
    });
  }

  /** deletes the records older than `before` (ISO); returns how many */
  async prune(before: string): Promise<number> {
    const result = await this.db.deleteFrom('audit_log').where('at', '<', before).executeTakeFirst();
    return Number(result.numDeletedRows);
  }

  /** the last fingerprint of the policies recorded, if any */
  async policyState(): Promise<string | undefined> {
    const row = await this.db.selectFrom('index_state').select('value').where('key', '=', POLICY_STATE_KEY).executeTakeFirst();
    return row?.value;
  }

  /**
   * replaces the recorded fingerprint `previous` (undefined: none yet) by `next`; false when
   * another instance changed it first (instances starting together record one change, not two)
   */
  async swapPolicyState(previous: string | undefined, next: string): Promise<boolean> {
    if (previous === undefined) {
      const result = await this.db.insertInto('index_state').values({ key: POLICY_STATE_KEY, value: next }).onConflict((oc) => oc.column('key').doNothing()).executeTakeFirst();
      return Number(result.numInsertedOrUpdatedRows ?? 0n) === 1;
    }
    const result = await this.db
      .updateTable('index_state')
      .set({ value: next })
      .where('key', '=', POLICY_STATE_KEY)
      .where(sql<boolean>`value = ${previous}`)
      .executeTakeFirst();
    return Number(result.numUpdatedRows) === 1;
  }
}
