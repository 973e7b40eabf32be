/**
 * Read fixtures written straight into a storage root in the layout both registries share
 * (src/storage/layout.ts): an image (OCI manifest, config, one layer) tagged `latest` in
 * `bench/small`, a repository with many tags, many repositories for the catalog, and big blobs for
 * the pull scenarios (hard links to one file written once, so every root shares the bytes).
 *
 * The catalog repositories hold both `_layers` (what Distribution 2.8 looks for) and `_manifests`
 * (what berth looks for), both empty. The S3 rows write the same image and tags through
 * writeImage() and bench/lib/s3.ts.
 */
import { createHash, randomBytes } from 'node:crypto';
import { createWriteStream, mkdirSync, writeFileSync } from 'node:fs';
import { link, mkdir, rm, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { once } from 'node:events';
import type { PatternBlob } from '../../test/helpers/berth-process.js';
import * as layout from '../../src/registry/layout.js';
import type { Digest } from '../../src/registry/digest.js';

const sha256 = (data: Buffer): Digest => `sha256:${createHash('sha256').update(data).digest('hex')}` as Digest;

export const SMALL_REPO = 'bench/small';
export const TAGS_REPO = 'bench/tags';
export const CATALOG_PREFIX = 'bench/catalog';
export const PULL_REPO = 'bench/pull';

/** a small image: what the manifest and blob HEAD/GET rows ask for */
export interface SmallImage {
  manifest: Buffer;
  manifestDigest: Digest;
  mediaType: string;
  config: { data: Buffer; digest: Digest };
  layer: { data: Buffer; digest: Digest };
}

export function smallImage(): SmallImage {
  const layerData = randomBytes(4096);
  const configData = Buffer.from(JSON.stringify({ architecture: 'amd64', os: 'linux', rootfs: { type: 'layers', diff_ids: [sha256(layerData)] }, config: {} }));
  const config = { data: configData, digest: sha256(configData) };
  const layer = { data: layerData, digest: sha256(layerData) };
  const mediaType = 'application/vnd.oci.image.manifest.v1+json';
  const manifest = Buffer.from(
    JSON.stringify(
      {
        schemaVersion: 2,
        mediaType,
        config: { mediaType: 'application/vnd.oci.image.config.v1+json', digest: config.digest, size: configData.length },
        layers: [{ mediaType: 'application/vnd.oci.image.layer.v1.tar', digest: layer.digest, size: layerData.length }],
      },
      null,
      3,
    ),
  );
  return { manifest, manifestDigest: sha256(manifest), mediaType, config, layer };
}

/** a storage path (starting with /docker/registry/v2) under a root directory */
const local = (root: string, path: string) => join(root, path);

/** writes one object of the storage (a path starting with /docker/registry/v2) */
export type Put = (path: string, data: Buffer | string) => Promise<void>;

/** a Put into the filesystem storage under `root` */
export const filePut =
  (root: string): Put =>
  async (path, data) => {
    const file = local(root, path);
    await mkdir(dirname(file), { recursive: true });
    await writeFile(file, data);
  };

/** a repository's links to a manifest (revision) and, when tagged, its tag files */
async function linkManifest(put: Put, repo: string, digest: Digest, tag?: string): Promise<void> {
  await put(layout.manifestRevisionLink(repo, digest), digest);
  if (tag !== undefined) {
    await put(layout.tagCurrentLink(repo, tag), digest);
    await put(layout.tagIndexLink(repo, tag, digest), digest);
  }
}

/** the small image's blobs, linked into SMALL_REPO and TAGS_REPO and tagged `latest` in both */
export async function writeImage(put: Put, image: SmallImage): Promise<void> {
  await put(layout.blobData(image.manifestDigest), image.manifest);
  await put(layout.blobData(image.config.digest), image.config.data);
  await put(layout.blobData(image.layer.digest), image.layer.data);
  for (const repo of [SMALL_REPO, TAGS_REPO]) {
    await put(layout.layerLink(repo, image.config.digest), image.config.digest);
    await put(layout.layerLink(repo, image.layer.digest), image.layer.digest);
    await linkManifest(put, repo, image.manifestDigest, 'latest');
  }
}

export const tagName = (i: number) => `t${String(i).padStart(5, '0')}`;
export const catalogRepo = (i: number) => `${CATALOG_PREFIX}/r${String(i).padStart(5, '0')}`;

/**
 * The small image in SMALL_REPO, `tags` tags of it in TAGS_REPO, `repos` repositories for the
 * catalog. Written with synchronous calls and only what the listings read (a tag is its
 * `current/link`; a catalog repository is its `_layers` and `_manifests` directories): tens of
 * thousands of entries, which the promise API on a loaded 2-core machine takes a minute for.
 */
export async function writeSmallFixtures(root: string, image: SmallImage, counts: { tags: number; repos: number }): Promise<void> {
  await writeImage(filePut(root), image);
  for (let i = 0; i < counts.tags; i++) {
    const current = local(root, layout.tagCurrentLink(TAGS_REPO, tagName(i)));
    mkdirSync(dirname(current), { recursive: true });
    writeFileSync(current, image.manifestDigest);
  }
  for (let i = 0; i < counts.repos; i++) {
    const repo = local(root, layout.repository(catalogRepo(i)));
    mkdirSync(join(repo, '_layers'), { recursive: true });
    mkdirSync(join(repo, '_manifests'));
  }
}

/** writes `blob` to `file` (no fsync: the pull scenarios read it from the page cache anyway) */
export async function writeBlobFile(file: string, blob: PatternBlob): Promise<void> {
  await mkdir(dirname(file), { recursive: true });
  const out = createWriteStream(file);
  for (const chunk of blob.chunks()) {
    if (!out.write(chunk)) await once(out, 'drain');
  }
  out.end();
  await once(out, 'finish');
}

/** makes `source` (a file holding the blob's bytes) the blob `digest` in `root`, linked into `repo` */
export async function linkBlob(root: string, repo: string, digest: string, source: string): Promise<void> {
  const target = local(root, layout.blobData(digest as Digest));
  await mkdir(dirname(target), { recursive: true });
  await rm(target, { force: true });
  await link(source, target);
  await filePut(root)(layout.layerLink(repo, digest as Digest), digest);
}

/** removes a blob and a repository from a root (after a push, so the next push starts clean) */
export async function removePushed(root: string, repo: string, digests: string[]): Promise<void> {
  await rm(local(root, layout.repository(repo)), { recursive: true, force: true });
  for (const digest of digests) await rm(local(root, layout.blobDir(digest as Digest)), { recursive: true, force: true });
}
