/**
 * The pull-through cache's TTL expiry (`proxy.ttl`): one pass removes the cached manifests not
 * fetched or pulled for longer than the TTL, the tags that name them, and then the blobs that no
 * kept manifest of any repository references and that are older than the TTL. See README.md.
 */
import type { StorageDriver } from '../../storage/driver.js';
import { unlessMissing } from '../../storage/driver.js';
import { lastUsed, readActivity } from '../activity.js';
import type { Digest } from '../digest.js';
import { listDigests } from '../digest-dirs.js';
import { readGraph, READS, type RepositoryGraph } from '../gc/graph.js';
import { REPOSITORIES_AT_ONCE } from '../gc/index.js';
import { markRepository } from '../gc/mark.js';
import { forEach } from '../pool.js';
import { repositoryNames } from '../gc/repositories.js';
import { sweepBlobs, sweepRepository } from '../gc/sweep.js';
import * as layout from '../layout.js';
import { reindexRepository } from '../indexing/reindex.js';
import type { RepositorySink } from '../indexing/sink.js';

export interface ExpiryOptions {
  /**
   * the TTL of a repository's cached content in ms; 0 or undefined: not expired (a repository
   * outside the cache, whose content and `_layers` links all count as kept)
   */
  ttlOf(name: string): number | undefined;
  now: number;
  dryRun?: boolean;
  /** one line per thing removed */
  report?: (line: string) => void;
  /** stops the pass between repositories (shutdown) */
  signal?: AbortSignal;
  /** the metadata index, told of the repositories this pass changed */
  index?: RepositorySink;
  /** tags that never expire (immutable tags, src/policies/): true to keep the tag and what it reaches */
  fixedTag?(repository: string, tag: string): boolean;
}

export interface ExpirySummary {
  repositories: number;
  manifestsExpired: number;
  tagsRemoved: number;
  blobsDeleted: number;
  bytesFreed: number;
}

export async function expireCache(driver: StorageDriver, options: ExpiryOptions): Promise<ExpirySummary> {
  const report = options.report ?? (() => {});
  const dryRun = options.dryRun ?? false;
  const marked = new Set<string>();
  const summary: ExpirySummary = { repositories: 0, manifestsExpired: 0, tagsRemoved: 0, blobsDeleted: 0, bytesFreed: 0 };
  let longestTTL = 0;
  await forEach(repositoryNames(driver), REPOSITORIES_AT_ONCE, async (name) => {
    options.signal?.throwIfAborted();
    summary.repositories++;
    const graph = await readGraph(driver, name);
    const ttl = options.ttlOf(name) ?? 0;
    if (ttl <= 0) {
      markRepository(graph, false, marked, () => {});
      // blobs linked but not yet named by a manifest: a push in progress
      for (const digest of (await listDigests(driver, (algorithm) => layout.layersDir(name, algorithm))).digests) marked.add(digest);
      return;
    }
    longestTTL = Math.max(longestTTL, ttl);
    const fixed = [...graph.tags].filter(([tag]) => options.fixedTag?.(name, tag)).map(([, digest]) => digest);
    const fresh = [...(await freshManifests(driver, graph, options.now - ttl)), ...fixed];
    // the fresh manifests are the roots: with their children and referrers, they are kept
    const mark = markRepository({ ...graph, tags: new Map(fresh.map((digest) => [digest, digest])) }, true, marked, () => {});
    const staleTags = [...graph.tags].filter(([, digest]) => !mark.kept.has(digest)).map(([tag]) => tag);
    for (const tag of staleTags) {
      report(`${name}: tag ${tag} expired`);
      if (!dryRun) await unlessMissing(driver.delete(layout.tagDir(name, tag)));
    }
    // revision directories without a link may be a fetch in progress: left to garbage collection
    const swept = await sweepRepository(driver, { ...graph, leftovers: [] }, mark, { dryRun, report, keepModifiedAfter: options.now - ttl });
    summary.manifestsExpired += swept.manifests;
    summary.tagsRemoved += staleTags.length;
    if (options.index && !dryRun && swept.manifests + swept.layerLinks + staleTags.length > 0) await reindexRepository(driver, options.index, name);
  });
  options.signal?.throwIfAborted();
  if (longestTTL > 0) {
    // a blob young enough may belong to a manifest fetched during this pass
    const blobs = await sweepBlobs(driver, marked, { dryRun, report, keepModifiedAfter: options.now - longestTTL });
    summary.blobsDeleted = blobs.blobs;
    summary.bytesFreed = blobs.bytes;
  }
  return summary;
}

/** the manifests of `graph` pushed, fetched or pulled after `since` */
async function freshManifests(driver: StorageDriver, graph: RepositoryGraph, since: number): Promise<Digest[]> {
  const fresh: Digest[] = [];
  await forEach(graph.manifests.keys(), READS, async (digest) => {
    const used = lastUsed(await readActivity(driver, graph.name, digest as Digest));
    if (used === undefined || used > since) fresh.push(digest as Digest);
  });
  return fresh;
}
