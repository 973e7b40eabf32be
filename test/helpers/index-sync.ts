/**
 * The metadata index of a running test registry, from the outside: one reconciler pass now (the
 * pass the scheduler runs every metadata.reconcile.interval) and `berth verify --index`'s
 * comparison. Each opens its own connection to the registry's database and closes it.
 */
import { openMetadataIndex } from '../../src/features/metadata.js';
import { reconcileIndex, type ReconcileSummary } from '../../src/registry/indexing/reconcile.js';
import { verifyIndex } from '../../src/registry/indexing/verify-index.js';
import type { TestRegistry } from './berth.js';

/** a reconciler pass over the registry's storage, as its scheduler would run it */
export async function reconcileNow(registry: Pick<TestRegistry, 'app'>, options: { full?: boolean } = {}): Promise<ReconcileSummary> {
  const index = await openMetadataIndex(registry.app.config);
  try {
    return await reconcileIndex(registry.app.driver, index, { full: options.full, failed: (name, err) => { throw new Error(`reconciling ${name}: ${(err as Error).message}`); } });
  } finally {
    await index.close();
  }
}

/** every difference `berth verify --index` reports between the registry's index and its storage */
export async function indexDifferences(registry: Pick<TestRegistry, 'app'>): Promise<string[]> {
  const index = await openMetadataIndex(registry.app.config);
  try {
    const lines: string[] = [];
    await verifyIndex(registry.app.driver, index, (line) => lines.push(line));
    return lines;
  } finally {
    await index.close();
  }
}
