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
import { linksTo, readLink } from '../links.js';
import { detectMediaType } from '../manifests/detect.js';
import { forEach } from '../pool.js';
import { readRevisionMeta } from '../revision-meta.js';
import type { ContentCache } from './content-cache.js';
import { describeManifest } from './describe.js';

export interface StoredRepository extends RepositoryFacts {
  /** the repository has `_manifests` (the catalog lists it) */
  hasManifests: boolean;
  /** `_layers` links whose content is not stored (left out of `blobs`: they count once it is) */
  unstoredLinks: string[];
  /** tag directories without a readable `current/link` (left out of `tags`: they name no manifest, yet storage's tag list names them) */
  tagsWithoutLink: string[];
}

/** `cache`: content shared by the repositories of one walk (the rebuild), read once */
export async function readRepositoryFacts(driver: StorageDriver, name: string, cache?: ContentCache): Promise<StoredRepository> {
  const hasManifests = (await unlessMissing(driver.listNames(layout.repository(name))))?.includes(layout.MANIFESTS_DIR_NAME) ?? false;
  const manifests: ManifestRecord[] = [];
  const revisions = await listDigests(driver, (algorithm) => layout.manifestRevisionsDir(name, algorithm));
  await forEach(revisions.digests, READS, async (digest) => {
    // as gc/graph.ts: a revision is one whose link names its own digest (read beside the manifest:
    // a link naming another digest is rare, and waiting for it first doubles the round trips)
    const [target, record] = await Promise.all([readLink(driver, layout.manifestRevisionLink(name, digest)), readManifest(driver, name, digest, cache)]);
    if (target === digest && record) manifests.push(record);
  });
  const tags: TagRecord[] = [];
  const tagsWithoutLink: string[] = [];
  await forEach((await unlessMissing(driver.listNames(layout.tagsDir(name)))) ?? [], READS, async (tag) => {
    const [digest, stat] = await Promise.all([readLink(driver, layout.tagCurrentLink(name, tag)), unlessMissing(driver.stat(layout.tagCurrentLink(name, tag)))]);
    if (digest && stat) tags.push({ name: tag, digest, pushed: stat.modTime.toISOString() });
    else tagsWithoutLink.push(tag);
  });
  const blobs: BlobLinkRecord[] = [];
  const unstoredLinks: string[] = [];
  const layers = await listDigests(driver, (algorithm) => layout.layersDir(name, algorithm));
  await forEach(layers.digests, READS, async (digest) => {
    if (!(await linksTo(driver, layout.layerLink(name, digest), digest))) return;
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
  };
}

/** the size of a blob's stored content; undefined when none is. Content online collection moved to its trash still counts: a request takes it back (gc/touch.ts) */
export async function storedSize(driver: StorageDriver, digest: Digest): Promise<number | undefined> {
  return (await unlessMissing(driver.stat(layout.blobData(digest))))?.size ?? (await unlessMissing(driver.stat(layout.gcTrashData(digest))))?.size;
}

/** the revision as served (the signed bytes of a signed first-generation manifest); undefined when its content is gone */
export async function readManifest(driver: StorageDriver, name: string, digest: Digest, cache?: ContentCache): Promise<ManifestRecord | undefined> {
  const meta = await readRevisionMeta(driver, name, digest).catch(() => undefined); // malformed: as if absent
  const stored = meta?.signed ?? digest;
  const read = () => unlessMissing(driver.getContent(layout.blobData(stored)));
  const content = await (cache ? cache.read(stored, read) : read());
  if (!content) return undefined;
  // written by Distribution (no berth.json): the revision link's time
  const pushed = meta?.pushed ?? (await unlessMissing(driver.stat(layout.manifestRevisionLink(name, digest))))?.modTime.toISOString() ?? new Date(0).toISOString();
  return describeManifest(driver, { repository: name, digest, mediaType: meta?.mediaType ?? detectMediaType(content), content, pushed }, cache);
}

function byCodeUnit(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}
