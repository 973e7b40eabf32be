/**
 * Garbage collection inside a running registry (storage.maintenance.gc). The same mark as the
 * offline command; the sweep differs because pushes go on meanwhile (docs/decisions.md, "Garbage
 * collection (online)"):
 *
 * - The collection's start T0 is the modification time of a marker it writes (the store's clock).
 * - A blob is a candidate when nothing marked it, its data is older than T0 - delay, and its use
 *   record (touch.ts) is older than that too or absent.
 * - A candidate's data is moved to the trash, then its use record is read again: if a request
 *   recorded a use meanwhile, the data goes back. A request records the use before it checks the
 *   content, so either the collector sees the record or the request sees the content gone (and
 *   takes it back from the trash, or answers BLOB_UNKNOWN).
 * - The trash is emptied by a later collection: entries older than the delay, still unmarked and
 *   unused; the others go back under blobs/.
 *
 * With `deleteUntagged`, manifests no tag reaches (untagged.ts) go first, by the same protocol,
 * when their revision and last use are older than T0 - delay; the blobs only they kept are then
 * unmarked. Tags and `_layers` links stay.
 */
import { randomUUID } from 'node:crypto';
import { PathNotFoundError, unlessMissing, type FileInfo, type StorageDriver } from '../../storage/driver.js';
import { digestOfHex, type Digest } from '../digest.js';
import { storedBlobData } from '../digest-dirs.js';
import * as layout from '../layout.js';
import { readGraph } from './graph.js';
import { markRepository } from './mark.js';
import { forEach } from '../pool.js';
import { repositoryNames } from './repositories.js';
import { readTouch, type TouchRecord } from './touch.js';
import { collectUntagged } from './untagged.js';
import { reindexLinking, reindexRepository } from '../indexing/reindex.js';
import type { RepositorySink } from '../indexing/sink.js';

/*
 * How much a pass keeps in flight. Every unit is a chain of requests one after another (a
 * repository's graph, a candidate blob's reads and move), so these bound the requests in flight:
 * at most 16 repositories (each up to graph.ts's READS reads) while marking, then 32 blobs plus 16
 * listings of blobs/ ahead while sweeping. On S3 the round trip, not the CPU, sets a pass's pace
 * (docs/performance.md, "Online garbage collection at scale on S3").
 */
const REPOSITORIES_AT_ONCE = 16;
const BLOBS_AT_ONCE = 32;
const BLOB_LISTINGS_AHEAD = 16;
/** trash files deleted for good per deleteFiles call (S3's DeleteObjects takes 1,000 keys) */
const DELETES_AT_ONCE = 1000;

export interface OnlineOptions {
  /** how long a blob's data or last use keeps it from being collected */
  delayMs: number;
  /** report what would be collected, move and delete nothing */
  dryRun: boolean;
  /** also delete the manifests no tag reaches (untagged.ts) */
  deleteUntagged?: boolean;
  report?: (line: string) => void;
  /** how far the pass got, as the offline collection's (the command collects V8's heap as it grows from here) */
  progress?: (what: string, done: number) => void;
  now?: () => number;
  /** the metadata index, told of the repositories whose manifests or blob links this collection changed */
  index?: RepositorySink;
}

export interface OnlineSummary {
  repositories: number;
  marked: number;
  /** blobs moved to the trash by this collection (deleted for good by a later one) */
  blobsTrashed: number;
  bytesTrashed: number;
  /** trash entries of earlier collections deleted for good */
  blobsPurged: number;
  bytesFreed: number;
  /** blobs put back: used while being collected, or referenced again */
  blobsRestored: number;
  /** unmarked blobs spared because they are younger than the delay or were used within it */
  blobsSpared: number;
  /** untagged manifests deleted (deleteUntagged) */
  manifestsDeleted: number;
  /** untagged manifests put back: used while being deleted */
  manifestsRestored: number;
  durationMs: number;
}

