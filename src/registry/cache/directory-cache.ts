/**
 * What the registry read from the small files of one storage directory (a tag's `current` link, a
 * revision's link and berth.json, a layer link), kept with the driver's childrenVersion token of
 * that directory. An entry is served only while the driver hands out the same token again, and the
 * token changes whenever a file in the directory is written or removed (driver.ts), so a push, a
 * tag move or a delete by any instance or process sharing the storage (Distribution included) shows
 * at once. One cheap check (a stat on the filesystem) replaces reading the files; drivers that never
 * vouch (S3) read every time. See docs/decisions.md, "Metadata cache".
 *
 * Least recently used entries go first (lru-cache) beyond `maxEntries`.
 */
import { LRUCache } from 'lru-cache';
import { PathNotFoundError, type StorageDriver } from '../../storage/driver.js';
import type { SharedCache } from './shared-cache.js';

/** default bound: a key is a path of some 150 characters, so 20,000 entries are about 6-8 MiB */
export const DIRECTORY_CACHE_ENTRIES = 20_000;

interface Entry {
  version: string;
  value: unknown;
}

export class DirectoryCache {
  private readonly entries: LRUCache<string, Entry>;

  /** reads asked, reads answered from the cache (local or shared), shared entries unreadable: Distribution's registry_storage_cache_* */
  readonly counts = { requests: 0, hits: 0, errors: 0 };

  constructor(
    private readonly driver: StorageDriver,
    readonly maxEntries = DIRECTORY_CACHE_ENTRIES,
    /** the entries of every instance (storage.cache.blobdescriptor: redis), behind this process's own */
    private readonly shared?: SharedCache,
  ) {
    // bounded by a size of 1 an entry rather than `max`, which allocates its arrays up front
    // (26 MiB for 1,000,000 entries) instead of as entries come
    this.entries = new LRUCache({ maxSize: Math.max(1, maxEntries), sizeCalculation: () => 1 });
  }

  /**
   * `load()`'s answer for directory `dir`, from the cache while the directory's token is the one it
   * was read under; `missing` without reading when the directory does not exist. `key` tells apart
   * values of one directory read by different callers. The token is taken before `load` runs, so a
   * change during the read makes the next token differ.
   */
  async read<T>(dir: string, key: string, missing: T, load: () => Promise<T>): Promise<T> {
    const id = `${key} ${dir}`;
    this.counts.requests++;
    let version: string | undefined;
    try {
      version = await this.driver.childrenVersion(dir);
    } catch (err) {
      if (!(err instanceof PathNotFoundError)) throw err;
      this.entries.delete(id);
      return missing;
    }
    if (version === undefined || this.maxEntries < 1) {
      this.entries.delete(id); // changed too recently (or a driver that never vouches)
      return load();
    }
    const hit = this.entries.get(id) ?? (await this.fromShared(id));
    if (hit?.version === version) {
      this.entries.set(id, hit);
      this.counts.hits++;
      return hit.value as T;
    }
    const value = await load();
    this.entries.set(id, { version, value });
    // undefined is left out by JSON: it reads back as undefined
    this.shared?.set(`dir:${id}`, Buffer.from(JSON.stringify({ version, value })));
    return value;
  }

  private async fromShared(id: string): Promise<Entry | undefined> {
    const stored = await this.shared?.get(`dir:${id}`);
    if (stored === undefined) return undefined;
    try {
      return JSON.parse(stored.toString()) as Entry;
    } catch {
      this.counts.errors++;
      return undefined; // not ours (written by another program under the prefix): read from storage
    }
  }

  /** entries held, for tests and metrics */
  get size(): number {
    return this.entries.size;
  }
}
