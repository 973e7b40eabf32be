/** A page of a sorted list of names (the tag list read whole from storage or an upstream), as the index pages it (indexing/listing-source.ts). */
import type { ListingPage, PageBounds } from './indexing/listing-source.js';

/** the page of a sorted list: at most `n` entries after `last`, and whether more follow */
export function pageOf(sorted: readonly string[], { n, last }: PageBounds): ListingPage {
  const start = last === undefined ? 0 : firstAfter(sorted, last);
  const items = sorted.slice(start, start + n);
  return { items, more: n > 0 && start + n < sorted.length };
}

/** index of the first entry greater than `last` (binary search; entries sorted by code unit) */
function firstAfter(sorted: readonly string[], last: string): number {
  let lo = 0;
  let hi = sorted.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (sorted[mid] <= last) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}
