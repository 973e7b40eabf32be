/** Runs `work` over `items` with at most `limit` calls in flight (storage round trips overlap; order of completion is free). */
export async function forEach<T>(items: Iterable<T> | AsyncIterable<T>, limit: number, work: (item: T) => Promise<void>): Promise<void> {
  // an async generator queues concurrent next() calls, so the workers share it safely
  const iterator = Symbol.asyncIterator in items ? items[Symbol.asyncIterator]() : items[Symbol.iterator]();
  const worker = async () => {
    for (let next = await iterator.next(); !next.done; next = await iterator.next()) await work(next.value);
  };
  await Promise.all(Array.from({ length: limit }, worker));
}
