/**
 * `berth index rebuild`: walks storage (gc/repositories.ts, every repository directory) and makes
 * the index hold what storage holds, one repository per transaction, a few repositories at once.
 * Repositories the index has and storage does not are dropped; the tags' history is kept (a tag
 * that moved or went while the index was not told is closed at the rebuild's time). At the end the
 * index records when it was rebuilt (REBUILT_KEY).
 */
import type { StorageDriver } from '../../storage/driver.js';
import { REBUILT_KEY, type MetadataIndex } from '../../metadata/metadata-index.js';
import { forEach } from '../pool.js';
import { repositoryNames } from '../gc/repositories.js';
import { ContentCache } from './content-cache.js';
import { replaceFromStorage } from './reindex.js';

/** repositories read and written at once */
export const REBUILD_REPOSITORIES = 8;

export interface RebuildSummary {
  repositories: number;
  manifests: number;
  tags: number;
  dropped: number;
}

/** times a repository is read again because the request path wrote to it meanwhile, before the rebuild gives up */
export const REBUILD_ATTEMPTS = 10;

/**
 * Safe while berth serves: a repository's rows are replaced only if the request path wrote nothing
 * to it between the storage read and the replacement (MetadataIndex counts those writes), else it
 * is read again; a repository is dropped only if nothing was written to it since before the walk.
 * `signal`: stop between repositories (the registry is shutting down).
 */
export async function rebuildIndex(
  driver: StorageDriver,
  index: MetadataIndex,
  options: { progress?: (summary: RebuildSummary) => void; now?: () => number; signal?: AbortSignal } = {},
): Promise<RebuildSummary> {
  const summary: RebuildSummary = { repositories: 0, manifests: 0, tags: 0, dropped: 0 };
  const seen = new Set<string>();
  const before = await index.repositoryChanges();
  const cache = new ContentCache();
  const names: string[] = [];
  for await (const name of repositoryNames(driver)) names.push(name);
  await forEach(names, REBUILD_REPOSITORIES, async (name) => {
    const facts = await replaceFromStorage(driver, index, name, { attempts: REBUILD_ATTEMPTS, cache, signal: options.signal });
    seen.add(name);
    summary.repositories++;
    summary.manifests += facts.manifests.length;
    summary.tags += facts.tags.length;
    options.progress?.(summary);
  });
  for (const [name, changes] of before) {
    if (seen.has(name)) continue;
    options.signal?.throwIfAborted();
    if (await index.dropRepository(name, changes)) summary.dropped++;
  }
  await index.dropUnlinkedBlobs();
  await index.setState(REBUILT_KEY, new Date((options.now ?? Date.now)()).toISOString());
  return summary;
}
