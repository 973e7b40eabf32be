/**
 * A manifest's image figures as the web interface shows them (ui/summary.ts computes the same
 * from the content source), read from storage so the index can sort tags by them: the image's
 * size (config + layers; a first-generation manifest: its layers' blobs, looked up; an index: the
 * sum of its children's, unknown when one is missing or unknown) and when it was built (the image
 * config's `created`, else the manifest's `org.opencontainers.image.created` annotation; an index:
 * its newest child's). The index's children are read from storage (they are pushed before it), so
 * the push path and the rebuild record the same figures whatever order they describe in.
 */
import { unlessMissing, type StorageDriver } from '../../storage/driver.js';
import { isDigest } from '../digest.js';
import * as layout from '../layout.js';
import { forEach } from '../pool.js';
import { isObject, parseObject } from './json-object.js';

export interface ImageFigures {
  /** bytes of the image; null when a part is unknown */
  imageSize: number | null;
  /** ISO-8601 as the image says it; null when it says nothing */
  created: string | null;
}

/** image configs above this are not read for their `created` (real ones are a few KiB) */
const CONFIG_LIMIT = 1024 * 1024;
/** child manifests above this are not read (the registry refuses larger manifests anyway) */
const MANIFEST_LIMIT = 4 * 1024 * 1024;
/** levels of indexes inside indexes followed (real ones have one) */
const DEPTH = 3;
/** reads one description keeps in flight */
const CONCURRENCY = 4;

const UNKNOWN: ImageFigures = { imageSize: null, created: null };

/** `config`: the image configuration when the caller read it already (describe.ts), else it is read here when JSON */
export async function imageFigures(driver: StorageDriver, doc: Record<string, unknown> | undefined, config?: Record<string, unknown>, depth = 0): Promise<ImageFigures> {
  if (!doc) return UNKNOWN;
  if (Array.isArray(doc.manifests)) return indexFigures(driver, doc.manifests, depth);
  if (Array.isArray(doc.fsLayers)) return schema1Figures(driver, doc);
  const parts = [...(isObject(doc.config) ? [doc.config] : []), ...(Array.isArray(doc.layers) ? doc.layers : [])];
  const sizes = parts.map((p) => (isObject(p) && typeof p.size === 'number' ? p.size : undefined));
  const image = config ?? (await readJSONConfig(driver, doc.config));
  const annotated = isObject(doc.annotations) ? doc.annotations['org.opencontainers.image.created'] : undefined;
  const created = typeof image?.created === 'string' ? image.created : typeof annotated === 'string' ? annotated : undefined;
  return { imageSize: sum(sizes), created: created || null };
}

async function indexFigures(driver: StorageDriver, entries: unknown[], depth: number): Promise<ImageFigures> {
  if (depth >= DEPTH) return UNKNOWN;
  const children: ImageFigures[] = new Array(entries.length).fill(UNKNOWN);
  await forEach(
    entries.map((entry, i) => [entry, i] as const),
    CONCURRENCY,
    async ([entry, i]) => {
      const digest = isObject(entry) ? entry.digest : undefined;
      if (typeof digest !== 'string' || !isDigest(digest)) return;
      const content = await unlessMissing(driver.getContent(layout.blobData(digest)));
      if (content && content.length <= MANIFEST_LIMIT) children[i] = await imageFigures(driver, parseObject(content), undefined, depth + 1);
    },
  );
  const created = children.map((c) => c.created).filter((c): c is string => c !== null).sort().pop();
  return { imageSize: sum(children.map((c) => c.imageSize ?? undefined)), created: created ?? null };
}

async function schema1Figures(driver: StorageDriver, doc: Record<string, unknown>): Promise<ImageFigures> {
  const layers = [...new Set((doc.fsLayers as unknown[]).map((l) => (isObject(l) ? l.blobSum : undefined)))];
  const sizes: (number | undefined)[] = new Array(layers.length).fill(undefined);
  await forEach(
    layers.map((digest, i) => [digest, i] as const),
    CONCURRENCY,
    async ([digest, i]) => {
      if (typeof digest === 'string' && isDigest(digest)) sizes[i] = (await unlessMissing(driver.stat(layout.blobData(digest))))?.size;
    },
  );
  let created: unknown;
  try {
    const history = Array.isArray(doc.history) && isObject(doc.history[0]) ? doc.history[0].v1Compatibility : undefined;
    created = typeof history === 'string' ? (JSON.parse(history) as { created?: unknown }).created : undefined;
  } catch {
    // a history entry that is not JSON: no build time
  }
  return { imageSize: sum(sizes), created: typeof created === 'string' && created ? created : null };
}

/** the configuration as JSON when its type says JSON and it is small */
async function readJSONConfig(driver: StorageDriver, config: unknown): Promise<Record<string, unknown> | undefined> {
  if (!isObject(config) || typeof config.digest !== 'string' || !isDigest(config.digest)) return undefined;
  if (typeof config.mediaType !== 'string' || !config.mediaType.endsWith('json') || (typeof config.size === 'number' && config.size > CONFIG_LIMIT)) return undefined;
  const content = await unlessMissing(driver.getContent(layout.blobData(config.digest)));
  return content && content.length <= CONFIG_LIMIT ? parseObject(content) : undefined;
}

function sum(sizes: (number | undefined)[]): number | null {
  return sizes.every((s) => s !== undefined) ? sizes.reduce<number>((a, b) => a + b!, 0) : null;
}
