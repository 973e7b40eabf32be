/**
 * Bounded concurrency for fan-outs over storage. One request must never open as many files (or S3
 * connections) as a document it was sent lists: a manifest of 37,000 references opened 37,000 links
 * at once and the process ran out of descriptors for everyone (see docs/security.md).
 */

/** storage calls one request keeps in flight at most: enough to overlap S3 round trips */
export const REQUEST_IO_CONCURRENCY = 16;

/** Runs `work` over `items` with at most `limit` calls in flight (storage round trips overlap; order of completion is free). */
export async function forEach<T>(items: Iterable<T> | AsyncIterable<T>, limit: number, work: (item: T) => Promise<void>): Promise<void> {
  // an async generator queues concurrent next() calls, so the workers share it safely
  const iterator = Symbol.asyncIterator in items ? items[Symbol.asyncIterator]() : items[Symbol.iterator]();
  const worker = async () => {
    for (let next = await iterator.next(); !next.done; next = await iterator.next()) await work(next.value);
  };
  await Promise.all(Array.from({ length: limit }, worker));
}

/** `work` of every item, in the items' order, with at most `limit` calls in flight */
export async function mapLimited<T, R>(items: readonly T[], limit: number, work: (item: T) => Promise<R>): Promise<R[]> {
  const results = new Array<R>(items.length);
  await forEach(items.keys(), limit, async (i) => {
    results[i] = await work(items[i]);
  });
  return results;
}

/**
 * `work` of every item, handed out in the items' order as each is awaited, with the calls of the
 * next `ahead` items already started: a walk that must go in order still overlaps its round trips
 * (listings of the next directories while one is consumed)
 */
export async function* inOrderAhead<T, R>(items: readonly T[], ahead: number, work: (item: T) => Promise<R>): AsyncGenerator<R> {
  const started: (Promise<R> | undefined)[] = [];
  const start = (i: number) => {
    if (i >= items.length) return;
    started[i] = work(items[i]);
    // awaited in turn below; until then a failure must not count as unhandled
    started[i]!.catch(() => {});
  };
  for (let i = 0; i < ahead; i++) start(i);
  for (let i = 0; i < items.length; i++) {
    const result = await started[i]!;
    started[i] = undefined;
    start(i + ahead);
    yield result;
  }
}