export async function collectOnline(driver: StorageDriver, options: OnlineOptions): Promise<OnlineSummary> {
  const now = options.now ?? Date.now;
  const started = now();
  const report = options.report ?? (() => {});
  const summary: OnlineSummary = { repositories: 0, marked: 0, blobsTrashed: 0, bytesTrashed: 0, blobsPurged: 0, bytesFreed: 0, blobsRestored: 0, blobsSpared: 0, manifestsDeleted: 0, manifestsRestored: 0, durationMs: 0 };

  await driver.putContent(layout.GC_MARK_STARTED, Buffer.from(randomUUID()));
  const horizon = (await driver.stat(layout.GC_MARK_STARTED)).modTime.getTime() - options.delayMs;
  const recent = (touch: TouchRecord | undefined) => touch !== undefined && touch.modTime.getTime() >= horizon;

  const marked = new Set<string>();
  const untaggedPass = { spare: (_: Digest, link: FileInfo, touch: TouchRecord | undefined) => link.modTime.getTime() >= horizon || recent(touch), dryRun: options.dryRun };
  await forEach(repositoryNames(driver), REPOSITORIES_AT_ONCE, async (name) => {
    const graph = await readGraph(driver, name);
    options.progress?.('repositories marked', ++summary.repositories);
    if (!options.deleteUntagged) {
      markRepository(graph, false, marked, report);
      return;
    }
    const untagged = await collectUntagged(driver, graph, untaggedPass);
    summary.manifestsDeleted += untagged.deleted.length;
    summary.manifestsRestored += untagged.restored.length;
    for (const digest of untagged.deleted) report(`${name}: untagged manifest ${options.dryRun ? 'eligible for deletion' : 'deleted'}: ${digest}`);
    for (const digest of untagged.restored) report(`${name}: untagged manifest used meanwhile, restored: ${digest}`);
    markRepository(graph, true, marked, report, untagged.kept);
    if (options.index && !options.dryRun && untagged.deleted.length + untagged.restored.length > 0) await reindexRepository(driver, options.index, name);
  });
  summary.marked = marked.size;

  // blobs deleted from the trash for good: the `_layers` links to them stay, and the index counts
  // a link only to content that is there (in blobs/ or, still recoverable, in the trash: facts.ts)
  const purged = new Set<string>();
  const pass = { marked, horizon, recent, dryRun: options.dryRun, report, summary, purged, progress: options.progress ?? (() => {}) };
  await emptyTrash(driver, pass);
  await sweepIntoTrash(driver, pass);
  if (options.index && purged.size > 0) await reindexLinking(driver, options.index, purged);
  summary.durationMs = now() - started;
  return summary;
}

interface Pass {
  marked: Set<string>;
  /** T0 - delay, on the store's clock */
  horizon: number;
  recent(touch: TouchRecord | undefined): boolean;
  dryRun: boolean;
  report: (line: string) => void;
  summary: OnlineSummary;
  /** digests whose content this collection deleted from the trash for good */
  purged: Set<string>;
  progress: (what: string, done: number) => void;
}

async function sweepIntoTrash(driver: StorageDriver, pass: Pass): Promise<void> {
  const { summary, report } = pass;
  let lookedAt = 0;
  await forEach(storedBlobData(driver, (digest) => pass.marked.has(digest), BLOB_LISTINGS_AHEAD), BLOBS_AT_ONCE, async ({ digest, data }) => {
    pass.progress('unmarked blobs looked at', ++lookedAt);
    // the listing's time, when it told one: a writer that records no use (Distribution) is protected by the trash
    const info = data ?? (await unlessMissing(driver.stat(layout.blobData(digest))));
    if (!info) return;
    const before = await readTouch(driver, digest);
    if (info.modTime.getTime() >= pass.horizon || pass.recent(before)) {
      summary.blobsSpared++;
      return;
    }
    report(`blob eligible for deletion: ${digest} (${info.size} bytes)`);
    if (pass.dryRun) {
      summary.blobsTrashed++;
      summary.bytesTrashed += info.size;
      return;
    }
    if (!(await moveIfThere(driver, layout.blobData(digest), layout.gcTrashData(digest)))) return;
    // when it went to the trash: the moved data's own time where a move gives it one
    if (!driver.moveSetsModTime) await driver.putContent(trashedMarker(digest), Buffer.alloc(0));
    const after = await readTouch(driver, digest);
    if (after && after.token !== before?.token) {
      // a request recorded a use while the data was being moved: it may rely on it
      await moveIfThere(driver, layout.gcTrashData(digest), layout.blobData(digest));
      summary.blobsRestored++;
      report(`blob used meanwhile, restored: ${digest}`);
      return;
    }
    summary.blobsTrashed++;
    summary.bytesTrashed += info.size;
  });
}

