/**
 * `berth index rebuild`: walks storage (gc/repositories.ts, every repository directory) and makes
 * the index hold what storage holds, a few repositories read at once and written in batches, many
 * repositories per transaction (docs/decisions.md, "The index's writes: one per push, batches for the rebuild"). Repositories the index
 * has and storage does not are dropped; the tags' history is kept (a tag that moved or went while
 * the index was not told is closed at the rebuild's time). At the end the index records when it
 * was rebuilt (REBUILT_KEY). Each repository's fingerprint (fingerprint.ts), begun before it is
 * read, is kept as the reconciler keeps it, so the reconciler's first pass after the rebuild skips
 * the repositories that did not change since (on a driver with directory tokens: the filesystem).
 */
import type { StorageDriver } from '../../storage/driver.js';
import { REBUILT_KEY, RepositoryChangedError, type MetadataIndex } from '../../metadata/metadata-index.js';
import { StorageVersions } from '../../metadata/storage-versions.js';
import { forEach } from '../pool.js';
import { repositoryNames } from '../gc/repositories.js';
import { ContentCache } from './content-cache.js';
import { readRepositoryFacts, type StoredRepository } from './facts.js';
import { beginFingerprint, keptVersion, type Fingerprint } from './fingerprint.js';
import { splitRepository } from './parts.js';
import { replaceFromStorage } from './reindex.js';

/** repositories read at once */
export const REBUILD_REPOSITORIES = 8;

/**
 * a batch is written once it holds this many repositories or rows (manifests, tags, links): big
 * enough that commits stop costing most of the time, small enough that the transaction holds
 * the database (and, on SQLite, this process's event loop) for tens of milliseconds only
 * (about 40 ms of CPU per 1,000 rows, quiet)
 */
export const BATCH_REPOSITORIES = 64;
export const BATCH_ROWS = 2_000;

/**
 * a repository with more rows than this is written alone, in parts of at most this many rows,
 * one transaction each (parts.ts): docs/decisions.md, "A big repository is rebuilt in parts"
 */
export const PART_ROWS = BATCH_ROWS;

export interface RebuildSummary {
  repositories: number;
  manifests: number;
  tags: number;
  dropped: number;
}

/** a repository read from storage, and its fingerprint begun just before (none on S3: fingerprint.ts) */
interface Read {
  facts: StoredRepository;
  fingerprint?: Fingerprint;
}

/** times a repository is read again because the request path wrote to it meanwhile, before the rebuild gives up */
export const REBUILD_ATTEMPTS = 10;

/**
 * Safe while berth serves: a repository's rows are replaced only if the request path wrote nothing
 * to it between the storage read and the replacement (MetadataIndex counts those writes; the
 * counts read before the walk are the expected ones), else it is read again on its own; a
 * repository is dropped only if nothing was written to it since before the walk.
 * `signal`: stop between repositories (the registry is shutting down); `storeNow`: the store's
 * time, for the fingerprints' settle rule (default Date.now, as the reconciler's).
 */
export async function rebuildIndex(
  driver: StorageDriver,
  index: MetadataIndex,
  options: { progress?: (summary: RebuildSummary) => void; now?: () => number; storeNow?: () => number; signal?: AbortSignal } = {},
): Promise<RebuildSummary> {
  const summary: RebuildSummary = { repositories: 0, manifests: 0, tags: 0, dropped: 0 };
  const seen = new Set<string>();
  const before = await index.repositoryChanges();
  const versions = new StorageVersions(index.db);
  const storeNow = options.storeNow ?? Date.now;
  const cache = new ContentCache();
  const names: string[] = [];
  for await (const name of repositoryNames(driver)) names.push(name);
  const done = (facts: StoredRepository) => {
    seen.add(facts.name);
    summary.repositories++;
    summary.manifests += facts.manifests.length;
    summary.tags += facts.tags.length;
    options.progress?.(summary);
  };
  // one batch written at a time, while the next is read
  let batch: Read[] = [];
  let rows = 0;
  let writing = Promise.resolve();
  const write = (repositories: Read[]) => {
    writing = writing.then(async () => {
      options.signal?.throwIfAborted();
      const changed = new Set(await index.replaceRepositories(repositories.map(({ facts }) => ({ facts, hasManifests: facts.hasManifests, expectChanges: before.get(facts.name) ?? 0 }))));
      const kept: { repository: string; version: string | undefined }[] = [];
      for (const { facts, fingerprint } of repositories) {
        // written to meanwhile: read again, alone, with its count read anew (its fingerprint is
        // not kept: the reconciler reads it on its next pass)
        const again = changed.has(facts.name);
        done(again ? await replaceFromStorage(driver, index, facts.name, { attempts: REBUILD_ATTEMPTS, cache, signal: options.signal }) : facts);
        kept.push({ repository: facts.name, version: again || !fingerprint ? undefined : keptVersion(fingerprint, facts.unstoredLinks) });
      }
      await versions.setMany(kept);
    });
    return writing;
  };
  // a big repository, alone and in parts; written to meanwhile: read again (its fingerprint not kept)
  const writeInParts = (read: Read) => {
    writing = writing.then(async () => {
      let { facts, fingerprint } = read;
      let expect = before.get(facts.name) ?? 0;
      for (let attempt = 1; !(await replaceInParts(index, facts, expect, options.signal)); attempt++) {
        if (attempt >= REBUILD_ATTEMPTS) throw new RepositoryChangedError(facts.name);
        fingerprint = undefined;
        expect = await index.changesOf(facts.name);
        facts = await readRepositoryFacts(driver, facts.name, cache);
      }
      done(facts);
      await versions.setMany([{ repository: facts.name, version: fingerprint && keptVersion(fingerprint, facts.unstoredLinks) }]);
    });
    return writing;
  };
  await forEach(names, REBUILD_REPOSITORIES, async (name) => {
    options.signal?.throwIfAborted();
    // begun before the read (a write landing after it changes the fingerprint the reconciler
    // compares with), finished with the tag links the read found (no second stat of each tag)
    const finish = await beginFingerprint(driver, name, storeNow);
    const facts = await readRepositoryFacts(driver, name, cache);
    const read = { facts, fingerprint: finish?.(facts.tagLinks) };
    const size = facts.manifests.length + facts.tags.length + facts.blobs.length;
    if (size > PART_ROWS) return writeInParts(read);
    batch.push(read);
    rows += size;
    if (batch.length < BATCH_REPOSITORIES && rows < BATCH_ROWS) return;
    const full = batch;
    batch = [];
    rows = 0;
    await write(full);
  });
  if (batch.length > 0) await write(batch);
  for (const [name, changes] of before) {
    if (seen.has(name)) continue;
    options.signal?.throwIfAborted();
    if (!(await index.dropRepository(name, changes))) continue;
    await versions.forget(name);
    summary.dropped++;
  }
  await index.dropUnlinkedBlobs();
  await index.setState(REBUILT_KEY, new Date((options.now ?? Date.now)()).toISOString());
  return summary;
}

/**
 * the repository's rows made what `facts` hold, part after part (parts.ts); false when the
 * request path wrote to it since `expectChanges` (the parts before stay: each holds rows storage
 * held, and the repository is read again and written whole, part after part)
 */
async function replaceInParts(index: MetadataIndex, facts: StoredRepository, expectChanges: number, signal?: AbortSignal): Promise<boolean> {
  for (const part of splitRepository(facts, facts.hasManifests, expectChanges, PART_ROWS)) {
    signal?.throwIfAborted();
    if ((await index.replaceRepositories([part])).length > 0) return false;
  }
  return true;
}
