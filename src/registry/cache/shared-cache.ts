/**
 * A second level behind the metadata cache, shared by every instance and process on one storage
 * (`storage.cache.blobdescriptor: redis`; the Redis side is src/registry/cache/redis-cache.ts, loaded
 * only then). It holds the same entries as the local caches: what was read from a directory, with
 * the directory's token (served only when the storage hands out that token again), and manifest
 * content by digest (immutable). So it saves a process the reads another already did, and is never
 * needed to be right: an entry it lacks or loses is read from storage. Its failures are misses.
 */
export interface SharedCache {
  /** the value stored under `key`; undefined when absent or when the cache cannot be reached */
  get(key: string): Promise<Buffer | undefined>;
  /** stores `value` under `key` (best effort: a failure loses the entry, nothing else) */
  set(key: string, value: Buffer): void;
}
