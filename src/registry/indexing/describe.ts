/**
 * A manifest as the index records it: from its bytes, and for an image its configuration's
 * platform and labels (the config blob is read; only image configurations, up to CONFIG_LIMIT),
 * and the image's size and build time (image-figures.ts).
 * The push path (manifest-store.ts) and the rebuild (facts.ts) both describe through here, so
 * the rows they write are the same.
 */
import { unlessMissing, type StorageDriver } from '../../storage/driver.js';
import type { ManifestRecord, Platform } from '../../metadata/records.js';
import { isDigest, type Digest } from '../digest.js';
import * as layout from '../layout.js';
import { referencesOf } from '../manifests/index.js';
import { imageFigures } from './image-figures.js';
import type { ContentCache } from './content-cache.js';
import { isObject, parseObject } from './json-object.js';

/** image configuration types whose `config.Labels`, `os` and `architecture` are read */
const IMAGE_CONFIG_TYPES = new Set(['application/vnd.oci.image.config.v1+json', 'application/vnd.docker.container.image.v1+json']);

/** a configuration larger than this is not read (real ones are a few KiB) */
export const CONFIG_LIMIT = 1024 * 1024;

export interface ManifestFacts {
  repository: string;
  digest: string;
  mediaType: string;
  /** the bytes as served */
  content: Buffer;
  pushed: string;
}

/** `cache`: configurations read during a walk over many repositories (the rebuild) */
export async function describeManifest(driver: StorageDriver, facts: ManifestFacts, cache?: ContentCache): Promise<ManifestRecord> {
  const refs = referencesOf(facts.content);
  const doc = parseObject(facts.content);
  const config = refs.config;
  const image = config && IMAGE_CONFIG_TYPES.has(config.mediaType ?? '') && isDigest(config.digest) && (config.size ?? 0) <= CONFIG_LIMIT ? await readConfig(driver, config.digest, cache) : undefined;
  const platforms = refs.manifests.length > 0 ? indexPlatforms(doc) : image ? platformOf(image) : [];
  const { imageSize, created } = await imageFigures(driver, doc, image);
  return {
    repository: facts.repository,
    digest: facts.digest,
    mediaType: facts.mediaType,
    size: facts.content.length,
    configDigest: config?.digest ?? null,
    platforms,
    labels: stringMap(objectAt(image, 'config', 'Labels')),
    annotations: stringMap(doc?.annotations),
    subject: refs.subject?.digest ?? null,
    pushed: facts.pushed,
    imageSize,
    created,
  };
}

async function readConfig(driver: StorageDriver, digest: Digest, cache?: ContentCache): Promise<Record<string, unknown> | undefined> {
  const read = () => unlessMissing(driver.getContent(layout.blobData(digest)));
  const content = await (cache ? cache.read(digest, read) : read());
  return content && content.length <= CONFIG_LIMIT ? parseObject(content) : undefined;
}

function indexPlatforms(doc: Record<string, unknown> | undefined): Platform[] {
  const entries = Array.isArray(doc?.manifests) ? doc.manifests : [];
  return entries.flatMap((entry) => (isObject(entry) && isObject(entry.platform) ? platformOf(entry.platform) : []));
}

function platformOf(source: Record<string, unknown>): Platform[] {
  const { os, architecture, variant } = source;
  if (typeof os !== 'string' || typeof architecture !== 'string') return [];
  return [{ os, architecture, ...(typeof variant === 'string' && { variant }) }];
}

/** only the string values of an object (labels and annotations are string maps) */
function stringMap(value: unknown): Record<string, string> {
  if (!isObject(value)) return {};
  return Object.fromEntries(Object.entries(value).filter((e): e is [string, string] => typeof e[1] === 'string'));
}

function objectAt(value: Record<string, unknown> | undefined, ...path: string[]): unknown {
  let at: unknown = value;
  for (const key of path) at = isObject(at) ? at[key] : undefined;
  return at;
}
