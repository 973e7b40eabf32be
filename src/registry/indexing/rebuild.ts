/**
 * `berth index rebuild`: walks storage (gc/repositories.ts, every repository directory) and makes
 * the index hold what storage holds, a few repositories read at once and written in batches of
 * several per transaction. Repositories the index has and storage does not are dropped; the tags'
 * history is kept (a tag that moved or went while the index was not told is closed at the
 * rebuild's time). At the end the index records when it was rebuilt (REBUILT_KEY).
 */
import type { StorageDriver } from '../../storage/driver.js';
import { REBUILT_KEY, type MetadataIndex } from '../../metadata/metadata-index.js';
import { forEach } from '../pool.js';
import { repositoryNames } from '../gc/repositories.js';
import { ContentCache } from './content-cache.js';
import { readRepositoryFacts, type StoredRepository } from './facts.js';

/** repositories read at once */
export const REBUILD_REPOSITORIES = 8;
/**
 * rows (manifests, tags, blob links) written per transaction at most, a repository never split:
 * a commit per repository cost more than its rows, and a transaction of thousands of rows still
 * holds the database (and the request path's writes) for milliseconds only
 */
export const REBUILD_BATCH_ROWS = 5000;

export interface RebuildSummary {
  repositories: number;
  manifests: number;
  tags: number;
  dropped: number;
}

export async function rebuildIndex(driver: StorageDriver, index: MetadataIndex, options: { progress?: (summary: RebuildSummary) => void; now?: () => number } = {}): Promise<RebuildSummary> {
  const summary: RebuildSummary = { repositories: 0, manifests: 0, tags: 0, dropped: 0 };
  const seen = new Set<string>();
  const cache = new ContentCache();
  let pending: StoredRepository[] = [];
  let pendingRows = 0;
  // one batch written at a time, while the walk reads the next
  let written: Promise<void> = Promise.resolve();
  const flush = () => {
    const batch = pending;
    pending = [];
    pendingRows = 0;
    written = written.then(async () => {
      await index.replaceRepositories(batch.map((facts) => ({ facts, hasManifests: facts.hasManifests })));
      for (const facts of batch) {
        summary.repositories++;
        summary.manifests += facts.manifests.length;
        summary.tags += facts.tags.length;
      }
      options.progress?.(summary);
    });
    return written;
  };
  await forEach(repositoryNames(driver), REBUILD_REPOSITORIES, async (name) => {
    const facts = await readRepositoryFacts(driver, name, cache);
    seen.add(name);
    pending.push(facts);
    pendingRows += facts.manifests.length + facts.tags.length + facts.blobs.length + 1;
    if (pendingRows >= REBUILD_BATCH_ROWS) await flush();
  });
  await flush();
  for (const name of await index.repositoryNames()) {
    if (seen.has(name)) continue;
    await index.dropRepository(name);
    summary.dropped++;
  }
  await index.dropUnlinkedBlobs();
  await index.setState(REBUILT_KEY, new Date((options.now ?? Date.now)()).toISOString());
  return summary;
}
