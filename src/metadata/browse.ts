/**
 * Browsing the index: repositories with their figures, a repository's tags with their manifest's
 * media type, size and push time, each sorted over the whole list and read a page at a time by
 * keyset (the rows after the last one shown, by (value, name)), so the last page of 100,000 tags
 * costs what the first does: one range of one index (browse-migration.ts makes them).
 */
import { sql, type Kysely, type RawBuilder } from 'kysely';
import type { Database } from './schema.js';

export type RepositorySort = 'name' | 'size' | 'pushed' | 'pulls';
/** the columns a tag list sorts by (the JSON API's and the web interface's): the image's figures (step 0006) besides name, push time and the manifest's own size */
export type TagColumn = 'name' | 'pushed' | 'size' | 'digest' | 'mediaType' | 'imageSize' | 'platforms' | 'created';

/** where a page starts: after the row of this name, and of this sort value (absent when sorting by name) */
export interface Keyset {
  name: string;
  /** null: among the rows without a value (they come last: `sortedTags`) */
  value?: string | number | null;
}

export interface PageQuery<S> {
  sort: S;
  desc: boolean;
  after?: Keyset;
  limit: number;
}

export interface RepositoryFigures {
  name: string;
  /** bytes of its linked blobs (each once) and of its manifests */
  size: number;
  /** the newest tag push it had (ISO 8601); absent when none */
  pushed?: string;
  pulls: number;
  tags: number;
}

export interface TagEntry {
  name: string;
  digest: string;
  /** absent when the index lacks the manifest (a drift the reconciler repairs) */
  mediaType?: string;
  /** the manifest's own bytes */
  size: number;
  pushed: string;
  /** the image's bytes (config and layers; an index: its children's); absent when a part is unknown */
  imageSize?: number;
  /** when the image was built; absent when it does not say */
  created?: string;
  /** `os/arch[/variant]` of each platform, as sorted (the first 256 characters); absent when none is known */
  platforms?: string[];
}

const REPOSITORY_COLUMN = { name: 'name', size: 'total_size', pushed: 'last_pushed_at', pulls: 'total_pulls' } as const;
/** each sort's column of `tags`; those that may be NULL (not known) are read in two ranges */
const TAG_COLUMN = {
  name: 'name',
  size: 'manifest_size',
  pushed: 'pushed_at',
  digest: 'digest',
  mediaType: 'media_type',
  imageSize: 'image_size',
  platforms: 'platform_names',
  created: 'created',
} as const;
const NULLABLE: ReadonlySet<TagColumn> = new Set(['mediaType', 'imageSize', 'platforms', 'created']);

/** a tag of `sortedTags`, with the value it was sorted by (null: not known) */
export interface SortedTag extends TagEntry {
  value: string | number | null;
}

export class Browse {
  constructor(private readonly db: Kysely<Database>) {}

  /** a page of the repositories the catalog lists (those with manifests), in the order asked */
  async repositories(query: PageQuery<RepositorySort>): Promise<RepositoryFigures[]> {
    const column = REPOSITORY_COLUMN[query.sort];
    let q = this.db
      .selectFrom('repositories')
      .select(['name', 'total_size', 'last_pushed_at', 'total_pulls', 'tag_count'])
      .where('has_manifests', '=', 1)
      .$call((b) => orderBy(b, column === 'name' ? ['name'] : [column, 'name'], query.desc))
      .limit(query.limit);
    if (query.after) q = q.where(after(column === 'name' ? ['name'] : [column, 'name'], query.after, query.desc));
    return (await q.execute()).map(repositoryFigures);
  }

  /** the figures of these repositories (any order; those the index lacks are left out) */
  async figures(names: readonly string[]): Promise<RepositoryFigures[]> {
    if (names.length === 0) return [];
    const rows = await this.db.selectFrom('repositories').select(['name', 'total_size', 'last_pushed_at', 'total_pulls', 'tag_count']).where('name', 'in', names).execute();
    return rows.map(repositoryFigures);
  }

