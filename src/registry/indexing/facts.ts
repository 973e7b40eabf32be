/**
 * What storage says about one repository, in the index's records: the rebuild writes it, `berth
 * verify --index` compares it with the rows. Read as the garbage collector's graph reads a
 * repository (gc/graph.ts: revision links that name their own digest, tags' current links), plus
 * each manifest's content, berth.json and image configuration, and the `_layers` links with the
 * size of the content they name.
 */
import { unlessMissing, type StorageDriver } from '../../storage/driver.js';
import type { BlobLinkRecord, ManifestRecord, RepositoryFacts, TagRecord } from '../../metadata/records.js';
import type { Digest } from '../digest.js';
import { listDigests } from '../digest-dirs.js';
import { READS } from '../gc/graph.js';
import * as layout from '../layout.js';
import { linkDigest } from '../links.js';
import { detectMediaType } from '../manifests/detect.js';
import { forEach, mapLimited } from '../pool.js';
import { readRevisionMeta, type RevisionMeta } from '../revision-meta.js';
import type { ContentCache } from './content-cache.js';
import { describeManifest } from './describe.js';

/** a tag's current link as the fingerprint counts it (size and time undefined: no link) */
export interface TagLinkTime {
  tag: string;
  size?: number;
  modTimeMs?: number;
}

export interface StoredRepository extends RepositoryFacts {
  /** the repository has `_manifests` (the catalog lists it) */
  hasManifests: boolean;
  /** `_layers` links whose content is not stored (left out of `blobs`: they count once it is) */
  unstoredLinks: string[];
  /** tag directories without a readable `current/link` (left out of `tags`: they name no manifest, yet storage's tag list names them) */
  tagsWithoutLink: string[];
  /** every listed tag's current link, its size and time as read (the rebuild's fingerprint: fingerprint.ts) */
  tagLinks: TagLinkTime[];
}

/** `cache`: content shared by the repositories of one walk (the rebuild), read once */
export async function readRepositoryFacts(driver: StorageDriver, name: string, cache?: ContentCache): Promise<StoredRepository> {
  const [top, revisions, tagNames, layers] = await Promise.all([
    unlessMissing(driver.listNames(layout.repository(name))),
    listDigests(driver, (algorithm) => layout.manifestRevisionsDir(name, algorithm)),
    unlessMissing(driver.listNames(layout.tagsDir(name))),
    listDigests(driver, (algorithm) => layout.layersDir(name, algorithm)),
  ]);
  const hasManifests = top?.includes(layout.MANIFESTS_DIR_NAME) ?? false;
  const tagList = tagNames ?? [];
  // every link and berth.json of the repository in one go: per revision its link and berth.json,
  // per tag its current link (with its time: the tag's push), per `_layers` entry its link
  const files = await readFiles(driver, [
    ...revisions.digests.flatMap((digest) => [{ path: layout.manifestRevisionLink(name, digest) }, { path: layout.manifestRevisionMeta(name, digest) }]),
    ...tagList.map((tag) => ({ path: layout.tagCurrentLink(name, tag), timed: true })),
    ...layers.digests.map((digest) => ({ path: layout.layerLink(name, digest) })),
  ]);
  const tagsAt = revisions.digests.length * 2;
  const layersAt = tagsAt + tagList.length;

  const manifests: ManifestRecord[] = [];
  await forEach(revisions.digests.keys(), READS, async (i) => {
    const digest = revisions.digests[i];
    // as gc/graph.ts: a revision is one whose link names its own digest
    if (linkDigest(files[2 * i]?.content) !== digest) return;
    const record = await describeRevision(driver, name, digest, parseMeta(files[2 * i + 1]), files[2 * i]?.modTimeMs, cache);
    if (record) manifests.push(record);
  });
  const tags: TagRecord[] = [];
  const tagsWithoutLink: string[] = [];
  const tagLinks = tagList.map((tag, i): TagLinkTime => {
    const file = files[tagsAt + i];
    const digest = linkDigest(file?.content);
    if (digest && file?.modTimeMs !== undefined) tags.push({ name: tag, digest, pushed: new Date(file.modTimeMs).toISOString() });
    else tagsWithoutLink.push(tag);
    return { tag, size: file?.content.length, modTimeMs: file?.modTimeMs };
  });
  const blobs: BlobLinkRecord[] = [];
  const unstoredLinks: string[] = [];
  await forEach(layers.digests.keys(), READS, async (i) => {
    const digest = layers.digests[i];
    if (linkDigest(files[layersAt + i]?.content) !== digest) return;
    const stat = () => storedSize(driver, digest);
    const size = await (cache ? cache.size(digest, stat) : stat());
    if (size !== undefined) blobs.push({ digest, size });
    else unstoredLinks.push(digest);
  });
  return {
    name,
    hasManifests,
    manifests: manifests.sort((a, b) => byCodeUnit(a.digest, b.digest)),
    tags: tags.sort((a, b) => byCodeUnit(a.name, b.name)),
    blobs: blobs.sort((a, b) => byCodeUnit(a.digest, b.digest)),
    unstoredLinks: unstoredLinks.sort(byCodeUnit),
    tagsWithoutLink: tagsWithoutLink.sort(byCodeUnit),
    tagLinks,
  };
}

