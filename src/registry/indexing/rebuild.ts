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
import { readRepositoryFacts } from './facts.js';

/** repositories read and written at once */
export const REBUILD_REPOSITORIES = 8;

export interface RebuildSummary {
  repositories: number;
  manifests: number;
  tags: number;
  dropped: number;
}

export async function rebuildIndex(driver: StorageDriver, index: MetadataIndex, options: { progress?: (summary: RebuildSummary) => void; now?: () => number } = {}): Promise<RebuildSummary> {
  const summary: RebuildSummary = { repositories: 0, manifests: 0, tags: 0, dropped: 0 };
  const seen = new Set<string>();
  const names: string[] = [];
  for await (const name of repositoryNames(driver)) names.push(name);
  await forEach(names, REBUILD_REPOSITORIES, async (name) => {
    const facts = await readRepositoryFacts(driver, name);
    await index.replaceRepository(facts, facts.hasManifests);
    seen.add(name);
    summary.repositories++;
    summary.manifests += facts.manifests.length;
    summary.tags += facts.tags.length;
    options.progress?.(summary);
  });
  for (const name of await index.repositoryNames()) {
    if (seen.has(name)) continue;
    await index.dropRepository(name);
    summary.dropped++;
  }
  await index.dropUnlinkedBlobs();
  await index.setState(REBUILT_KEY, new Date((options.now ?? Date.now)()).toISOString());
  return summary;
}
