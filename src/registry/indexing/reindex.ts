/**
 * One repository made in the index what it is in storage, read whole (facts.ts): what a pass
 * outside the request path calls for each repository it changed, and what the reconciler calls
 * for each repository whose storage changed. A repository storage no longer has (neither
 * `_manifests` nor `_layers`) is dropped.
 */
import { RepositoryChangedError } from '../../metadata/metadata-index.js';
import { unlessMissing, type StorageDriver } from '../../storage/driver.js';
import { listDigests } from '../digest-dirs.js';
import { repositoryNames } from '../gc/repositories.js';
import * as layout from '../layout.js';
import { forEach } from '../pool.js';
import type { ContentCache } from './content-cache.js';
import { readRepositoryFacts, type StoredRepository } from './facts.js';
import type { RepositorySink } from './sink.js';

/** reads of a repository written to by requests meanwhile, before the pass gives up on it (the reconciler takes it later) */
const REINDEX_ATTEMPTS = 3;

/**
 * 'left': requests wrote to it during each of REINDEX_ATTEMPTS reads. The pass goes on without it:
 * each of those writes told the index, and the reconciler reads the repository at its next pass
 * (its storage changed, so its fingerprint did); a retention, expiry or collection pass failing
 * because pushes kept arriving would leave the rest of its work undone.
 */
export async function reindexRepository(driver: StorageDriver, index: RepositorySink, name: string): Promise<'replaced' | 'dropped' | 'left'> {
  const changes = await index.changesOf(name);
  // refused: a request wrote to it since, so storage has it again
  if (!(await inStorage(driver, name)) && (await index.dropRepository(name, changes))) return 'dropped';
  try {
    await replaceFromStorage(driver, index, name, { attempts: REINDEX_ATTEMPTS });
  } catch (err) {
    if (err instanceof RepositoryChangedError) return 'left';
    throw err;
  }
  return 'replaced';
}

/**
 * the repository's rows replaced by what storage holds, unless a request wrote to it between the
 * read and the write (MetadataIndex counts those writes): a push would be undone by rows read
 * before it, so the repository is read again, up to `attempts` times. `cache`: content read
 * during one walk; `signal`: stop between attempts.
 */
export async function replaceFromStorage(
  driver: StorageDriver,
  index: RepositorySink,
  name: string,
  options: { attempts: number; cache?: ContentCache; signal?: AbortSignal },
): Promise<StoredRepository> {
  for (let attempt = 1; ; attempt++) {
    options.signal?.throwIfAborted();
    const changes = await index.changesOf(name);
    const facts = await readRepositoryFacts(driver, name, options.cache);
    try {
      await index.replaceRepository(facts, facts.hasManifests, changes);
      return facts;
    } catch (err) {
      if (!(err instanceof RepositoryChangedError) || attempt >= options.attempts) throw err;
    }
  }
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
