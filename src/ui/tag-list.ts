/**
 * A page of a repository's tags in the order the user chose, for the web interface without the
 * metadata index (with it, api.ts pages the index by any column). By name (the
 * default) over every tag, paged by `last` as tags/list is. By another column every tag's value is
 * needed before the first page can be cut: that is done for the first SORT_LIMIT tags by name
 * (the answer says so when there are more), paged by position (`from`). Summaries are kept by
 * digest (content-addressed, so they stay true), so the next page of a sort costs a manifest
 * lookup per tag, not a summary.
 */
import { LRUCache } from 'lru-cache';
import { RegistryError } from '../registry/errors.js';
import { mapLimited } from '../registry/pool.js';
import type { Summary, TagPage, TagRow } from './wire.js';

export const SORT_KEYS = ['tag', 'digest', 'mediaType', 'size', 'platforms', 'created', 'pushed'] as const;
export type SortKey = (typeof SORT_KEYS)[number];

/** tags whose values are read for a sort by a column other than the name */
export const SORT_LIMIT = 1000;
/** summaries kept (a few hundred bytes each) */
const SUMMARIES_KEPT = 10_000;
const CONCURRENCY = 8;

export type SummaryCache = LRUCache<string, Summary>;
export const summaryCache = (): SummaryCache => new LRUCache({ max: SUMMARIES_KEPT });

/** what a tag list is read from */
export interface TagSource {
  name: string;
  /** every tag, sorted by name */
  tags: readonly string[];
  /** the digest the tag names and the manifest's summary (cached by digest); throws when unreadable */
  summary(tag: string): Promise<Summary>;
  /** when the tag was last pushed (ms), undefined when unknown */
  pushed(tag: string): Promise<number | undefined>;
}

export interface TagQuery {
  n: number;
  sort: SortKey;
  desc: boolean;
  /** name order: the page starts after this tag */
  last?: string;
  /** another order: the page starts at this position */
  from?: number;
}

export function parseSort(sort: string | undefined): SortKey {
  if (sort === undefined || sort === '') return 'tag';
  if ((SORT_KEYS as readonly string[]).includes(sort)) return sort as SortKey;
  throw new RegistryError('UNSUPPORTED', `tags cannot be sorted by ${JSON.stringify(sort)}; sort by one of ${SORT_KEYS.join(', ')}`, { status: 400 });
}

export function parseFrom(from: string | undefined): number | undefined {
  if (from === undefined || from === '') return undefined;
  if (!/^\d{1,9}$/.test(from)) throw new RegistryError('PAGINATION_NUMBER_INVALID', `from must be a position in the sorted tags (0 or more), not ${JSON.stringify(from)}`);
  return Number(from);
}

export async function tagPage(source: TagSource, query: TagQuery): Promise<TagPage> {
  const { tags } = source;
  const total = tags.length;
  if (query.sort === 'tag') {
    const ordered = query.desc ? [...tags].reverse() : tags;
    const start = query.last === undefined ? 0 : firstAfter(ordered, query.last, query.desc);
    const items = ordered.slice(start, start + query.n);
    const more = query.n > 0 && start + query.n < ordered.length;
    return { name: source.name, total, tags: await rows(source, items), next: more ? { last: items[items.length - 1] } : undefined };
  }
  const among = tags.slice(0, SORT_LIMIT);
  const values = await mapLimited(among, CONCURRENCY, async (tag) => {
    try {
      return sortValue(query.sort === 'pushed' ? await source.pushed(tag) : (await source.summary(tag))[query.sort as keyof Summary]);
    } catch {
      return undefined; // an unreadable tag sorts last, and shows why on its row
    }
  });
  const order = among.map((tag, i) => ({ tag, value: values[i] }));
  order.sort((a, b) => compare(a.value, b.value, query.desc) || (a.tag < b.tag ? -1 : 1));
  const start = query.from ?? 0;
  const items = order.slice(start, start + query.n).map((e) => e.tag);
  const more = query.n > 0 && start + query.n < order.length;
  return {
    name: source.name,
    total,
    tags: await rows(source, items),
    next: more ? { from: String(start + query.n) } : undefined,
    sortedAmong: total > among.length ? among.length : undefined,
  };
}

async function rows(source: TagSource, items: readonly string[]): Promise<TagRow[]> {
  return mapLimited(items, CONCURRENCY, async (tag): Promise<TagRow> => {
    try {
      const [summary, pushed] = await Promise.all([source.summary(tag), source.pushed(tag)]);
      return { tag, ...summary, pushed: pushed === undefined ? undefined : new Date(pushed).toISOString() };
    } catch (err) {
      return { tag, error: (err as Error).message };
    }
  });
}

type Value = string | number | undefined;

function sortValue(v: unknown): Value {
  if (Array.isArray(v)) return v.length === 0 ? undefined : v.join(',');
  return typeof v === 'string' || typeof v === 'number' ? v : undefined;
}

/** ascending or descending; what has no value goes last either way */
function compare(x: Value, y: Value, desc: boolean): number {
  if (x === y) return 0;
  if (x === undefined) return 1;
  if (y === undefined) return -1;
  return (x < y ? -1 : 1) * (desc ? -1 : 1);
}

/** the position after `last` in tags sorted by name (descending when `desc`), whether or not `last` is still a tag */
function firstAfter(ordered: readonly string[], last: string, desc: boolean): number {
  let lo = 0;
  let hi = ordered.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (desc ? ordered[mid] >= last : ordered[mid] <= last) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}
