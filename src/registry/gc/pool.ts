/** Runs `work` over `items` with at most `limit` calls in flight (storage round trips overlap; order of completion is free). */
export async function forEach<T>(items: Iterable<T>, limit: number, work: (item: T) => Promise<void>): Promise<void> {
  const iterator = items[Symbol.iterator]();
  const worker = async () => {
    for (let next = iterator.next(); !next.done; next = iterator.next()) await work(next.value);
  };
  await Promise.all(Array.from({ length: limit }, worker));
}
