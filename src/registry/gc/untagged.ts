/**
 * Deletion of untagged manifests while the registry serves (storage.maintenance.gc.deleteuntagged,
 * and retention's untaggedolderthan: ../retention/), with the same
 * two-sided protocol as the blob sweep (docs/decisions.md, "Garbage collection (online)"): a
 * manifest PUT records the use of its own digest and of every child before it checks them
 * (ManifestStore.put, touch.ts); the collector removes the revision, then reads the record again
 * and puts the revision back, as it was, if a use was recorded meanwhile. Either the PUT sees the
 * revision gone (and answers MANIFEST_UNKNOWN, or writes the revision again itself), or the
 * collector sees the use.
 *
 * Each deletion is checked and done under a deletion marker (deleting.ts), so a PUT that rewrote the
 * revision after the check waits and reads it back before its 201.
 *
 * Removing a revision takes its directory (link, berth.json, berth.pulled) and its entry in the
 * subject's referrers index; the tags are left alone (none pointed at it when the graph was read;
 * one written since comes with a recorded use, which restores the revision).
 *
 * A manifest that stays (too young, used, or restored) keeps what it reaches, as a tag would: an
 * index's children, a subject's referrers. So parents are decided before their children.
 */
import { unlessMissing, type FileInfo, type StorageDriver } from '../../storage/driver.js';
import type { Digest } from '../digest.js';
import { isDigest } from '../digest.js';
import * as layout from '../layout.js';
import { keepRepository } from '../repositories.js';
import type { RepositoryGraph } from './graph.js';
import { whileMarked } from './deleting.js';
import { markRepository } from './mark.js';
import { readTouch, type TouchRecord } from './touch.js';

/** 'gone': deleted meanwhile by someone else */
export type UntaggedOutcome = 'deleted' | 'spared' | 'restored' | 'gone';

export interface UntaggedPass {
  /** true when the revision stays: its link (pushed) or its last recorded use is too recent */
  spare(digest: Digest, link: FileInfo, touch: TouchRecord | undefined): boolean | Promise<boolean>;
  dryRun: boolean;
}

/** the files of a directory and their content (a revision's or a referrers entry's: a few small files) */
type Snapshot = [path: string, content: Buffer][];

export interface UntaggedResult {
  deleted: Digest[];
  restored: Digest[];
  /** untagged manifests that stay (too young, used, restored), for the mark */
  kept: Digest[];
}

/** deletes the repository's untagged manifests that may go, parents before children */
export async function collectUntagged(driver: StorageDriver, graph: RepositoryGraph, pass: UntaggedPass): Promise<UntaggedResult> {
  const result: UntaggedResult = { deleted: [], restored: [], kept: [] };
  const reached = () => markRepository(graph, true, new Set(), () => {}, result.kept).kept;
  let kept = reached();
  for (const digest of parentsFirst(graph, markRepository(graph, true, new Set(), () => {}).unkept)) {
    if (kept.has(digest)) continue; // reached from one that stays
    const outcome = await deleteUntagged(driver, graph.name, digest, graph.manifests.get(digest)?.subject, pass);
    if (outcome === 'deleted' || outcome === 'gone') {
      if (outcome === 'deleted') result.deleted.push(digest);
      continue;
    }
    if (outcome === 'restored') result.restored.push(digest);
    result.kept.push(digest);
    kept = reached();
  }
  return result;
}

/** `digests` ordered so that an index comes before its children and a subject before its referrers */
function parentsFirst(graph: RepositoryGraph, digests: readonly Digest[]): Digest[] {
  const among = new Set<string>(digests);
  const referrers = new Map<string, string[]>();
  for (const node of graph.manifests.values()) if (node.subject !== undefined) referrers.set(node.subject, [...(referrers.get(node.subject) ?? []), node.digest]);
  const below = (digest: string): string[] => [...(graph.manifests.get(digest)?.children ?? []), ...(referrers.get(digest) ?? [])].filter((d) => among.has(d));
  const parents = new Map<string, number>(digests.map((d) => [d, 0]));
  for (const digest of digests) for (const child of below(digest)) parents.set(child, parents.get(child)! + 1);
  const ready = digests.filter((d) => parents.get(d) === 0);
  const ordered: Digest[] = [];
  for (let digest = ready.shift(); digest !== undefined; digest = ready.shift()) {
    ordered.push(digest);
    for (const child of below(digest)) {
      const left = parents.get(child)! - 1;
      parents.set(child, left);
      if (left === 0) ready.push(child as Digest);
    }
  }
  // a cycle (digests cannot form one; a corrupt store might): the rest in any order
  return [...ordered, ...digests.filter((d) => !ordered.includes(d))];
}

async function deleteUntagged(driver: StorageDriver, name: string, digest: Digest, subject: string | undefined, pass: UntaggedPass): Promise<UntaggedOutcome> {
  if (pass.dryRun) {
    const link = await unlessMissing(driver.stat(layout.manifestRevisionLink(name, digest)));
    if (!link) return 'gone';
    return (await pass.spare(digest, link, await readTouch(driver, digest))) ? 'spared' : 'deleted';
  }
  // checked under a deletion marker: a PUT that wrote before the check is seen by it, one that
  // wrote after waits for the marker and reads back what it wrote (deleting.ts)
  return whileMarked(driver, name, async (marked) => {
    const link = await unlessMissing(driver.stat(layout.manifestRevisionLink(name, digest)));
    if (!link) return 'gone'; // deleted meanwhile (a DELETE, another collector)
    const before = await readTouch(driver, digest);
    if (await pass.spare(digest, link, before)) return 'spared';

    const dirs = [layout.manifestRevisionDir(name, digest), ...(subject && isDigest(subject) ? [layout.referrerDir(name, subject, digest)] : [])];
    const snapshots = await Promise.all(dirs.map((dir) => snapshot(driver, dir)));
    await keepRepository(driver, name);
    if (!marked.fresh()) return 'spared'; // too slow to be sure no PUT has given up waiting: a later pass
    for (const dir of dirs) await unlessMissing(driver.delete(dir));

    const after = await readTouch(driver, digest);
    if (after && after.token !== before?.token) {
      // a PUT recorded a use while the revision went: it may rely on it
      for (const [path, content] of snapshots.flat()) await driver.putContent(path, content);
      return 'restored';
    }
    return 'deleted';
  });
}

async function snapshot(driver: StorageDriver, dir: string): Promise<Snapshot> {
  const files = (await unlessMissing(driver.list(dir))) ?? [];
  const read = await Promise.all(files.map(async (path): Promise<[string, Buffer | undefined]> => [path, await unlessMissing(driver.getContent(path))]));
  return read.filter((entry): entry is [string, Buffer] => entry[1] !== undefined);
}
