/**
 * The sweep. Per repository, right after its mark (nothing another repository keeps lives in it):
 * the manifests not kept (their revision directory with berth.json, their entries in tag indexes
 * and in berth's referrers index), the `_layers` links no kept manifest of the repository uses,
 * referrers-index entries and revision side files of manifests that are gone. Then, once every
 * repository is marked, the blobs under `blobs/` that nothing marked.
 *
 * Links go before the content they point at, so a collection that stops half way leaves no link
 * to a missing blob. Uploads in progress (`_uploads`) are not touched: their data is not under
 * `blobs/` until it is committed.
 */
import { unlessMissing, type StorageDriver } from '../../storage/driver.js';
import { forEachStoredBlob, listDigests } from '../digest-dirs.js';
import * as layout from '../layout.js';
import { keepRepository } from '../repositories.js';
import { READS, type RepositoryGraph } from './graph.js';
import type { RepositoryMark } from './mark.js';
import { forEach } from '../pool.js';

export interface SweepOptions {
  dryRun: boolean;
  report: (line: string) => void;
  /** keep blobs and `_layers` links modified after this time (ms since the epoch): the proxy's expiry sweeps only what is older than its TTL */
  keepModifiedAfter?: number;
  /** how far the blob sweep got: unmarked blobs looked at */
  blobsLookedAt?: (done: number) => void;
}

export interface RepositorySweep {
  manifests: number;
  layerLinks: number;
  /** the digests whose `_layers` links went (or, in a dry run, would go) */
  unlinked: string[];
  /** manifests kept and `_layers` links left */
  manifestsLeft: number;
  linksLeft: number;
}

export async function sweepRepository(driver: StorageDriver, graph: RepositoryGraph, mark: RepositoryMark, options: SweepOptions): Promise<RepositorySweep> {
  const { name } = graph;
  const remove = async (path: string, what: string) => {
    options.report(`${name}: ${what} eligible for deletion: ${path}`);
    if (!options.dryRun) await unlessMissing(driver.delete(path));
  };

  if (mark.unkept.length > 0) {
    // the repository stays known when its last manifest goes, as after a delete through the API
    if (!options.dryRun) await keepRepository(driver, name);
    const unkept = new Set<string>(mark.unkept);
    for (const digest of mark.unkept) options.report(`${name}: manifest eligible for deletion: ${digest}`);
    await forEach(graph.tags.keys(), READS, async (tag) => {
      const { digests } = await listDigests(driver, (algorithm) => layout.tagIndexDir(name, tag, algorithm));
      for (const digest of digests) {
        if (unkept.has(digest)) await remove(layout.tagIndexEntryDir(name, tag, digest), 'tag index entry');
      }
    });
    await forEach(mark.unkept, READS, (digest) => remove(layout.manifestRevisionDir(name, digest), 'revision'));
  }
  for (const dir of graph.leftovers) await remove(dir, 'revision side files');
  await sweepReferrers(driver, name, mark.kept, remove);

  const links = await listDigests(driver, (algorithm) => layout.layersDir(name, algorithm));
  let unused = links.digests.filter((digest) => !mark.used.has(digest));
  const after = options.keepModifiedAfter;
  if (after !== undefined) {
    const young = new Set<string>();
    await forEach(unused, READS, async (digest) => {
      const info = await unlessMissing(driver.stat(layout.layerLink(name, digest)));
      if (info && info.modTime.getTime() > after) young.add(digest);
    });
    unused = unused.filter((digest) => !young.has(digest));
  }
  await forEach(unused, READS, (digest) => remove(layout.layerLinkDir(name, digest), 'layer link'));
  return { manifests: mark.unkept.length, layerLinks: unused.length, unlinked: unused, manifestsLeft: mark.kept.size, linksLeft: links.digests.length - unused.length };
}

/** berth's referrers index: the entries of referrers that are not kept (a subject with none left goes whole) */
async function sweepReferrers(driver: StorageDriver, name: string, kept: Set<string>, remove: (path: string, what: string) => Promise<void>): Promise<void> {
  const { digests: subjects } = await listDigests(driver, (algorithm) => layout.referrerSubjectsDir(name, algorithm));
  await forEach(subjects, READS, async (subject) => {
    const { digests: entries } = await listDigests(driver, (algorithm) => layout.referrerEntriesDir(name, subject, algorithm));
    const gone = entries.filter((digest) => !kept.has(digest));
    if (gone.length > 0 && gone.length === entries.length) return remove(layout.referrersDir(name, subject), 'referrers index');
    for (const digest of gone) await remove(layout.referrerDir(name, subject, digest), 'referrers index entry');
  });
}

export interface BlobSweep {
  blobs: number;
  bytes: number;
}

/** every blob under `blobs/` whose digest is not in `marked` */
export async function sweepBlobs(driver: StorageDriver, marked: Set<string>, options: SweepOptions): Promise<BlobSweep> {
  const result: BlobSweep = { blobs: 0, bytes: 0 };
  let lookedAt = 0;
  await forEachStoredBlob(driver, (digest) => marked.has(digest), READS, async (digest) => {
    options.blobsLookedAt?.(++lookedAt);
    // a directory without data is no blob (Distribution enumerates blobs by their data too)
    const info = await unlessMissing(driver.stat(layout.blobData(digest)));
    if (!info || (options.keepModifiedAfter !== undefined && info.modTime.getTime() > options.keepModifiedAfter)) return;
    options.report(`blob eligible for deletion: ${digest} (${info.size} bytes)`);
    result.blobs++;
    result.bytes += info.size;
    if (!options.dryRun) await unlessMissing(driver.delete(layout.blobDir(digest)));
  });
  return result;
}
