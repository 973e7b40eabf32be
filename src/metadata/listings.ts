/**
 * The catalog and the tag lists, a page at a time, from the index, in the order storage lists
 * them (registry/catalog.ts, registry/tags.ts). Keyset pagination: a page starts after `last` by
 * an index's key, so the last page of a million tags costs what the first does.
 *
 * - The catalog: repositories with `_manifests`, by `replace(name, '/', '\x01')`, the expression
 *   of the index `repositories_catalog_order` (migrations.ts, 0003): component by component, as
 *   storage walks (`a` < `a/b` < `a-b` < `a.b` < `a_b` < `ab`).
 * - Tags: by name, on the primary key (repository, name).
 *
 * Both compare by code unit: SQLite's default BINARY collation; on PostgreSQL the columns'
 * `COLLATE "C"` (migration 0002).
 */
import { sql, type Kysely } from 'kysely';
import type { Database } from './schema.js';

export interface ListingPage {
  /** at most `n` entries, each after `last` */
  items: string[];
  /** more entries follow the last one of this page */
  more: boolean;
}

/** '/' becomes \x01, below every character a name or a tag may hold; the same text as the index's expression */
const CATALOG_KEY = sql.raw<string>("replace(name, '/', '\x01')");

export class IndexListings {
  constructor(private readonly db: Kysely<Database>) {}

  /** repositories the catalog lists, at most `n`, after `last` in storage's order */
  async catalogPage(page: { n: number; last?: string }): Promise<ListingPage> {
    let query = this.db.selectFrom('repositories').select('name').where(sql<boolean>`has_manifests = 1`);
    if (page.last) {
      const after = catalogBound(page.last);
      query = query.where(CATALOG_KEY, after.op, after.key);
    }
    const rows = await query.orderBy(CATALOG_KEY).limit(page.n + 1).execute();
    return pageOf(rows.map((r) => r.name), page.n);
  }

  /** the repository's tags, at most `n`, after `last` by code unit; undefined when the catalog does not list the repository */
  async tagPage(repository: string, page: { n: number; last?: string }): Promise<ListingPage | undefined> {
    let query = this.db.selectFrom('tags').select('name').where('repository', '=', repository);
    if (page.last) query = query.where('name', '>', beforeNul(page.last));
    const [rows, known] = await Promise.all([
      query.orderBy('name').limit(page.n + 1).execute(),
      this.db.selectFrom('repositories').select('has_manifests').where('name', '=', repository).executeTakeFirst(),
    ]);
    if (Number(known?.has_manifests) !== 1) return undefined;
    // n=0: an empty page, and none follows (as http/pagination.ts pages storage's list)
    return page.n === 0 ? { items: [], more: false } : pageOf(rows.map((r) => r.name), page.n);
  }
}

/**
 * Where a catalog page starts. Storage compares names with `last` component by component, as if
 * '/' sorted below every character. \x01 stands for '/' in the key; a `last` holding \0 (which
 * PostgreSQL's text cannot hold) or \x01 (the key's '/') is bounded by its part before that
 * character: names hold neither, so a name sorts after `last` exactly when its key sorts at or
 * after that part's key followed by \x02 (the part followed by a character of a name, not by '/').
 */
function catalogBound(last: string): { op: '>' | '>='; key: string } {
  const odd = last.search(/[\0\x01]/);
  if (odd === -1) return { op: '>', key: last.replaceAll('/', '\x01') };
  return { op: '>=', key: `${last.slice(0, odd).replaceAll('/', '\x01')}\x02` };
}

/**
 * `last` up to a NUL, which PostgreSQL's text cannot hold: a name (which has none) sorts after
 * `P\0R` exactly when it sorts after `P`
 */
function beforeNul(last: string): string {
  const nul = last.indexOf('\0');
  return nul === -1 ? last : last.slice(0, nul);
}

function pageOf(names: string[], n: number): ListingPage {
  return { items: names.slice(0, n), more: names.length > n };
}
