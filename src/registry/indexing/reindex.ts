/**
 * One repository made in the index what it is in storage, read whole (facts.ts): what a pass
 * outside the request path calls for each repository it changed, and what the reconciler calls
 * for each repository whose storage changed. A repository storage no longer has (neither
 * `_manifests` nor `_layers`) is dropped.
 */
import { unlessMissing, type StorageDriver } from '../../storage/driver.js';
import { listDigests } from '../digest-dirs.js';
import { repositoryNames } from '../gc/repositories.js';
import * as layout from '../layout.js';
import { forEach } from '../pool.js';
import { readRepositoryFacts } from './facts.js';
import type { RepositorySink } from './sink.js';

export async function reindexRepository(driver: StorageDriver, index: RepositorySink, name: string): Promise<'replaced' | 'dropped'> {
  if (!(await inStorage(driver, name))) {
    await index.dropRepository(name);
    return 'dropped';
  }
  const facts = await readRepositoryFacts(driver, name);
  await index.replaceRepository(facts, facts.hasManifests);
  return 'replaced';
}

/** storage's rule for a repository directory (gc/repositories.ts): it has `_manifests` or `_layers` */
export async function inStorage(driver: StorageDriver, name: string): Promise<boolean> {
  const names = (await unlessMissing(driver.listNames(layout.repository(name)))) ?? [];
  return names.includes(layout.MANIFESTS_DIR_NAME) || names.includes('_layers');
}

/**
 * every repository with a `_layers` link to one of `digests`, reindexed: after a pass deleted
 * blobs' content under links that stay (online collection emptying its trash), which changes what
 * the links count for (facts.ts counts a link only to content that is there). One listing of
 * `_layers` per repository.
 */
export async function reindexLinking(driver: StorageDriver, index: RepositorySink, digests: ReadonlySet<string>): Promise<void> {
  await forEach(repositoryNames(driver), 8, async (name) => {
    const { digests: linked } = await listDigests(driver, (algorithm) => layout.layersDir(name, algorithm));
    if (linked.some((digest) => digests.has(digest))) await reindexRepository(driver, index, name);
  });
}