/** the trash of earlier collections: deleted for good, or back under blobs/ when marked or used */
async function emptyTrash(driver: StorageDriver, pass: Pass): Promise<void> {
  const { summary, report } = pass;
  let lookedAt = 0;
  const deleting = new TrashDeletions(driver);
  await forEach(await trashEntries(driver), BLOBS_AT_ONCE, async (entry) => {
    pass.progress('trash entries looked at', ++lookedAt);
    const { digest } = entry;
    const data = await entry.data();
    if (!data) {
      if (!pass.dryRun) await deleting.remove(entry); // taken back already
      return;
    }
    if (pass.marked.has(digest) || pass.recent(await readTouch(driver, digest))) {
      report(`blob in use again, restored from the trash: ${digest}`);
      if (pass.dryRun) return;
      if ((await unlessMissing(driver.stat(layout.blobData(digest)))) === undefined) await moveIfThere(driver, layout.gcTrashData(digest), layout.blobData(digest));
      await unlessMissing(driver.delete(layout.gcTrashDir(digest)));
      summary.blobsRestored++;
      return;
    }
    const trashedAt = (await entry.trashed()) ?? (driver.moveSetsModTime ? data : undefined);
    if (!trashedAt) {
      // moved, then the collector stopped before it wrote when: from now on
      if (!pass.dryRun) await driver.putContent(trashedMarker(digest), Buffer.alloc(0));
      return;
    }
    if (trashedAt.modTime.getTime() >= pass.horizon) return; // trashed within the delay: a later collection
    report(`blob deleted from the trash: ${digest} (${data.size} bytes)`);
    summary.blobsPurged++;
    summary.bytesFreed += data.size;
    if (pass.dryRun) return;
    await deleting.remove(entry);
    pass.purged.add(digest);
  });
  await deleting.flush();
}

/** one trash entry: its data and its `trashed` marker (undefined: missing), each read once */
interface TrashEntry {
  digest: Digest;
  data(): Promise<FileInfo | undefined>;
  trashed(): Promise<FileInfo | undefined>;
  /** the files the listing found in it (listFiles), for deleteFiles */
  files?: string[];
}

/**
 * the entries of the trash: from one listing of every file in it where the driver lists files
 * (S3: a request per 1,000 files, and no HEAD of an entry's data and marker after), otherwise its
 * names, each entry's files stat'ed when asked for
 */
async function trashEntries(driver: StorageDriver): Promise<TrashEntry[]> {
  if (!driver.listFiles) {
    const names = (await unlessMissing(driver.listNames(layout.GC_TRASH))) ?? [];
    return names.flatMap((hex) => {
      const digest = digestOfHex(hex);
      if (!digest) return []; // not berth's
      return [{ digest, data: () => unlessMissing(driver.stat(layout.gcTrashData(digest))), trashed: () => unlessMissing(driver.stat(trashedMarker(digest))) }];
    });
  }
  const byHex = new Map<string, { digest: Digest; data?: FileInfo; trashed?: FileInfo; files: string[] }>();
  for (const file of await driver.listFiles(layout.GC_TRASH)) {
    const hex = file.path.slice(layout.GC_TRASH.length + 1).split('/')[0];
    const digest = digestOfHex(hex);
    if (!digest) continue; // not berth's
    const entry = byHex.get(hex) ?? { digest, files: [] };
    byHex.set(hex, entry);
    entry.files.push(file.path);
    if (file.path === layout.gcTrashData(digest)) entry.data = file;
    else if (file.path === trashedMarker(digest)) entry.trashed = file;
  }
  return [...byHex.values()].map(({ digest, data, trashed, files }) => ({ digest, data: async () => data, trashed: async () => trashed, files }));
}

/** trash entries deleted for good: a DeleteObjects per 1,000 files where the driver has deleteFiles, else a delete of each entry */
class TrashDeletions {
  private readonly paths: string[] = [];

  constructor(private readonly driver: StorageDriver) {}

  async remove(entry: TrashEntry): Promise<void> {
    if (!this.driver.deleteFiles || !entry.files) {
      await unlessMissing(this.driver.delete(layout.gcTrashDir(entry.digest)));
      return;
    }
    this.paths.push(...entry.files);
    if (this.paths.length >= DELETES_AT_ONCE) await this.flush();
  }

  async flush(): Promise<void> {
    const batch = this.paths.splice(0);
    if (batch.length > 0) await this.driver.deleteFiles!(batch);
  }
}

/**
 * when the blob went to the trash: its modification time. Written on a driver whose move keeps the
 * source's time; on one that stamps the moved data (moveSetsModTime) only for an entry found
 * without a time of its own
 */
const TRASHED = 'trashed';
function trashedMarker(digest: Digest): string {
  return `${layout.gcTrashDir(digest)}/${TRASHED}`;
}

/** false when the source is gone (another instance or a request moved it first) */
async function moveIfThere(driver: StorageDriver, from: string, to: string): Promise<boolean> {
  try {
    await driver.move(from, to);
    return true;
  } catch (err) {
    if (err instanceof PathNotFoundError) return false;
    throw err;
  }
}