/** a file read by readFiles: its time only when asked for (or when the driver gave it anyway) */
interface ReadFile {
  content: Buffer;
  modTimeMs?: number;
}

/** paths per call of the driver's readSmallFiles (a repository of 100,000 tags takes many), and calls in flight */
const SMALL_FILES_BATCH = 512;
const SMALL_FILES_CALLS = 2;

/**
 * small files, in order (undefined: missing): through the driver's readSmallFiles in batches
 * where it has it (the filesystem: worker threads; S3: GETs in flight, the time from each
 * answer), else a getContent each and a stat for those `timed`, READS at a time
 */
async function readFiles(driver: StorageDriver, entries: { path: string; timed?: boolean }[]): Promise<(ReadFile | undefined)[]> {
  if (driver.readSmallFiles) {
    const batches: { path: string }[][] = [];
    for (let i = 0; i < entries.length; i += SMALL_FILES_BATCH) batches.push(entries.slice(i, i + SMALL_FILES_BATCH));
    return (await mapLimited(batches, SMALL_FILES_CALLS, (batch) => driver.readSmallFiles!(batch.map((e) => e.path)))).flat();
  }
  return mapLimited(entries, READS, async ({ path, timed }) => {
    const [content, info] = await Promise.all([unlessMissing(driver.getContent(path)), timed ? unlessMissing(driver.stat(path)) : undefined]);
    if (!content || (timed && !info)) return undefined;
    return { content, modTimeMs: info?.modTime.getTime() };
  });
}

/** berth.json's record; malformed: as if absent */
function parseMeta(file: ReadFile | undefined): RevisionMeta | undefined {
  try {
    return file && (JSON.parse(file.content.toString()) as RevisionMeta);
  } catch {
    return undefined;
  }
}

/** the size of a blob's stored content; undefined when none is. Content online collection moved to its trash still counts: a request takes it back (gc/touch.ts) */
export async function storedSize(driver: StorageDriver, digest: Digest): Promise<number | undefined> {
  return (await unlessMissing(driver.stat(layout.blobData(digest))))?.size ?? (await unlessMissing(driver.stat(layout.gcTrashData(digest))))?.size;
}

/** the revision as served (the signed bytes of a signed first-generation manifest); undefined when its content is gone */
export async function readManifest(driver: StorageDriver, name: string, digest: Digest, cache?: ContentCache): Promise<ManifestRecord | undefined> {
  const meta = await readRevisionMeta(driver, name, digest).catch(() => undefined); // malformed: as if absent
  return describeRevision(driver, name, digest, meta, undefined, cache);
}

/**
 * the revision's record from its berth.json (`meta`) and content; `linkTimeMs`: its link's time
 * if known (the push time of a revision written by Distribution, which has no berth.json)
 */
async function describeRevision(driver: StorageDriver, name: string, digest: Digest, meta: RevisionMeta | undefined, linkTimeMs: number | undefined, cache?: ContentCache): Promise<ManifestRecord | undefined> {
  const stored = meta?.signed ?? digest;
  const read = () => unlessMissing(driver.getContent(layout.blobData(stored)));
  const content = await (cache ? cache.read(stored, read) : read());
  if (!content) return undefined;
  const linkTime = async () => (linkTimeMs !== undefined ? new Date(linkTimeMs) : (await unlessMissing(driver.stat(layout.manifestRevisionLink(name, digest))))?.modTime);
  const pushed = meta?.pushed ?? (await linkTime())?.toISOString() ?? new Date(0).toISOString();
  return describeManifest(driver, { repository: name, digest, mediaType: meta?.mediaType ?? detectMediaType(content), content, pushed }, cache);
}

function byCodeUnit(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}
