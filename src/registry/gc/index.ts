/**
 * Garbage collection, offline (`berth garbage-collect`): mark what the manifests keep, sweep the
 * rest. The registries sharing the storage must not write meanwhile: the command takes this path
 * only with a read-only configuration or --dry-run, and collects by online.ts otherwise
 * (docs/decisions.md, "Garbage collection (offline)"). See README.md in this directory.
 */
import type { StorageDriver } from '../../storage/driver.js';
import { readGraph } from './graph.js';
import { markRepository } from './mark.js';
import { forEach } from '../pool.js';
import { repositoryNames } from './repositories.js';
import { sweepBlobs, sweepRepository, type RepositorySweep } from './sweep.js';
import type { IndexSink, RepositorySink } from '../indexing/sink.js';

/** how many repositories are read, marked and swept at once */
export const REPOSITORIES_AT_ONCE = 8;

export interface CollectOptions {
  /** report what would be deleted, delete nothing */
  dryRun: boolean;
  /** keep only the manifests reachable from a tag (with their children and referrers) */
  deleteUntagged: boolean;
  /** one line per manifest and blob marked and per path deleted; not called when absent */
  report?: (line: string) => void;
  /** for the duration (tests pass their own) */
  now?: () => number;
  /** how far it got: repositories marked, then unmarked blobs looked at */
  progress?: (what: string, done: number, total?: number) => void;
  /** the metadata index, told of the manifests and blob links this collection deleted */
  index?: CollectedIndex;
}

/**
 * What the collection tells the index: each manifest and `_layers` link it deleted, as the request
 * path's deletes do (nothing else writes meanwhile, so no repository needs reading again); a
 * repository left without a manifest or link is read whole, as it may be gone from storage.
 */
export type CollectedIndex = RepositorySink & Pick<IndexSink, 'manifestRemoved' | 'blobUnlinked'>;

export interface CollectSummary {
  repositories: number;
  manifestsKept: number;
  /** untagged manifests deleted (or, in a dry run, that would be) */
  manifestsDeleted: number;
  layerLinksDeleted: number;
  /** digests marked: manifests and blobs that stay */
  marked: number;
  blobsDeleted: number;
  bytesFreed: number;
  durationMs: number;
}

export async function collectGarbage(driver: StorageDriver, options: CollectOptions): Promise<CollectSummary> {
  const now = options.now ?? Date.now;
  const started = now();
  const report = options.report ?? (() => {});
  const sweepOptions = { dryRun: options.dryRun, report };
  const marked = new Set<string>();
  const summary: CollectSummary = { repositories: 0, manifestsKept: 0, manifestsDeleted: 0, layerLinksDeleted: 0, marked: 0, blobsDeleted: 0, bytesFreed: 0, durationMs: 0 };
  // repositories are independent until the blob sweep: a few at a time keep the storage busy
  await forEach(repositoryNames(driver), REPOSITORIES_AT_ONCE, async (name) => {
    report(name);
    summary.repositories++;
    // only a mark from the tags reads them (and only then can the sweep touch a tag's index)
    const graph = await readGraph(driver, name, { tags: options.deleteUntagged });
    const mark = markRepository(graph, options.deleteUntagged, marked, report);
    const swept = await sweepRepository(driver, graph, mark, sweepOptions);
    summary.manifestsKept += mark.kept.size;
    summary.manifestsDeleted += swept.manifests;
    summary.layerLinksDeleted += swept.layerLinks;
    if (options.index && !options.dryRun) await tellIndex(driver, options.index, name, mark.unkept, swept);
    options.progress?.('repositories marked', summary.repositories);
  });
  const blobs = await sweepBlobs(driver, marked, { ...sweepOptions, blobsLookedAt: (done) => options.progress?.('unmarked blobs looked at', done) });
  summary.marked = marked.size;
  summary.blobsDeleted = blobs.blobs;
  summary.bytesFreed = blobs.bytes;
  summary.durationMs = now() - started;
  return summary;
}

async function tellIndex(driver: StorageDriver, index: CollectedIndex, name: string, manifests: readonly string[], swept: RepositorySweep): Promise<void> {
  if (manifests.length + swept.unlinked.length === 0) return;
  if (swept.linksLeft + swept.manifestsLeft === 0) {
    // loaded only then: the collection without an index, or with nothing to tell it, never loads the database's modules
    const { reindexRepository } = await import('../indexing/reindex.js');
    await reindexRepository(driver, index, name);
    return;
  }
  for (const digest of manifests) await index.manifestRemoved(name, digest);
  for (const digest of swept.unlinked) await index.blobUnlinked(name, digest);
}

/** the summary as one line, e.g. for the command's last line of output */
export function summaryLine(summary: CollectSummary, dryRun: boolean): string {
  const verb = dryRun ? 'would delete' : 'deleted';
  return (
    `garbage-collect${dryRun ? ' (dry run)' : ''}: ${summary.repositories} repositories, ${summary.manifestsKept} manifests kept, ` +
    `${verb} ${summary.manifestsDeleted} manifests, ${summary.blobsDeleted} blobs (${summary.bytesFreed} bytes) and ${summary.layerLinksDeleted} layer links, ` +
    `${summary.marked} digests marked, in ${(summary.durationMs / 1000).toFixed(2)}s`
  );
}