  /** does the index know the repository (with manifests)? */
  async hasRepository(name: string): Promise<boolean> {
    return (await this.db.selectFrom('repositories').select('name').where('name', '=', name).where('has_manifests', '=', 1).executeTakeFirst()) !== undefined;
  }

  /**
   * A page of the repository's tags by any column (the JSON API's and the web interface's), over
   * the whole list: the tags with a value by (value, name), then those without one (NULL) by
   * name, last in either direction as the storage-backed list has them; each a range of the
   * column's index.
   */
  async sortedTags(repository: string, query: PageQuery<TagColumn>): Promise<SortedTag[]> {
    const column = TAG_COLUMN[query.sort];
    const page = (where: RawBuilder<boolean>[], keys: string[], limit: number) =>
      this.db
        .selectFrom('tags')
        .select(['name', 'digest', 'pushed_at', 'media_type', 'manifest_size', 'image_size', 'created', 'platform_names', sql<string | number | null>`${sql.ref(column)}`.as('value')])
        .where('repository', '=', repository)
        .$call((b) => where.reduce((q, w) => q.where(w), b))
        .$call((b) => orderBy(b, keys, query.desc))
        .limit(limit)
        .execute();
    const keys = column === 'name' ? ['name'] : [column, 'name'];
    const nullable = NULLABLE.has(query.sort);
    const inNulls = nullable && query.after?.value === null;
    const rows = inNulls
      ? []
      : await page([...(nullable ? [sql<boolean>`${sql.ref(column)} is not null`] : []), ...(query.after ? [after(keys, query.after, query.desc)] : [])], keys, query.limit);
    if (nullable && rows.length < query.limit) {
      const where = [sql<boolean>`${sql.ref(column)} is null`, ...(inNulls ? [after(['name'], query.after!, query.desc)] : [])];
      rows.push(...(await page(where, ['name'], query.limit - rows.length)));
    }
    const numeric = query.sort === 'imageSize' || query.sort === 'size';
    return rows.map((r) => ({
      name: r.name,
      digest: r.digest,
      ...(r.media_type !== null && { mediaType: r.media_type }),
      size: Number(r.manifest_size),
      pushed: r.pushed_at,
      ...(r.image_size !== null && { imageSize: Number(r.image_size) }),
      ...(r.created !== null && { created: r.created }),
      ...(r.platform_names !== null && { platforms: r.platform_names.split(',') }),
      value: r.value === null ? null : numeric ? Number(r.value) : r.value,
    }));
  }

  /** the tags that name `digest` in the repository, by name */
  async tagsNaming(repository: string, digest: string, limit: number): Promise<string[]> {
    const rows = await this.db.selectFrom('tags').select('name').where('repository', '=', repository).where('digest', '=', digest).orderBy('name').limit(limit).execute();
    return rows.map((r) => r.name);
  }
}

function repositoryFigures(r: { name: string; total_size: number | string; last_pushed_at: string; total_pulls: number | string; tag_count: number | string }): RepositoryFigures {
  return { name: r.name, size: Number(r.total_size), pushed: r.last_pushed_at || undefined, pulls: Number(r.total_pulls), tags: Number(r.tag_count) };
}

/** ordered by the keys (this file's own column names, never the caller's text) */
function orderBy<B extends { orderBy(expression: RawBuilder<unknown>, direction: 'asc' | 'desc'): B }>(b: B, keys: readonly string[], desc: boolean): B {
  for (const key of keys) b = b.orderBy(sql.ref(key), desc ? 'desc' : 'asc');
  return b;
}

/** (value, name) beyond the keyset: one range of the sort's index on both engines (row values) */
function after(keys: readonly string[], at: Keyset, desc: boolean) {
  const op = desc ? sql.raw('<') : sql.raw('>');
  if (keys.length === 1) return sql<boolean>`${sql.ref(keys[0])} ${op} ${at.name}`;
  return sql<boolean>`(${sql.ref(keys[0])}, ${sql.ref(keys[1])}) ${op} (${at.value ?? ''}, ${at.name})`;
}
