/**
 * Sorted directory listings (the tag lists) kept with the driver's childrenVersion token they were
 * read under. An entry is served only while the driver hands out the same token again, so a change
 * by any instance sharing the storage shows at once; the cache holds no state of its own that
 * could go stale. Least recently used entries go first when there are more than `maxEntries`
 * listings or `maxNames` names in all; a listing longer than `maxNames` is not kept.
 */
export interface ListingCacheLimits {
  maxEntries: number;
  maxNames: number;
}

interface Entry {
  version: string;
  names: readonly string[];
}

export class ListingCache {
  /** in order of use, least recent first (a Map iterates in insertion order) */
  private readonly entries = new Map<string, Entry>();
  private names = 0;

  constructor(readonly limits: ListingCacheLimits) {}

  /** the listing of `key` if it was read under `version`; an entry of another version is dropped */
  get(key: string, version: string): readonly string[] | undefined {
    const entry = this.entries.get(key);
    if (entry === undefined) return undefined;
    if (entry.version !== version) {
      this.delete(key);
      return undefined;
    }
    this.entries.delete(key);
    this.entries.set(key, entry);
    return entry.names;
  }

  /** keeps `names` (sorted, read after `version` was handed out) and returns them, frozen */
  set(key: string, version: string, names: string[]): readonly string[] {
    this.delete(key);
    const frozen = Object.freeze(names);
    if (names.length > this.limits.maxNames || this.limits.maxEntries < 1) return frozen;
    this.entries.set(key, { version, names: frozen });
    this.names += names.length;
    for (const [oldest, entry] of this.entries) {
      if (this.entries.size <= this.limits.maxEntries && this.names <= this.limits.maxNames) break;
      this.entries.delete(oldest);
      this.names -= entry.names.length;
    }
    return frozen;
  }

  delete(key: string): void {
    const entry = this.entries.get(key);
    if (entry === undefined) return;
    this.entries.delete(key);
    this.names -= entry.names.length;
  }

  /** listings and names held, for tests and metrics */
  get size(): { entries: number; names: number } {
    return { entries: this.entries.size, names: this.names };
  }
}
